"""Start-up: what every way of starting (``flask-predict serve``, ``init_app``,
``flask-predict check``) checks before and after the first load of the models.

Before, with no framework imported (:func:`check_models`): every model names a known plugin
(else the package to install), has a numbered version folder, and only options its plugin
takes. The gunicorn master runs it before any worker starts; ``check`` runs it too.

After (:func:`check_first_load`): a configured model that did not load at start stops the
server, as TF Serving's does, with one line naming the model, the file and the cause
(:func:`failure_line`); ``PREDICT_EXIT_ON_LOAD_ERROR`` false serves the other models
instead. The rule reads only what the first load left in the served models' statuses, so it
holds wherever a model loaded: in a worker, in the process that embeds the extension, or in
the gunicorn master before the fork. A version that fails later keeps the one served before
(:mod:`.repository`).

How a process stops is its owner's business: the server installs a stopper in each process
it starts (:func:`stop_with`); without one the rule raises :class:`StartFailed`.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..errors import ConfigError, did_you_mean
from ..storage.artifacts import artifact_file, version_folders, version_path
from .plugins import check_options, detect_predictor, install_hint, installed_names, manifests
from .served import ServedModel
from ..settings.model_config import MODEL_KEYS
from ..storage import is_remote, local_path, shown
from ..types import ModelSpec

logger = logging.getLogger(__name__)

NO_MODEL = ("no model is configured: serve one with `flask-predict serve --model_name NAME "
            "--model_base_path DIR`, several with `flask-predict serve --model_config_file "
            "FILE` (FLASK_PREDICT_MODELS or FLASK_PREDICT_MODEL_CONFIG_FILE under gunicorn)")
"""Why a server without models is not ready: what its readiness answers and its log says."""

SERVE_THE_REST = "PREDICT_EXIT_ON_LOAD_ERROR"
"""The setting that, false, serves the models that loaded when others did not."""


@dataclass(frozen=True)
class LoadFailure:
    """A configured model, or one of its versions, that did not load at start."""

    model: str
    version: int | None
    """``None``: the model has no version folder at all."""
    path: str
    """The artifact file that failed (or the version folder, or the base path)."""
    cause: str
    """One line: the error, without a native backtrace."""

    def __str__(self) -> str:  # a bucket's object by its URI, never its copy in the cache
        version = "" if self.version is None else f" version {self.version}"
        return shown(f"model {self.model!r}{version} failed to load from {self.path}: "
                     f"{self.cause}")


class StartFailed(ConfigError):
    """A configured model did not load at start (the message is the one line)."""

    def __init__(self, found: list[LoadFailure], others_loaded: bool) -> None:
        super().__init__(failure_line(found, others_loaded))
        self.failures = found


NATIVE_TRACE = ("Stack trace:", "Traceback (most recent call last):")
"""Where a framework's error message starts a backtrace of its own (XGBoost's ``[bt]`` list
of native frames and library paths): the cause stops there."""


CLOCK = re.compile(r"^\[\d\d:\d\d:\d\d\] ")
"""The time XGBoost writes before its messages."""


def cause_of(exc: BaseException) -> str:
    """*exc* in one line: our own errors' message, else ``Type: message`` up to any
    backtrace it carries, its lines joined."""
    if isinstance(exc, ConfigError):
        return shown(exc.message)
    text = shown(str(exc))  # a bucket's object by its URI, never its copy in the cache
    for marker in NATIVE_TRACE:
        text = text.split(marker, 1)[0]
    words = " ".join(line.strip() for line in text.splitlines() if line.strip())
    words = CLOCK.sub("", words)  # the log line has its own time
    return f"{type(exc).__name__}: {words}" if words else type(exc).__name__


def failures(models: Iterable[ServedModel]) -> list[LoadFailure]:
    """What did not load in *models* after a first load: every version that failed, and
    every model with no version folder."""
    found: list[LoadFailure] = []
    for served in models:
        if not served.statuses and not served.versions:
            cause = served.problem or (
                "its version policy serves none of the version folders"
                if version_folders(local_path(served.spec.base_path)) else
                "no numbered version folder")
            found.append(LoadFailure(served.name, None, served.spec.base_path, cause))
        for version, status in sorted(served.statuses.items()):
            if status.error:
                path = version_path(local_path(served.spec.base_path), version)
                found.append(LoadFailure(served.name, version, artifact_file(path),
                                         status.cause or status.error))
    return found


def failure_line(found: list[LoadFailure], others_loaded: bool = False) -> str:
    """The one line that says why the server does not start."""
    hint = (f" ({SERVE_THE_REST}=false serves the models that loaded)" if others_loaded
            else "")
    return "flask_predict: not starting: " + "; ".join(map(str, found)) + hint


def check_first_load(models: Iterable[ServedModel], exit_on_error: bool,
                     versions_only: bool = False) -> None:
    """The rule, once the first load is done: raise :class:`StartFailed` (the one line)
    when something did not load, or with *exit_on_error* false log it and go on. With
    *versions_only* (the gunicorn master, which loads only the shared versions) a model
    with no version loaded is not a failure by itself: only a version that failed is."""
    served = list(models)
    found = [f for f in failures(served) if f.version is not None or not versions_only]
    if not found:
        return
    loaded = any(model.versions for model in served)
    if exit_on_error:
        raise StartFailed(found, loaded)
    for failure in found:
        logger.error("flask_predict: %s; serving the other models (%s is false)", failure,
                     SERVE_THE_REST)


_stop: Callable[[StartFailed], None] | None = None


def stop_with(stop: Callable[[StartFailed], None] | None) -> None:
    """Make *stop* what :func:`stop` calls in this process (the server's: log the line once
    for the whole server and end the process so that the server halts)."""
    global _stop
    _stop = stop


def stop(error: StartFailed) -> None:
    """Stop this process for *error* when its owner said how (:func:`stop_with`); else log
    the line: an app that embeds the extension stays up, not ready."""
    if _stop is not None:
        _stop(error)
    else:
        logger.critical("flask_predict: %s; this app goes on, not ready (%s=false makes it "
                        "ready with the other models)", "; ".join(map(str, error.failures)),
                        SERVE_THE_REST)


def settle(models: Iterable[ServedModel], exit_on_error: bool) -> None:
    """The rule at the end of a first load that ran in the background: stop as this
    process's owner says (:func:`stop`)."""
    try:
        check_first_load(models, exit_on_error)
    except StartFailed as exc:
        stop(exc)


def check_models(specs: Iterable[ModelSpec], exit_on_error: bool = True) -> None:
    """Each model: a known plugin, a version folder, only options its plugin takes; importing
    no framework (plugins' manifests only). With *exit_on_error* false a model's own problem
    is logged, and the workers' load reports it as they serve the others.

    :raises ConfigError: the first problem found.
    """
    plugins = installed_names()
    found = manifests()
    for spec in specs:
        try:
            _check_model(spec, plugins, found)
        except ConfigError as exc:
            if exit_on_error:
                raise
            logger.error("flask_predict: %s; serving the other models (%s is false)",
                         exc.message, SERVE_THE_REST)


def _check_model(spec: ModelSpec, plugins: list[str], found: Mapping[str, Any]) -> None:
    if spec.predictor is not None and spec.predictor not in plugins:
        raise ConfigError(f"model {spec.name!r}: no predictor {spec.predictor!r}"
                          f"{did_you_mean(spec.predictor, plugins)}; installed: {plugins}"
                          f"{install_hint(spec.predictor)}")
    folder = local_path(spec.base_path)
    versions = version_folders(folder)
    if not versions and is_remote(spec.base_path):
        return  # not downloaded yet: the first load fetches it and reports what fails
    if not versions:
        raise ConfigError(shown(f"model {spec.name!r}: no numbered version folder in "
                                f"{spec.base_path!r}{_version_hint(spec.base_path)}"))
    predictor = spec.predictor or detect_predictor(
        version_path(folder, max(versions)), spec.options, found)
    try:
        check_options(spec.name, predictor, spec.options, found)
    except ConfigError as exc:
        raise ConfigError(_hint_model_keys(exc.message, spec.options)) from None


def _version_hint(base_path: str) -> str:
    """Where a base path named as a version holds no file: its parent is the base path.
    (One that holds the model's files is served as version 1.)"""
    name = os.path.basename(os.path.normpath(base_path))
    if name.isdigit():
        return (f" ({base_path!r} looks like a version folder: use its parent, "
                f"{os.path.dirname(os.path.normpath(base_path))!r})")
    return ""


def _hint_model_keys(message: str, options: Iterable[str]) -> str:
    """A misspelt model key (``version_polcy``) reaches the plugin as an option: point at
    the key it resembles instead."""
    for option in options:
        hint = did_you_mean(option, MODEL_KEYS)
        if f"{option!r}" in message and hint:
            return message.split("; did you mean")[0] + hint
    return message
