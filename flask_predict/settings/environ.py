"""The standalone server's settings, read from its environment: one reading for the app every
worker builds (``flask_predict.wsgi``) and for the checks the gunicorn master makes first.

In order, later over earlier: the standalone defaults (:data:`~.config.STANDALONE_DEFAULTS`),
TF Serving's and Vertex AI's container variables (:func:`config_from_environ`), then every
``FLASK_*`` variable as Flask's ``Config.from_prefixed_env`` reads it (``FLASK_PREDICT_MODELS``
becomes ``PREDICT_MODELS``, a JSON value is parsed, ``__`` reaches into a nested mapping).
No Flask here.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from ..request.protocol_table import sections
from .config import STANDALONE_DEFAULTS
from .vertex_storage import VARIABLE as STORAGE_VARIABLE
from .vertex_storage import storage_base_path

MODEL_SOURCES = ("FLASK_PREDICT_MODELS", "FLASK_PREDICT_MODEL_CONFIG_FILE", "MODEL_CONFIG_FILE")
"""Settings that name the models themselves: with one of them, ``AIP_STORAGE_URI`` is unused."""

FLASK_PREFIX = "FLASK_"


def server_config(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The config keys of the standalone server in *environ* (default: this process's)."""
    environ = os.environ if environ is None else environ
    config: dict[str, Any] = {**STANDALONE_DEFAULTS, **config_from_environ(environ)}
    for variable in sorted(environ):
        if variable.startswith(FLASK_PREFIX):
            _set_prefixed(config, variable.removeprefix(FLASK_PREFIX), environ[variable])
    return config


def config_from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    """Config keys from TF Serving's and Vertex AI's container environment.

    As in TF Serving's container, the model lives in ``$MODEL_BASE_PATH/$MODEL_NAME``
    (``MODEL_BASE_PATH`` defaults to ``/models``). ``MODEL_CONFIG_FILE`` names a config file.
    A protocol's section may read more variables (Vertex AI's ``AIP_PREDICT_ROUTE`` and
    ``AIP_HEALTH_ROUTE`` add its routes: ``Section.environ``), and ``AIP_STORAGE_URI`` (a
    local folder or a ``gs://``/``s3://`` URI; see :mod:`.vertex_storage`) is the model
    ``$MODEL_NAME`` (default ``model``) unless a model config is set.
    """
    config: dict[str, Any] = {}
    if environ.get("MODEL_NAME"):
        name = environ["MODEL_NAME"]
        base = environ.get("MODEL_BASE_PATH", "/models")
        config["PREDICT_MODELS"] = {name: {"base_path": os.path.join(base, name)}}
    if environ.get("MODEL_CONFIG_FILE"):
        config["PREDICT_MODEL_CONFIG_FILE"] = environ["MODEL_CONFIG_FILE"]
    for section in filter(None, sections().values()):
        for variable, key in section.environ.items():
            if environ.get(variable):
                config[key] = environ[variable]
    storage = environ.get(STORAGE_VARIABLE)
    if storage and not any(environ.get(name) for name in MODEL_SOURCES):
        name = environ.get("MODEL_NAME") or "model"
        config["PREDICT_MODELS"] = {name: {"base_path": storage_base_path(storage)}}
    return config


def _set_prefixed(config: dict[str, Any], key: str, text: str) -> None:
    """One ``FLASK_*`` variable into *config*, as Flask's ``from_prefixed_env`` sets it."""
    value: Any = text
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        pass  # not JSON: the string itself
    *parents, last = key.split("__")
    place = config
    for part in parents:
        place = place.setdefault(part, {})
    place[last] = value
