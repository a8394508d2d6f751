"""What SageMaker asks of a container beside MLflow's routes, without Flask: the
``X-Amzn-SageMaker-Target-Model`` names a model goes by, the ``Accept`` types answered, and
the answer of ``GET /execution-parameters`` (batch transform).

https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html
https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-batch-code.html
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any

from .settings import MlflowSettings
from .wire import CSV, JSON

MAX_PAYLOAD_MB = 100
"""SageMaker's own ceiling on ``MaxPayloadInMB``."""

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")


def target_names(header: str) -> list[str]:
    """The model names a ``X-Amzn-SageMaker-Target-Model`` value may mean: as sent, then
    without its archive suffix (``iris.tar.gz`` is model ``iris``) and its folders."""
    names = [header]
    stem = header.rsplit("/", 1)[-1]
    for suffix in ARCHIVE_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[:-len(suffix)]
    if stem != header:
        names.append(stem)
    return names


def wants_csv(accept: str | None) -> bool:
    """Whether an ``Accept`` header asks for CSV rather than JSON: ``text/csv`` is named and
    no JSON type comes before it. Any other type is answered JSON, as MLflow answers every
    request."""
    if not accept:
        return False
    for item in accept.split(","):
        mime = item.split(";")[0].strip().lower()
        if mime == CSV:
            return True
        if mime in (JSON, "*/*", "application/*"):
            return False
    return False


def execution_parameters(section: MlflowSettings, max_request_bytes: int) -> dict[str, Any]:
    """``GET /execution-parameters``: how many requests a batch transform job may send at
    once, how it splits its records, and its largest body (the server's own limit, within
    SageMaker's)."""
    megabytes = max(1, min(MAX_PAYLOAD_MB, max_request_bytes // 2**20))
    return {"MaxConcurrentTransforms": section.max_concurrent_transforms,
            "BatchStrategy": section.batch_strategy, "MaxPayloadInMB": megabytes}


def server_version() -> str:
    """The installed flask-predict's version, what ``GET /version`` answers."""
    try:
        return package_version("flask-predict")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
