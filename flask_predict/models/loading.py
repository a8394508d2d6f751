"""Loading a version folder with its plugin: an MLflow model folder through the plugin's
``from_mlflow`` (:mod:`.mlmodel`), any other through ``from_path``."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from ..predictor import Predictor
from .mlmodel import is_mlflow_folder, read_mlmodel, unmet_requirements
from .signed import signed

logger = logging.getLogger(__name__)


def load_mlflow(cls: type[Predictor], folder: str, options: Mapping[str, Any]) -> Predictor:
    """The MLflow model in *folder* loaded by the plugin *cls*, after one warning line for
    the packages it was saved with that are missing or at another version here; described
    and checked by its signature (:mod:`.signed`)."""
    model = read_mlmodel(folder)
    unmet = unmet_requirements(folder)
    if unmet:
        logger.warning("flask_predict: the MLflow model in %s was saved with packages missing "
                       "here or at other versions: %s", folder, ", ".join(unmet))
    return signed(cls.from_mlflow(model, **options), model)


def load_version(cls: type[Predictor], folder: str, options: Mapping[str, Any]) -> Predictor:
    """A version folder loaded by plugin *cls*: ``from_mlflow`` for an MLflow model,
    ``from_path`` for any other."""
    if is_mlflow_folder(folder):
        return load_mlflow(cls, folder, options)
    return cls.from_path(folder, **options)
