"""The model repository: which models exist, their versions, labels and default version.

A model's versions are the numbered sub-folders of its ``base_path``, as in TF Serving.
Names and versions from URLs are looked up here, never joined into paths.

Each worker loads its own models. :meth:`ModelRepository.sync` loads new versions and
unloads dropped ones; every change swaps a whole mapping, so a request in flight always sees
a complete, consistent set of versions.
"""

from __future__ import annotations

import bz2
import gzip
import io
import logging
import lzma
import os
import pickletools
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from .errors import ConfigError, FailedPrecondition, ModelNotFound, ModelNotReady
from .predictor import Predictor
from .types import ModelMetadata, ModelSpec

logger = logging.getLogger(__name__)

PredictorLookup = Callable[[str], "type[Predictor]"]


@dataclass(frozen=True)
class LoadedVersion:
    """One version of one model, loaded in this worker."""

    spec: ModelSpec
    version: int
    predictor: Predictor
    metadata: ModelMetadata
    path: str

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class VersionStatus:
    """TF Serving's view of a version: state ``LOADING``, ``AVAILABLE``, ``UNLOADING`` or
    ``END``; a version that failed to load is ``END`` with an ``error``. A replaced version
    is ``UNLOADING`` until it is closed, one sync later, then ``END``."""

    version: int
    state: str
    error: str = ""
    stamp: float = 0.0
    """Modification time of the version folder (for a failed version: the latest time of
    anything under it, see :func:`tree_stamp`) when it was last tried."""


@dataclass
class ServedModel:
    """A configured model and the versions this worker serves of it."""

    spec: ModelSpec
    versions: Mapping[int, LoadedVersion] = field(default_factory=dict)
    statuses: Mapping[int, VersionStatus] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def ready(self) -> bool:
        return bool(self.versions)

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


class ModelRepository:
    """Every configured model of one app, in one worker.

    Readers never lock: each change builds a new :class:`ServedModel` and a new mapping of
    models and swaps it in with one assignment, so a request sees either the old set of
    versions or the new one, never a half-loaded model. :meth:`sync` holds a lock so that
    only one thread loads at a time.
    """

    def __init__(self, lookup: PredictorLookup) -> None:
        self._lookup = lookup
        self._models: Mapping[str, ServedModel] = {}
        self._lock = threading.Lock()
        self._synced = False
        self._retired: list[LoadedVersion] = []
        self._warned: set[str] = set()

    @classmethod
    def load(cls, specs: Iterable[ModelSpec], lookup: PredictorLookup) -> ModelRepository:
        """Load every model; any failure raises :class:`ConfigError` (the server halts)."""
        repository = cls(lookup)
        repository.sync(specs, strict=True)
        return repository

    # --- lookups (request time) ---------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self._models)

    def models(self) -> list[ServedModel]:
        models = self._models
        return [models[name] for name in sorted(models)]

    def model(self, name: str) -> ServedModel:
        served = self._models.get(name)
        if served is None:
            raise ModelNotFound(f"model {name!r} not found")
        return served

    def get(self, name: str, version: str | int | None = None,
            label: str | None = None) -> LoadedVersion:
        """The loaded version serving (*name*, *version* | *label* | default)."""
        served = self.model(name)
        if label is not None:
            return served.label(label)
        if version is not None:
            try:
                return served.version(version)
            except ModelNotFound:
                unloading = self._unloading(name, version)
                if unloading is None:
                    raise
                return unloading
        return served.default()

    def _unloading(self, name: str, version: str | int) -> LoadedVersion | None:
        """A version just replaced but not closed yet (state ``UNLOADING``).

        A request resolves its version once, but an adapter may look the number up again
        (to run the tensor door): a swap in between must not turn it into a 404.
        """
        try:
            number = int(version)
        except (TypeError, ValueError):
            return None
        for loaded in list(self._retired):
            if loaded.name == name and loaded.version == number:
                return loaded
        return None

    @property
    def ready(self) -> bool:
        """True once the configured models are loaded in this worker: false before the
        first :meth:`sync` and while a configured model has no version loaded. Replacing
        a version never makes it false, since the old version serves until the new one
        is loaded."""
        return self._synced and all(served.ready for served in self._models.values())

    # --- loading --------------------------------------------------------------------------------

    def sync(self, specs: Iterable[ModelSpec], strict: bool = False) -> None:
        """Bring the loaded versions in line with *specs* and the folders on disk.

        New versions are loaded (and warmed up) before old ones are dropped; a version
        that fails to load is recorded in the statuses and the versions already served
        stay. Each model's new state is published as soon as it is ready. Versions that
        leave the policy are closed at the next call, so requests still running on them
        can finish. With *strict* any failure raises :class:`ConfigError` instead.
        """
        with self._lock:
            self._close_retired()
            specs = list(specs)
            wanted = {spec.name for spec in specs}
            for name in [name for name in self._models if name not in wanted]:
                logger.info("model %r removed from the configuration", name)
                removed = self._models[name]
                self._models = {k: v for k, v in self._models.items() if k != name}
                self._retired.extend(removed.versions.values())
            for spec in specs:
                served = self._models.get(spec.name)
                if served is not None and _artifact_key(served.spec) != _artifact_key(spec):
                    self._retired.extend(served.versions.values())
                    served = None
                if served is None:
                    served = ServedModel(spec)
                else:
                    served = ServedModel(spec, served.versions, served.statuses)
                self._refresh(served, strict)
            # the configuration's order, which is also the order of names()
            self._models = {spec.name: self._models[spec.name] for spec in specs}
            self._synced = True

    def _publish(self, served: ServedModel) -> None:
        self._models = {**self._models, served.name: served}

    def _refresh(self, served: ServedModel, strict: bool) -> None:
        spec = served.spec
        on_disk = version_folders(spec.base_path)
        empty = f"model {spec.name!r}: no numbered version folder in {spec.base_path!r}"
        if not on_disk:
            if strict:
                raise ConfigError(empty)
            self._warn_once(f"{empty}; the versions loaded stay served")
            self._publish(served)
            return
        self._warned.discard(f"{empty}; the versions loaded stay served")
        # versions dropped by the previous sync have been closed since: UNLOADING -> END
        statuses = {v: (VersionStatus(v, "END", stamp=s.stamp) if s.state == "UNLOADING" else s)
                    for v, s in served.statuses.items() if v in on_disk}
        versions = dict(served.versions)
        pinned = set(spec.labels.values())
        if spec.default_version is not None and spec.default_version.isdigit():
            pinned.add(int(spec.default_version))

        def usable(version: int) -> bool:
            # a version that failed is tried again once something in its folder changes
            status = statuses.get(version)
            return not (status and status.error and status.stamp == tree_stamp(
                version_path(spec.base_path, version)))

        candidates = [v for v in on_disk if v in versions or usable(v)]
        wanted = set(spec.version_policy.choose(candidates)) | (pinned & set(candidates))
        to_load = sorted(wanted - set(versions))
        if to_load:
            for version in to_load:
                statuses[version] = VersionStatus(version, "LOADING", stamp=on_disk[version])
            self._publish(ServedModel(spec, dict(versions), dict(statuses)))
        for version in to_load:
            stamp = tree_stamp(version_path(spec.base_path, version))
            loaded = self._load_version(spec, version, stamp, strict, statuses)
            if loaded is not None:
                versions[version] = loaded
        # a version removed from disk is unloaded; one that failed to load leaves the
        # policy to choose among those that did
        present = [v for v in versions if v in on_disk]
        keep = set(spec.version_policy.choose(present)) | (pinned & set(present))
        dropped = [versions.pop(v) for v in sorted(set(versions) - keep)]
        for v in versions:
            statuses[v] = VersionStatus(v, "AVAILABLE", stamp=on_disk[v])
        for loaded in dropped:
            if loaded.version in on_disk:
                statuses[loaded.version] = VersionStatus(loaded.version, "UNLOADING",
                                                         stamp=on_disk[loaded.version])
        self._retired.extend(dropped)  # before the swap: see _unloading
        self._publish(ServedModel(spec, versions, statuses))
        for loaded in dropped:
            logger.info("model %r: version %d unloaded", spec.name, loaded.version)

    def _load_version(self, spec: ModelSpec, version: int, stamp: float, strict: bool,
                      statuses: dict[int, VersionStatus]) -> LoadedVersion | None:
        from .warmup import warm_up

        path = version_path(spec.base_path, version)
        start = time.perf_counter()
        predictor = None
        try:
            name = spec.predictor or detect_predictor(path, spec)
            predictor = self._lookup(name).from_path(path, **spec.options)
            loaded = LoadedVersion(spec, version, predictor, predictor.metadata(), path)
            warmed = warm_up(loaded)
        except Exception as exc:
            message = f"model {spec.name!r} version {version} failed to load: {_reason(exc)}"
            if predictor is not None:
                _close_predictor(predictor, spec.name, version)
            if strict:
                raise ConfigError(message) from exc
            logger.error("%s", message, exc_info=not isinstance(exc, ConfigError))
            statuses[version] = VersionStatus(version, "END", error=message, stamp=stamp)
            return None
        logger.info("model %r: version %d loaded with %s in %.2fs%s", spec.name, version,
                    type(predictor).__name__, time.perf_counter() - start,
                    f" ({warmed} warm-up requests)" if warmed else "")
        return loaded

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            logger.warning("%s", message)

    def _close_retired(self) -> None:
        retired, self._retired = self._retired, []
        for loaded in retired:
            _close(loaded)

    def close(self) -> None:
        """Release every loaded version (worker exit)."""
        with self._lock:
            models, self._models = self._models, {}
            self._close_retired()
        for served in models.values():
            for loaded in served.versions.values():
                _close(loaded)


def version_path(base_path: str, version: int) -> str:
    """The folder of *version*, named as on disk: TF Serving's exports pad the number
    (``00000123`` is version 123)."""
    plain = os.path.join(base_path, str(version))
    if os.path.isdir(plain):
        return plain
    try:
        names = os.listdir(base_path)
    except OSError:
        return plain
    for name in names:
        if name.isdigit() and name.isascii() and int(name) == version:
            return os.path.join(base_path, name)
    return plain


def version_folders(base_path: str) -> dict[int, float]:
    """Numbered sub-folders of *base_path* -> modification time. Other names are ignored,
    so a version copied under a temporary name and renamed appears at once and whole."""
    found: dict[int, float] = {}
    try:
        entries = list(os.scandir(base_path))
    except OSError:
        return found
    for entry in entries:
        if entry.name.isdigit() and entry.name.isascii() and entry.is_dir():
            try:
                found[int(entry.name)] = entry.stat().st_mtime
            except OSError:
                continue
    return found


def tree_stamp(folder: str) -> float:
    """The latest modification time of *folder* and everything under it (0.0 if gone).

    Writing or adding any file changes it, so a version that failed to load because it
    was still being copied is tried again once the copy goes on.
    """
    latest = 0.0
    for root, dirs, files in os.walk(folder):
        for name in (root, *(os.path.join(root, f) for f in files)):
            try:
                latest = max(latest, os.stat(name).st_mtime)
            except OSError:
                continue
    return latest


MODEL_FILES = {
    "saved_model.pb": "tensorflow",
    "saved_model.pbtxt": "tensorflow",
    "model.bst": "xgboost",
    "model.json": "xgboost",
    "model.ubj": "xgboost",
    "model.joblib": None,
    "model.pkl": None,
}
"""Artifact file name -> plugin; ``None`` means decided by the pickled object's module."""


def detect_predictor(model_dir: str, spec: ModelSpec) -> str:
    """The plugin for the artifact in *model_dir*, from its file names.

    A pickle's first class reference tells scikit-learn from XGBoost without unpickling.
    """
    if "class" in spec.options or "prediction_class" in spec.options:
        return "custom"
    present = [name for name in MODEL_FILES if os.path.isfile(os.path.join(model_dir, name))]
    if not present:
        raise ConfigError(f"no model file in {model_dir!r} (looked for {list(MODEL_FILES)}); "
                          "set 'predictor' or 'class' in the model config")
    if len(present) > 1:
        raise ConfigError(f"several model files in {model_dir!r}: {present}; keep one or set "
                          "'predictor'")
    file = present[0]
    framework = MODEL_FILES[file]
    if framework is None:
        module = pickled_module(os.path.join(model_dir, file))
        framework = "xgboost" if module.split(".")[0] == "xgboost" else "sklearn"
    return framework


def pickled_module(path: str) -> str:
    """The module of the first class referenced in a (possibly compressed) pickle file.

    Only the opcodes are read (the first MiB is plenty), nothing is unpickled.
    """
    with _open_maybe_compressed(path) as stream:
        head = stream.read(1 << 20)
        strings: list[str] = []
        try:
            for opcode, arg, _ in pickletools.genops(head):
                if opcode.name in ("GLOBAL", "INST") and isinstance(arg, str):
                    return arg.split(" ")[0]
                if opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                    return strings[-2]
                if isinstance(arg, str):
                    strings.append(arg)
        except Exception as exc:
            raise ConfigError(f"{path!r} is not a readable pickle: {exc}")
    raise ConfigError(f"{path!r} holds no class reference")


def _open_maybe_compressed(path: str) -> io.BufferedIOBase:
    """The pickle stream of *path*: plain, or compressed as joblib writes it."""
    with open(path, "rb") as raw:
        head = raw.read(6)
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(path, "rb")
    if head.startswith(b"BZh"):
        return bz2.open(path, "rb")
    if head.startswith(b"\xfd7zXZ") or head.startswith(b"\x5d\x00\x00"):
        return lzma.open(path, "rb")
    if head[:1] == b"x":  # joblib's zlib format
        with open(path, "rb") as raw:
            return io.BytesIO(zlib.decompress(raw.read()))
    if head.startswith(b"ZF"):  # joblib < 0.10 zlib format with a length header
        with open(path, "rb") as raw:
            raw.read(2 + 16)
            return io.BytesIO(zlib.decompress(raw.read()))
    return open(path, "rb")


def _artifact_key(spec: ModelSpec) -> tuple[object, ...]:
    return spec.base_path, spec.predictor, sorted(spec.options.items(), key=str)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ConfigError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


def _close(loaded: LoadedVersion) -> None:
    _close_predictor(loaded.predictor, loaded.name, loaded.version)


def _close_predictor(predictor: Predictor, name: str, version: int) -> None:
    try:
        predictor.close()
    except Exception:
        logger.exception("model %r version %d failed to close", name, version)
