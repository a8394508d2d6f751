"""SageMaker's multi-model contract in its own words, without Flask: the body of ``POST
/models``, the pages of ``GET /models`` and a model's description (``modelName``,
``modelUrl``); the routes are :mod:`.views`', the models the lazy tier's
(:mod:`flask_predict.models.lazy`).

https://docs.aws.amazon.com/sagemaker/latest/dg/mms-container-apis.html
"""

from __future__ import annotations

from typing import Any, Mapping

from ...errors import InvalidInput

PAGE = 100
"""Models per page of ``GET /models``."""


def read_load(body: Any) -> tuple[str, str]:
    """``model_name`` and ``url`` of a ``POST /models`` body."""
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object with 'model_name' and 'url'")
    name, url = body.get("model_name"), body.get("url")
    if not isinstance(name, str) or not name:
        raise InvalidInput("'model_name' must be a non-empty string")
    if not isinstance(url, str) or not url:
        raise InvalidInput("'url' must be the path of the model's folder")
    return name, url


def described(name: str, url: str) -> dict[str, str]:
    return {"modelName": name, "modelUrl": url}


def page(models: Mapping[str, str], token: str | None) -> dict[str, Any]:
    """One page of ``GET /models`` from *token* (an offset, as the previous page said);
    ``nextPageToken`` where more follow."""
    start = 0
    if token:
        if not token.isdigit():
            raise InvalidInput(f"next_page_token {token!r} is not one this server gave")
        start = int(token)
    names = sorted(models)[start:start + PAGE]
    answer: dict[str, Any] = {"models": [described(name, models[name]) for name in names]}
    if start + PAGE < len(models):
        answer["nextPageToken"] = str(start + PAGE)
    return answer
