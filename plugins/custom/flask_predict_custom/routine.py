"""Finding and importing a routine's class: named by the model's ``class`` setting
(``module.Class`` or ``module:Class``, AI Platform's ``predictionClass``) or, without it, the
one routine class the version folder's source defines (:mod:`.discovery`)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Mapping

from .discovery import routine_classes
from .modules import VersionModules

CLASS_OPTIONS = ("class", "prediction_class")


def class_setting(model_dir: str, options: Mapping[str, Any]) -> str:
    """The class the options name, else the one the folder defines; ``TypeError`` for an
    unknown option, or for a folder with none or several routine classes."""
    options = dict(options)
    name = next((options.pop(key) for key in CLASS_OPTIONS if options.get(key)), None)
    for key in CLASS_OPTIONS:
        options.pop(key, None)
    if options:
        raise TypeError(f"unknown custom predictor option(s) {sorted(options)}")
    if name:
        return str(name)
    found = routine_classes(model_dir)
    if len(found) != 1:
        what = f"several classes could be it: {found}" if found else "none was found"
        raise TypeError("a custom predictor needs 'class': 'module.Class' in its config "
                        f"when its folder does not define exactly one prediction class "
                        f"({what})")
    return found[0]


def load_user_class(name: str, modules: VersionModules) -> Any:
    """Import the class *name*: from the version folder when its module is shipped there,
    else from the installed packages. It must follow AI Platform's contract (``from_path``
    and ``predict``) or Vertex AI's (``load`` and ``predict``)."""
    module_name, sep, class_name = name.partition(":")
    if not sep:
        module_name, _, class_name = name.rpartition(".")
    if not module_name or not class_name:
        raise TypeError(f"class {name!r} must be written 'module.Class' or 'module:Class'")
    if module_name.split(".")[0] in modules.names:
        module = modules.module(module_name)
    else:
        with modules.active():
            module = importlib.import_module(module_name)
    user_class = getattr(module, class_name, None)
    if not inspect.isclass(user_class):
        raise TypeError(f"{name} cannot be found: module {module_name!r} has no class "
                        f"{class_name!r}")
    if not callable(getattr(user_class, "predict", None)):
        raise TypeError(f"{name} has no predict() method")
    if not (is_aiplatform(user_class) or callable(getattr(user_class, "load", None))):
        raise TypeError(f"{name} has no from_path() method (AI Platform's routine) nor "
                        "load() (Vertex AI's)")
    return user_class


def is_aiplatform(user_class: Any) -> bool:
    """AI Platform's contract (``from_path``) rather than Vertex AI's (``load``)."""
    return callable(getattr(user_class, "from_path", None))


def fork_routine(user: Any, modules: VersionModules) -> None:
    """The routine's own ``after_fork()``, when it has one: in each gunicorn worker that
    inherited it from the master (threads, sockets and pools start there)."""
    hook = getattr(user, "after_fork", None)
    if callable(hook):
        modules.call(hook)


def close_routine(user: Any, modules: VersionModules) -> None:
    """The routine's own ``close()``, when it has one, then forget its version's modules."""
    close = getattr(user, "close", None)
    try:
        if callable(close):
            modules.call(close)
    finally:
        modules.close()
