"""The internal data model shared by protocols, the service and predictors."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence, TypeVar

import numpy.typing as npt

from .errors import UnreadableModel

Tensor = npt.NDArray[Any]
"""A named input or output value: always a numpy array (object dtype holds bytes)."""


@dataclass(frozen=True)
class TensorSpec:
    """Name, datatype and shape of one input or output.

    ``datatype`` uses the Open Inference Protocol V2 names (``FP32``, ``INT64``, ``BYTES``...),
    the one vocabulary every protocol maps from. ``shape`` uses -1 for a dimension of any size
    and is ``None`` when even the rank is unknown.
    """

    name: str
    datatype: str
    shape: tuple[int, ...] | None
    tensor_name: str = ""
    """The framework's own name for the tensor (TensorFlow's ``x:0``); empty when none."""


@dataclass(frozen=True)
class Signature:
    """One callable function of a model: TF's SignatureDef, a single one elsewhere."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    method_name: str = "tensorflow/serving/predict"
    tabular: bool = False
    """The inputs are the columns of one table, in the model's order, one value per row
    each (:mod:`flask_predict.tabular`): a plain row gives one value per column by
    position, and a lone matrix of rows is split into the columns."""

    def input(self, name: str) -> TensorSpec | None:
        return _named(self.inputs, name)

    def output(self, name: str) -> TensorSpec | None:
        return _named(self.outputs, name)


def _named(specs: tuple[TensorSpec, ...], name: str) -> TensorSpec | None:
    """The spec called *name*: a loop, which costs a third of ``next()`` over a generator
    for the few tensors a model has."""
    for spec in specs:
        if spec.name == name:
            return spec
    return None


DEFAULT_SIGNATURE = "serving_default"


@dataclass(frozen=True)
class ModelMetadata:
    """What a loaded model version accepts and returns."""

    platform: str
    """``sklearn``, ``xgboost``, ``tensorflow``, ``custom`` or a third party's name."""
    signatures: Mapping[str, Signature]
    default_signature: str = DEFAULT_SIGNATURE
    properties: Mapping[str, Any] = field(default_factory=dict)
    """Framework facts worth showing (feature count, class labels, objective...)."""
    instances_door: bool = False
    """The predictor's own door is ``predict(instances)`` (a custom prediction routine):
    protocols hand it the request's JSON instances as they are instead of tensors."""
    request_door: bool = False
    """The predictor takes the whole request body of the Vertex AI and AI Platform predict
    routes and returns the whole answer (:meth:`Predictor.predict_request`, a Vertex AI
    custom prediction routine)."""

    @property
    def signature(self) -> Signature:
        """The signature used when a request names none."""
        return self.signatures[self.default_signature]


@dataclass(frozen=True)
class VersionPolicy:
    """Which numbered versions under a base path are served (TF Serving's policy)."""

    kind: str = "latest"
    """``latest``, ``all`` or ``specific``."""
    num_versions: int = 1
    versions: tuple[int, ...] = ()

    def choose(self, available: list[int]) -> list[int]:
        """The versions to serve among *available*, in ascending order."""
        available = sorted(available)
        if self.kind == "all":
            return available
        if self.kind == "specific":
            return [v for v in available if v in self.versions]
        return available[-self.num_versions:] if self.num_versions > 0 else []


@dataclass(frozen=True)
class ModelSpec:
    """One configured model: where its versions live and how to load them."""

    name: str
    base_path: str
    predictor: str | None = None
    """Plugin name; ``None`` means detected from each version's files."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Passed to ``from_path`` as keyword arguments."""
    version_policy: VersionPolicy = field(default_factory=VersionPolicy)
    labels: Mapping[str, int] = field(default_factory=dict)
    """Version names (TF Serving labels, AI Platform version names) -> version numbers."""
    default_version: str | None = None
    """A label or number; ``None`` means the highest version served."""
    timeout_seconds: float | None = None
    """Longest a predictor call may run (see :mod:`flask_predict.runtime.deadline`); 0: no limit;
    ``None``: ``PREDICT_TIMEOUT_SECONDS``."""
    payload_log: Any = None
    """The model's ``payload_log`` entry as configured (``None``: the server-wide payload
    log; read by :mod:`flask_predict.settings.payload_log`)."""
    batching: Any = None
    """The model's ``batching`` entry as read: its own ``BatchingParameters``, true (the
    server's), false (never batched), or ``None`` (the server's rule); see
    :mod:`flask_predict.settings.batching`."""
    runner: bool = True
    """Under the packaged server, whether versions of a plugin whose manifest says
    ``runner`` load in the runner (the default); false: in each worker, as before
    (:mod:`flask_predict.models.runner_client`)."""

    def serves(self, versions: Iterable[int]) -> set[int]:
        """The versions of *versions* its policy serves, and those its labels or default
        version pin."""
        available = list(versions)
        pinned = set(self.labels.values())
        if self.default_version is not None and self.default_version.isdigit():
            pinned.add(int(self.default_version))
        return set(self.version_policy.choose(available)) | (pinned & set(available))


@dataclass(frozen=True)
class Limits:
    """What one request may ask of a worker; past a limit it is refused with 413 (or 400
    for nesting), in the protocol's own format."""

    max_inflate_ratio: int
    """A gzip/deflate body may inflate to at most this many times its size."""
    max_json_depth: int
    """Arrays and objects nested deeper than this are refused (400)."""
    max_instances: int
    """Instances (rows, the batch dimension) in one request."""
    max_tensor_elements: int
    """Elements in one input tensor."""


@dataclass
class InferenceRequest:
    """A decoded request, the same for every protocol."""

    model: str
    inputs: dict[str, Tensor]
    version: str | None = None
    """A version number as text, or ``None`` for the default version."""
    label: str | None = None
    outputs: list[str] | None = None
    """Requested outputs; ``None`` means every output."""
    signature: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class InferenceResponse:
    """The outputs of one request and the version that produced them."""

    model: str
    version: int
    outputs: dict[str, Tensor]



Example = Mapping[str, Tensor]
"""One ``tf.train.Example`` as plain arrays: feature name -> a 1-D array whose dtype is the
feature's kind (float32: ``float_list``, int64: ``int64_list``, object of bytes: ``bytes_list``)."""


@dataclass
class Classification:
    """What :meth:`Predictor.classify` returns: ``[N, K]`` labels and/or ``[N, K]`` scores."""

    classes: Tensor | None
    """Class labels (bytes or text); ``None`` when the model gives scores only."""
    scores: Tensor | None
    """Scores (float); ``None`` when the model gives labels only."""


P = TypeVar("P")

MLMODEL = "MLmodel"
PYFUNC = "python_function"
PYFUNC_PLUGIN = "mlflow"
"""The plugin (and ``flask-predict`` extra) that loads ``python_function`` models."""


@dataclass(frozen=True)
class MLflowModel:
    """What an ``MLmodel`` file says about the model folder it sits in."""

    folder: str
    flavors: Mapping[str, Mapping[str, Any]]
    signature: Mapping[str, Any] | None = None
    """The ``signature`` entry: ``inputs``, ``outputs`` and ``params``, each a JSON string
    (as MLflow writes them) or ``None``."""
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def pyfunc(self) -> Mapping[str, Any]:
        """The ``python_function`` flavor's entry (empty without one)."""
        return self.flavors.get(PYFUNC) or {}

    @property
    def predict_fn(self) -> str | None:
        """The method ``pyfunc_predict_fn`` chose (``predict_proba``...); ``None``: predict."""
        name = self.pyfunc.get("predict_fn")
        return None if name in (None, "predict") else str(name)

    @property
    def loader_flavor(self) -> str | None:
        """The flavor whose module ``mlflow.pyfunc`` loads the model with (``mlflow.sklearn``
        -> ``sklearn``)."""
        module = str(self.pyfunc.get("loader_module") or "")
        return module.split(".", 1)[1] if module.startswith("mlflow.") else None

    def outputs(self, outputs: Sequence[str] | None) -> Sequence[str] | None:
        """The outputs a native predictor computes: the model setting *outputs*, else the
        method ``pyfunc_predict_fn`` chose, else the plugin's own."""
        return outputs or ((self.predict_fn,) if self.predict_fn else None)

    def answering(self, predictor: P) -> P:
        """*predictor*, whose instances door answers the method ``pyfunc_predict_fn`` chose
        (as ``mlflow.pyfunc`` does) where the model was saved with one."""
        if self.predict_fn:  # a Predictor's attribute, set on this one only
            setattr(predictor, "instance_outputs", (self.predict_fn,))
        return predictor

    def flavor(self, name: str) -> Mapping[str, Any]:
        """The entry of flavor *name*."""
        return self.flavors.get(name) or {}

    def file(self, relative: Any) -> str:
        """The path of *relative* (a flavor's ``data``...) inside the model folder.

        :raises UnreadableModel: the name is missing or leaves the folder.
        """
        if not isinstance(relative, str) or not relative:
            raise UnreadableModel(f"{MLMODEL} names no model file")
        folder = os.path.realpath(self.folder)
        path = os.path.realpath(os.path.join(folder, relative))
        if os.path.commonpath([folder, path]) != folder:
            raise UnreadableModel(f"{MLMODEL} names {relative!r}, outside the model folder")
        return path

