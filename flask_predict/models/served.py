"""What a worker serves: each configured model, its versions' states, and each loaded
version, counted while requests use it.

A request holds a version from the moment it is resolved until its answer is written
(:meth:`LoadedVersion.acquire` / :meth:`LoadedVersion.release`, through
:meth:`flask_predict.core.service.ModelService.use`). The repository retires a version it
replaces or drops; the version is closed when its last request finishes, never under one.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..errors import FailedPrecondition, ModelNotFound, ModelNotReady
from ..predictor import Predictor
from ..types import ModelMetadata, ModelSpec

logger = logging.getLogger(__name__)


class LoadedVersion:
    """One version of one model, loaded in this worker."""

    __slots__ = ("spec", "version", "predictor", "metadata", "path", "owned", "calls",
                 "takes_matrix", "_lock", "_uses", "_retired", "_closed")

    def __init__(self, spec: ModelSpec, version: int, predictor: Predictor,
                 metadata: ModelMetadata, path: str, owned: bool = True) -> None:
        self.spec = spec
        self.version = version
        self.predictor = predictor
        self.metadata = metadata
        self.path = path
        self.owned = owned
        """Whether this process loaded the predictor and so closes it; a worker does not
        close what it inherited from the gunicorn master (:mod:`flask_predict.models.sharing`)."""
        self.calls = threading.Lock()
        """Held while the predictor runs (see :meth:`flask_predict.core.service.ModelService.call`)."""
        kind = type(predictor)
        self.takes_matrix = (kind.predict_matrix is not Predictor.predict_matrix
                             or kind.predict is Predictor.predict)
        """Whether instances parsed straight into a matrix may reach the predictor
        (:meth:`~flask_predict.predictor.Predictor.predict_matrix`): false for a class that
        overrides ``predict`` and not ``predict_matrix``, whose matrix door always declines,
        so its requests are parsed once, as JSON values."""
        self._lock = threading.Lock()
        self._uses = 0
        self._retired = False
        self._closed = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def uses(self) -> int:
        """Requests holding this version now."""
        return self._uses

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def instance_outputs(self) -> list[str] | None:
        """The outputs the predictor's instances door answers (``None``: all), for a protocol
        answering as the model's own ``predict`` (MLflow's; ``pyfunc_predict_fn``)."""
        outputs = self.predictor.instance_outputs
        return None if outputs is None else list(outputs)

    def acquire(self) -> bool:
        """Count one more request on this version; ``False`` once it has been retired
        (the caller resolves again and finds its replacement)."""
        with self._lock:
            if self._retired:
                return False
            self._uses += 1
            return True

    def release(self, *exc: object) -> None:
        """A request is done with this version; the last one out of a retired version
        closes it. Also the context manager's exit (*exc* is ignored)."""
        with self._lock:
            self._uses -= 1
            close = self._retired and self._uses == 0 and not self._closed
            if close:
                self._closed = True
        if close:
            self._close()

    def __enter__(self) -> LoadedVersion:
        """An acquired version is a context manager: leaving the block releases it."""
        return self

    __exit__ = release

    def retire(self) -> None:
        """No new request may use this version; close it now if none does, else when the
        last one releases it."""
        with self._lock:
            if self._retired:
                return
            self._retired = True
            close = self._uses == 0
            if close:
                self._closed = True
        if close:
            self._close()

    def _close(self) -> None:
        if self.owned:
            close_predictor(self.predictor, self.name, self.version)

    def __repr__(self) -> str:
        return f"<LoadedVersion {self.name!r} v{self.version} uses={self._uses}>"


def close_predictor(predictor: Predictor, name: str, version: int) -> None:
    """Call ``predictor.close()``; a failure is logged, never raised."""
    try:
        predictor.close()
    except Exception:
        logger.exception("model %r version %d failed to close", name, version)


FAILED_TO_LOAD = "failed to load; the server's log has the cause"
"""What a client reads of a version that failed to load (TF Serving's model status, V2's
repository index, grps's metadata, the status page): the cause, which may hold a file path
or a native backtrace, stays in the log."""


@dataclass(frozen=True)
class VersionStatus:
    """TF Serving's view of a version: state ``LOADING``, ``AVAILABLE``, ``UNLOADING`` or
    ``END``; a version that failed to load is ``END`` with an ``error``. A replaced version
    is ``UNLOADING`` until the next sync, then ``END`` (it is closed as soon as the last
    request using it finishes)."""

    version: int
    state: str
    error: str = ""
    """What clients are told of a failed load (:data:`FAILED_TO_LOAD`), or empty."""
    cause: str = ""
    """Why it failed, in one line, for the log and ``flask-predict check``; never sent."""
    stamp: float = 0.0
    """Modification time of the version folder (for a failed version: the latest time of
    anything under it, see :func:`tree_stamp`) when it was last tried."""


@dataclass
class ServedModel:
    """A configured model and the versions this worker serves of it."""

    spec: ModelSpec
    versions: Mapping[int, LoadedVersion] = field(default_factory=dict)
    statuses: Mapping[int, VersionStatus] = field(default_factory=dict)
    problem: str | None = None
    """Why it has no version folder to load, when its store could not be read at start."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def ready(self) -> bool:
        return bool(self.versions)

    @property
    def loading(self) -> bool:
        """A version of this model is being loaded now."""
        return any(status.state == "LOADING" for status in self.statuses.values())

    def default(self) -> LoadedVersion:
        """The version served when a request names none."""
        versions = self.versions
        if not versions:
            raise ModelNotReady(f"model {self.name!r} has no version loaded")
        if self.spec.default_version is not None:
            wanted = self.spec.labels.get(self.spec.default_version)
            if wanted is None:
                wanted = int(self.spec.default_version)
            if wanted in versions:
                return versions[wanted]
        return versions[max(versions)]

    def version(self, version: int | str) -> LoadedVersion:
        """The loaded *version* (a number, or digits from a URL)."""
        try:
            number = int(version)
        except (TypeError, ValueError):
            raise ModelNotFound(f"model {self.name!r} has no version {version!r}")
        loaded = self.versions.get(number)
        if loaded is None:
            raise ModelNotFound(f"model {self.name!r} has no version {version}")
        return loaded

    def label(self, label: str) -> LoadedVersion:
        """The version a label points to; an unknown label is a client error (400)."""
        number = self.spec.labels.get(label)
        if number is None:
            raise FailedPrecondition(f"Unrecognized servable version label: {label}")
        loaded = self.versions.get(number)
        if loaded is None:
            raise ModelNotFound(f"label {label!r} of model {self.name!r} points to version "
                                f"{number}, which is not loaded")
        return loaded

    def named(self, name: str) -> LoadedVersion:
        """The version a *version name* picks (AI Platform's version names, grps's
        ``model-<version>``): a label first, else a version number."""
        if name in self.spec.labels:
            return self.label(name)
        return self.version(name)


@dataclass(frozen=True)
class Shelf:
    """The models the gunicorn master loaded before it forked this worker, with their
    versions and statuses there (:mod:`flask_predict.models.sharing`): a worker serves these
    predictors from the pages it shares with the master and every sibling, and never loads
    a version that :attr:`shared` names itself."""

    models: Mapping[str, ServedModel]
    shared: Callable[[ModelSpec, int], bool]
    """Whether a version of a model is loaded by the master (the plugin that loads that
    version folder says ``shared`` in its manifest); a worker loads the others itself."""
    generation: int = 0
    """How many times the master changed what it holds before this fork."""
    failed: Callable[[], Mapping[str, Mapping[int, VersionStatus]]] = dict
    """The versions the master failed to load since (read on each call: a failure replaces
    no worker, since nothing served changes)."""

    def held(self, spec: ModelSpec) -> ServedModel | None:
        """The master's state of *spec*'s model at the fork (the same artifact), if any."""
        held = self.models.get(spec.name)
        return held if held is not None and artifact_key(held.spec) == artifact_key(spec) \
            else None

    def statuses(self, spec: ModelSpec, failed: Mapping[int, VersionStatus]
                 ) -> dict[int, VersionStatus]:
        """What the master said of *spec*'s shared versions it does not serve: those it
        failed to load (at the fork, and since: *failed*) and those it had dropped."""
        held = self.held(spec)
        found = {v: (s if s.error else VersionStatus(v, "END", stamp=s.stamp))
                 for v, s in held.statuses.items()
                 if s.error or s.state in ("END", "UNLOADING")} if held else {}
        found.update(failed)
        return found


def artifact_key(spec: ModelSpec) -> tuple[object, ...]:
    """What makes two configurations of a model load the same files the same way."""
    return spec.base_path, spec.predictor, sorted(spec.options.items(), key=str), spec.runner
