"""MLflow's scoring protocol, as ``mlflow models serve`` speaks it and as SageMaker's
bring-your-own container contract asks it: ``GET /ping``, ``GET /health``, ``GET /version``,
``POST /invocations`` (JSON ``dataframe_split``, ``dataframe_records``, ``instances`` or
``inputs`` with ``params``; CSV), and SageMaker's ``GET /execution-parameters``.

https://mlflow.org/docs/latest/deployment/deploy-model-locally/

:mod:`.wire` decodes and encodes bodies, :mod:`.sagemaker` holds SageMaker's headers and
batch parameters, :mod:`.views` the blueprint.
"""

from __future__ import annotations

from ...request.descriptor import Protocol
from .settings import SECTION

PROTOCOL = Protocol(
    name="mlflow",
    title="MLflow",
    blueprint=f"{__name__}.views:bp",
    verbs={"invocations": "predict", "ping": "health", "version": "metadata",
           "batch_parameters": "metadata", "models_add": "admin", "models_list": "metadata",
           "model_describe": "metadata", "model_remove": "admin", "model_invoke": "predict"},
    openapi=f"{__name__}.openapi:PART",
    settings=SECTION,
)
