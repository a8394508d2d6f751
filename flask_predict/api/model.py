"""A model folder loaded in this process exactly as a server worker loads it, and asked
without a server: the Python API behind ``flask-predict predict``, the batch job and the
Spark, Ray and Dask helpers.

Loading goes through the core's own pieces (settings, repository, plugins, warm-up,
service), so a :class:`Model` answers what a server's routes answer for the same model.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import numpy as np

from .. import codecs
from ..runtime import resources as runtime
from ..core.assembly import assemble
from ..core.service import ModelService
from ..errors import ConfigError, InvalidInput, PredictorFailed
from ..models.mlmodel import is_mlflow_folder
from ..models.served import LoadedVersion
from ..models.warmup import warm_up
from ..predictor import Predictor
from ..settings.app import read_settings
from ..settings.vertex_storage import storage_base_path
from ..storage.uri import is_remote, parse_uri
from ..types import InferenceRequest, ModelMetadata, Signature, Tensor
from .inputs import frame_rows, is_frame, named_inputs


class Model:
    """One version of a model, loaded as the server loads it: plugin detection, the model's
    options, its named and typed columns, Google's prediction routines, warm-up.

    Create one with :meth:`load`; close it (or use it as a context manager) to release the
    framework's resources. Not for several threads at once: calls take turns, as they do in
    a server worker.

    .. versionadded:: 0.2
    """

    def __init__(self, service: ModelService, name: str) -> None:
        self._service = service
        self.name = name
        """The model's name in messages (its folder's, unless given)."""
        self._loaded: LoadedVersion = service.acquire(name)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, predictor: str | None = None,
             options: Mapping[str, Any] | None = None, version: int | None = None,
             name: str | None = None, warm: bool = True) -> Model:
        """Load the model at *path*: a base path (numbered version folders beneath; the
        highest, or *version*, is loaded) or a folder of artifacts (loaded as version 1).

        :param predictor: the plugin by name (``sklearn``, ``xgboost``, ``tensorflow``,
            ``custom``, a third party's); default: detected from the files, as a server does.
        :param options: the model's settings, as in the model config's ``options``
            (``class``, ``outputs``, ``signature_name`` ...).
        :param warm: replay the version's warm-up requests before returning (a process that
            forks workers passes false and calls :meth:`after_fork` in each).
        :raises ConfigError: the folder is missing, no plugin takes it, an option is unknown,
            the artifact does not load or a warm-up request fails (the message says which, as
            the server's start-up line does).
        """
        base_path = model_base_path(path)
        name = name or model_name(str(path))
        entry: dict[str, Any] = {"base_path": base_path, "options": dict(options or {})}
        if predictor:
            entry["predictor"] = predictor
        if version is not None:
            entry["version_policy"] = {"specific": {"versions": [version]}}
        settings = read_settings({"PREDICT_MODELS": {name: entry}, "PREDICT_POLL_SECONDS": 0,
                                  "PREDICT_METRICS": False})
        return cls(assemble(settings, warm=warm).service, name)

    # --- what it is ------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """The version number loaded."""
        return self._loaded.version

    @property
    def path(self) -> str:
        """The version folder loaded."""
        return self._loaded.path

    @property
    def metadata(self) -> ModelMetadata:
        """Inputs, outputs and platform, as the protocols' metadata routes describe them."""
        return self._loaded.metadata

    def signature(self, name: str | None = None) -> Signature:
        """The signature *name* (default: the model's default one)."""
        return self._loaded.predictor.signature(name)

    @property
    def default_outputs(self) -> list[str]:
        """The outputs an engine's scored table has when none are named: every output, or
        for an MLflow model those its own ``predict`` answers (``spark_udf``'s;
        ``pyfunc_predict_fn``'s method where it was saved with one)."""
        chosen = self._loaded.instance_outputs if is_mlflow_folder(self.path) else None
        return chosen if chosen else [spec.name for spec in self.signature().outputs]

    @property
    def takes_instances(self) -> bool:
        """The model's own door is JSON instances (a custom prediction routine)."""
        return self.metadata.instances_door or self.metadata.request_door

    # --- predicting ------------------------------------------------------------------------

    def predict(self, data: Any, outputs: Sequence[str] | None = None,
                signature: str | None = None) -> dict[str, Tensor]:
        """Named outputs for *data*, as the V2 and TF Serving protocols answer them.

        *data* is a pandas DataFrame (its columns by name, for a model fitted on named
        columns; otherwise its rows), a numpy array of rows, or a mapping of input names to
        arrays. *outputs* names the outputs wanted (default: all of them).

        :raises InvalidInput: the data does not fit the model (a missing or unknown column,
            text where numbers belong, an unknown category, an unknown output); the message
            is the one a server's 400 carries.
        :raises PredictorFailed: the model failed (a server's 500); the cause is chained.
        :raises TypeError: *data* is not one of the kinds above.
        """
        if self.metadata.request_door:
            rows = frame_rows(data) if is_frame(data) else _rows(data)
            return {"predictions": _as_array(self.predict_instances(rows))}
        inputs = named_inputs(data, self.signature(signature), self.takes_instances)
        request = InferenceRequest(self.name, inputs, outputs=list(outputs) if outputs
                                   is not None else None, signature=signature)
        response = self._service.predict(self._loaded, request)
        return response.outputs

    def predict_instances(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        """Predictions for JSON *instances*, as AI Platform's and Vertex AI's predict routes
        answer them (their ``predictions`` list); *kwargs* are the request's other keys
        (``signature_name``, a routine's own, Vertex AI's ``parameters``).

        A pandas DataFrame is taken too: its rows, one list of values each.

        :raises InvalidInput: as :meth:`predict`; also for an empty list.
        :raises PredictorFailed: the model failed, or a Vertex AI routine answered without a
            ``predictions`` list.
        """
        if is_frame(instances):
            instances = frame_rows(instances)
        if not isinstance(instances, list) or not instances:
            raise InvalidInput('"instances" must be a non-empty list')
        if self.metadata.request_door:
            answer = self.predict_request({"instances": instances, **kwargs})
            predictions = answer.get("predictions") if isinstance(answer, dict) else None
            if not isinstance(predictions, list):
                raise PredictorFailed(f"model {self.name!r} answered without a "
                                      '"predictions" list')
            return predictions
        return self._service.predict_instances(self._loaded, instances, kwargs)

    def explain_instances(self, instances: list[Any], **kwargs: Any
                          ) -> tuple[list[Any], list[dict[str, Any]]]:
        """Predictions and Google's ``Explanation`` objects for JSON *instances*, one each,
        as Vertex AI's explain route answers them (its ``predictions`` and
        ``explanations``); *kwargs* as for :meth:`predict_instances`.

        :raises InvalidInput: as :meth:`predict_instances`.
        :raises FailedPrecondition: the model does not explain (the explanations page says
            which do).
        :raises PredictorFailed: the model failed.
        """
        if is_frame(instances):
            instances = frame_rows(instances)
        if not isinstance(instances, list) or not instances:
            raise InvalidInput('"instances" must be a non-empty list')
        predictions, explanation = self._service.explain_instances(
            self._loaded, instances, kwargs, with_predictions=True)
        return predictions, codecs.explanation_rows(explanation)

    def predict_matrix(self, matrix: Tensor) -> list[Any] | None:
        """Predictions for instances that are rows of numbers, already one float64 matrix
        (the door the server takes for such a body); ``None`` when the model needs them as
        JSON values (ask :meth:`predict_instances` then)."""
        return self._service.predict_matrix(self._loaded, matrix)

    def predict_request(self, body: Mapping[str, Any]) -> Any:
        """The answer of AI Platform's predict route to *body* (``{"instances": [...],
        ...}``): ``{"predictions": [...]}``, or a Vertex AI routine's own whole answer."""
        if self.metadata.request_door:
            return self._service.predict_request(self._loaded, dict(body))
        instances = body.get("instances")
        if not isinstance(instances, list):
            raise InvalidInput('Invalid JSON request: "instances" must be a list')
        kwargs = {key: value for key, value in body.items() if key != "instances"}
        return {"predictions": self.predict_instances(instances, **kwargs)}

    # --- processes -------------------------------------------------------------------------

    def after_fork(self, threads: int = 1, warm: bool = True) -> None:
        """Make this copy ready in a process forked after :meth:`load` (a pool worker): size
        its native thread pools to *threads*, let the predictor set what is per process, and
        replay the warm-up requests (*warm*), as a server worker does with the models it
        inherits from the gunicorn master."""
        runtime.limit_threads(threads)
        predictor: Predictor = self._loaded.predictor
        predictor.after_fork()
        if warm:
            warm_up(predictor, self.path)

    def close(self) -> None:
        """Release the model's framework resources."""
        self._loaded.release()
        self._service.repository.close()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Model {self.name!r} version {self.version} ({self.metadata.platform})>"


def model_base_path(path: str | os.PathLike[str]) -> str:
    """The base path serving the folder *path*: itself when it holds numbered version
    folders, else a base path whose version 1 is *path*. A ``gs://`` or ``s3://`` path is
    read as a server reads it: mirrored into the machine's storage cache when loaded.

    :raises ConfigError: *path* is not a folder (or, remote, not ``SCHEME://BUCKET/PATH``).
    """
    text = os.fspath(path)
    if is_remote(text):
        parse_uri(text)
        return text
    local = os.path.abspath(text[len("file://"):] if text.startswith("file://") else text)
    if not os.path.isdir(local):
        raise ConfigError(f"{text!r} is not a directory")
    return storage_base_path(local)


def model_name(path: str) -> str:
    """A model's name from its folder: the folder's, or a version folder's parent's."""
    absolute = os.path.abspath(path)
    name = os.path.basename(absolute)
    if name.isdigit():
        name = os.path.basename(os.path.dirname(absolute))
    return name.replace(":", "_").replace("/", "_") or "model"


def _rows(data: Any) -> list[Any]:
    if isinstance(data, np.ndarray):
        rows: list[Any] = data.tolist()
        return rows
    raise TypeError(f"cannot predict on {type(data).__name__}: give a DataFrame or a numpy "
                    "array, or call predict_instances")


def _as_array(predictions: list[Any]) -> Tensor:
    return codecs.predictions_to_tensor(predictions)
