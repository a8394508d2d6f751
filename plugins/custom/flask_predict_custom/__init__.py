"""AI Platform custom prediction routines: a user's class with ``from_path`` and ``predict``.

The model config names the class as ``module.Class`` or ``module:Class`` (AI Platform's
``predictionClass``). The module is imported from the version folder itself, as AI Platform
packaged it, or else from the installed packages. The class needs no base class; when it
has ``metadata``, ``predict_tensors`` or ``close`` methods they are used too, and a
``signature`` (a plain dict, or a method returning one) declares what it takes and returns:

    signature = {"inputs": [{"name": "features", "datatype": "FP32", "shape": [-1, 4]}],
                 "outputs": [{"name": "species", "datatype": "BYTES", "shape": [-1]}]}

A module shipped in a version folder is imported as a submodule of a package made for that
one version (:func:`version_package`), so two versions of the same model, or a model and
another library, can ship modules of the same name without replacing each other; nothing is
added to ``sys.path``, and the user's modules import their siblings relatively
(``from . import features``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import itertools
import os
import sys
import threading
import types
from typing import Any, Mapping, Sequence

from flask_predict import ModelMetadata, Predictor
from flask_predict.codecs import V2_TO_NUMPY
from flask_predict.types import DEFAULT_SIGNATURE, Signature, Tensor, TensorSpec

PACKAGE_PREFIX = "flask_predict_custom.versions"
"""Version folders are imported as ``<prefix>.v<n>_<hash>`` packages."""

_counter = itertools.count(1)
_import_lock = threading.Lock()


class CustomPredictor(Predictor):
    """Adapts a user's prediction class to the predictor contract."""

    def __init__(self, user: Any) -> None:
        self.user = user
        self._accepts = _accepted_keywords(user.predict)
        signature = getattr(user, "signature", None)
        metadata: Any
        declared = callable(getattr(user, "metadata", None)) or signature is not None
        if callable(getattr(user, "metadata", None)):
            metadata = user.metadata()
        elif signature is not None:
            metadata = declared_metadata(signature() if callable(signature) else signature)
        else:
            metadata = super().metadata()
        if not isinstance(metadata, ModelMetadata):
            raise TypeError("metadata() must return a flask_predict.ModelMetadata")
        # with neither a declared signature nor a tensor door of its own, protocols hand
        # the class the request's JSON instances as they are
        own_tensors = callable(getattr(user, "predict_tensors", None))
        self._metadata = dataclasses.replace(
            metadata, instances_door=not declared and not own_tensors)

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> CustomPredictor:
        name = options.pop("class", None) or options.pop("prediction_class", None)
        if not name:
            raise TypeError("a custom predictor needs 'class': 'module.Class' in its config")
        if options:
            raise TypeError(f"unknown custom predictor option(s) {sorted(options)}")
        user_class = load_user_class(str(name), model_dir)
        return cls(user_class.from_path(model_dir))

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        if self._accepts is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in self._accepts}
        result: list[Any] = self.user.predict(instances, **kwargs)
        return result

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        own = getattr(self.user, "predict_tensors", None)
        if callable(own):
            result: dict[str, Tensor] = own(inputs, outputs, signature)
            return result
        return super().predict_tensors(inputs, outputs, signature)

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def close(self) -> None:
        close = getattr(self.user, "close", None)
        try:
            if callable(close):
                close()
        finally:
            _forget_version_modules(type(self.user).__module__)


def declared_metadata(declared: Any) -> ModelMetadata:
    """The metadata a class's ``signature`` dict declares (``inputs`` and ``outputs``, each a
    list of ``{"name", "datatype", "shape"}`` with V2 datatypes and -1 for any size).
    Raises ``TypeError`` naming the mistake, so a wrong declaration stops the server at boot."""
    if not isinstance(declared, Mapping) or set(declared) - {"inputs", "outputs"} or not (
            declared.get("inputs") and declared.get("outputs")):
        raise TypeError("signature must be a dict with 'inputs' and 'outputs' lists")
    return ModelMetadata(platform="custom", signatures={DEFAULT_SIGNATURE: Signature(
        inputs=_specs(declared["inputs"], "inputs"),
        outputs=_specs(declared["outputs"], "outputs"))})


def _specs(items: Any, where: str) -> tuple[TensorSpec, ...]:
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"signature {where!r} must be a list")
    specs = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not \
                item["name"]:
            raise TypeError(f"signature {where!r}: each tensor needs a 'name'")
        datatype = item.get("datatype", "BYTES")
        if datatype not in V2_TO_NUMPY:
            raise TypeError(f"signature {where!r}: tensor {item['name']!r} has unknown "
                            f"datatype {datatype!r}; use one of {sorted(V2_TO_NUMPY)}")
        shape = item.get("shape")
        if shape is not None and (not isinstance(shape, (list, tuple)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in shape)):
            raise TypeError(f"signature {where!r}: tensor {item['name']!r} needs a 'shape' of "
                            "sizes (-1 for any)")
        specs.append(TensorSpec(item["name"], datatype,
                                tuple(shape) if shape is not None else None))
    if len({spec.name for spec in specs}) != len(specs):
        raise TypeError(f"signature {where!r}: tensor names must be unique")
    return tuple(specs)


def load_user_class(name: str, model_dir: str) -> Any:
    """Import the class *name* (``module.Class`` or ``module:Class``), preferring a module
    shipped in *model_dir*, and check it has ``from_path`` and ``predict``."""
    module_name, sep, class_name = name.partition(":")
    if not sep:
        module_name, _, class_name = name.rpartition(".")
    if not module_name or not class_name:
        raise TypeError(f"class {name!r} must be written 'module.Class' or 'module:Class'")
    module = _import_from(module_name, model_dir)
    user_class = getattr(module, class_name, None)
    if not inspect.isclass(user_class):
        raise TypeError(f"{name} cannot be found: module {module_name!r} has no class "
                        f"{class_name!r}")
    for method in ("from_path", "predict"):
        if not callable(getattr(user_class, method, None)):
            raise TypeError(f"{name} has no {method}() method")
    return user_class


def _import_from(module_name: str, model_dir: str) -> Any:
    top = module_name.split(".")[0]
    shipped = (os.path.isfile(os.path.join(model_dir, top + ".py"))
               or os.path.isdir(os.path.join(model_dir, top)))
    if not shipped:
        return importlib.import_module(module_name)
    package = version_package(model_dir)
    return importlib.import_module(f"{package}.{module_name}")


def version_package(model_dir: str) -> str:
    """A new package, unique to one load of *model_dir*, whose path is that folder: its
    modules import as ``<package>.<module>`` and never replace anyone else's."""
    digest = hashlib.sha1(os.path.abspath(model_dir).encode()).hexdigest()[:10]
    with _import_lock:
        name = f"{PACKAGE_PREFIX}.v{next(_counter)}_{digest}"
        package = types.ModuleType(name, f"modules shipped in {model_dir}")
        package.__path__ = [model_dir]
        package.__spec__ = importlib.util.spec_from_loader(name, loader=None, is_package=True)
        if package.__spec__ is not None:
            package.__spec__.submodule_search_locations = [model_dir]
        _ensure_parent()
        sys.modules[name] = package
    return name


def _forget_version_modules(module: str) -> None:
    """Drop the modules of a closed version's own package (none for installed classes)."""
    if not module.startswith(PACKAGE_PREFIX + "."):
        return
    package = ".".join(module.split(".")[:3])
    for key in [k for k in sys.modules if k == package or k.startswith(package + ".")]:
        del sys.modules[key]


def _ensure_parent() -> None:
    if PACKAGE_PREFIX not in sys.modules:
        parent = types.ModuleType(PACKAGE_PREFIX, "one package per loaded custom version")
        parent.__path__ = []
        sys.modules[PACKAGE_PREFIX] = parent


def _accepted_keywords(method: Any) -> set[str] | None:
    """The keyword names *method* takes, or ``None`` when it takes ``**kwargs``."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
