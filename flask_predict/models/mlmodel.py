"""MLflow model folders, read without ``mlflow``: the ``MLmodel`` file (YAML), the flavor a
plugin loads natively, and the packages the model was saved with.

``mlflow.<flavor>.save_model`` writes a folder holding ``MLmodel``: one entry per *flavor*
(``sklearn``, ``xgboost``... and ``python_function``, which names the module
``mlflow.pyfunc`` loads it with), the model's signature, and its requirements
(``requirements.txt``, ``conda.yaml``). A plugin's manifest lists the flavors it loads from
their own files (:attr:`~flask_predict.models.plugins.Manifest.mlflow_flavors`); any other
model loads as ``python_function`` through ``mlflow.pyfunc`` (the ``mlflow`` plugin).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Mapping, Sequence, TypeVar

from ..errors import ConfigError, UnreadableModel, one_line

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


def load_serialized(path: str, conf: Mapping[str, Any]) -> Any:
    """The object a flavor serialized with ``skops``, ``cloudpickle`` or ``pickle`` (its
    ``serialization_format``): scikit-learn's, LightGBM's scikit-learn models. A skops file
    loads trusting only the types MLflow recorded when it saved it (``skops_trusted_types``),
    beside skops' own defaults."""
    from .artifacts import UNPICKLING_ERRORS, unreadable_pickle

    serialization = conf.get("serialization_format") or "pickle"
    if serialization == "skops":
        import skops.io
        from skops.io.exceptions import UntrustedTypesFoundException

        try:
            return skops.io.load(path, trusted=conf.get("skops_trusted_types") or None)
        except UntrustedTypesFoundException as exc:
            raise UnreadableModel(f"the skops file holds types its {MLMODEL} does not trust: "
                                  f"{one_line(str(exc))}") from None
        except (OSError, ValueError, KeyError) as exc:  # zipfile.BadZipFile is an OSError
            raise UnreadableModel(f"cannot read the skops file: {type(exc).__name__}: "
                                  f"{one_line(str(exc))}") from None
    if serialization not in ("pickle", "cloudpickle"):
        raise UnreadableModel(f"unknown serialization_format {serialization!r}")
    import pickle

    try:
        with open(path, "rb") as file:
            if serialization == "cloudpickle":
                import cloudpickle

                return cloudpickle.load(file)
            return pickle.load(file)
    except UNPICKLING_ERRORS as exc:
        raise unreadable_pickle(path, exc) from None


def is_mlflow_folder(folder: str) -> bool:
    """Whether *folder* holds an ``MLmodel`` file."""
    return os.path.isfile(os.path.join(folder, MLMODEL))


def read_mlmodel(folder: str) -> MLflowModel:
    """The ``MLmodel`` file of *folder*, parsed (safe YAML: plain data only).

    :raises UnreadableModel: the file is not YAML, or names no flavor.
    """
    import yaml

    path = os.path.join(folder, MLMODEL)
    try:
        with open(path, encoding="utf-8") as file:
            data = yaml.safe_load(file)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UnreadableModel(f"{MLMODEL} is not readable YAML: {one_line(str(exc))}")
    flavors = data.get("flavors") if isinstance(data, dict) else None
    if not isinstance(flavors, dict) or not flavors:
        raise UnreadableModel(f"{MLMODEL} names no flavor")
    signature = data.get("signature")
    return MLflowModel(folder, {str(k): v if isinstance(v, dict) else {}
                                for k, v in flavors.items()},
                       signature if isinstance(signature, dict) else None, data)


def choose_flavor(model: MLflowModel, served: Mapping[str, str]) -> tuple[str, str] | None:
    """``(flavor, plugin)``: the native flavor an installed plugin loads (*served*: flavor ->
    plugin), the one ``python_function`` loads first; ``None`` when there is none."""
    order = [model.loader_flavor, *model.flavors]
    for flavor in order:
        if flavor is not None and flavor != PYFUNC and flavor in model.flavors \
                and flavor in served:
            return flavor, served[flavor]
    return None


def mlflow_plugin(model: MLflowModel, served: Mapping[str, str], installed: set[str]) -> str:
    """The plugin that loads *model*: a native flavor's, else ``mlflow`` (``python_function``).

    :raises ConfigError: neither is installed (the message names the extra to install).
    """
    chosen = choose_flavor(model, served)
    if chosen is not None:
        return chosen[1]
    if PYFUNC_PLUGIN in installed and PYFUNC in model.flavors:
        return PYFUNC_PLUGIN
    flavors = sorted(f for f in model.flavors if f != PYFUNC)
    if PYFUNC not in model.flavors:
        raise ConfigError(f"{model.folder!r} is an MLflow model of flavor(s) {flavors}, which "
                          f"no installed plugin loads, and it has no {PYFUNC} flavor")
    return_hint = f'; install it: pip install "flask-predict[{PYFUNC_PLUGIN}]"'
    native = f" (flavor(s) {flavors}: none that an installed plugin loads)" if flavors else ""
    raise ConfigError(f"{model.folder!r} is an MLflow model{native} that loads as "
                      f"{PYFUNC} with the {PYFUNC_PLUGIN!r} plugin, and it is not installed"
                      f"{return_hint}")


REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:==\s*([^\s;#,]+))?")


def requirements(folder: str) -> list[tuple[str, str | None]]:
    """``(package, pinned version or None)`` for each package the model was saved with:
    ``requirements.txt``, else the pip list of ``conda.yaml``."""
    lines: list[str] = []
    try:
        with open(os.path.join(folder, "requirements.txt"), encoding="utf-8") as file:
            lines = file.read().splitlines()
    except (OSError, UnicodeDecodeError):
        lines = _conda_pip(folder)
    found = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "-")) or "://" in line:
            continue
        match = REQUIREMENT.match(line)
        if match:
            found.append((match.group(1), match.group(2)))
    return found


def _conda_pip(folder: str) -> list[str]:
    import yaml

    try:
        with open(os.path.join(folder, "conda.yaml"), encoding="utf-8") as file:
            env = yaml.safe_load(file)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    dependencies = env.get("dependencies") if isinstance(env, dict) else None
    for item in dependencies or ():
        if isinstance(item, dict) and isinstance(item.get("pip"), list):
            return [str(line) for line in item["pip"]]
    return []


MLFLOW_DISTRIBUTIONS = ("mlflow", "mlflow-skinny")


def unmet_requirements(folder: str) -> list[str]:
    """The requirements of the model in *folder* that are not installed, or not at the
    version pinned: ``name==pinned (installed: version)`` or ``name (not installed)``.
    Not ``mlflow`` itself: a native flavor loads without it, and the ``mlflow`` plugin
    says so when it is missing."""
    unmet = []
    for name, pinned in requirements(folder):
        if name.lower().replace("_", "-") in MLFLOW_DISTRIBUTIONS:
            continue
        installed = _installed(name)
        if installed is None:
            unmet.append(f"{name} (not installed)")
        elif pinned is not None and _plain(installed) != _plain(pinned):
            unmet.append(f"{name}=={pinned} (installed: {installed})")
    return unmet


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _plain(version: str) -> str:
    """A version without its local part and trailing zeros: ``1.2.0+cpu`` is ``1.2``."""
    parts = version.split("+", 1)[0].split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts)

