"""Vertex AI custom prediction routines: a class written against
``google.cloud.aiplatform.prediction.predictor.Predictor``, served as Vertex AI's CPR model
server (``CprModelServer`` and its ``PredictionHandler``) calls it.

The class is created with no arguments and ``load`` is called once with the version folder
(Vertex AI passes ``AIP_STORAGE_URI``). For each request on the Vertex AI and AI Platform
predict routes, ``preprocess`` gets the whole parsed JSON body, ``predict`` what it returned,
``postprocess`` what that returned, and that is the answer, as it is. The class may subclass
Google's ``Predictor`` or simply have those methods: ``google-cloud-aiplatform`` is never
imported here.

Over the other protocols the class needs a ``signature`` (see :mod:`.signature`): the
decoded rows are sent as ``{"instances": rows}`` and the answer's ``predictions`` are the
outputs. Without one, those protocols answer 400.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from flask_predict.plugin import FailedPrecondition, InvalidInput, ModelMetadata, Predictor

from .modules import VersionModules
from .routine import (class_setting, close_routine, fork_routine, is_aiplatform,
                      load_user_class)
from .signature import declared_by

NO_SIGNATURE = ("this model is a Vertex AI prediction routine: it takes whole requests on the "
                "Vertex AI and AI Platform predict routes; over this protocol its class must "
                "declare a 'signature'")


class VertexPredictor(Predictor):
    """Adapts a Vertex AI CPR ``Predictor`` to the predictor contract."""

    def __init__(self, user: Any, modules: VersionModules) -> None:
        self.user = user
        self.modules = modules
        declared = declared_by(user, modules)
        self._declared = declared is not None
        metadata = declared or super().metadata()
        # without a signature, the other protocols hand predict() their JSON instances,
        # which it refuses with NO_SIGNATURE
        self._metadata = dataclasses.replace(metadata, request_door=True,
                                             instances_door=declared is None)

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> VertexPredictor:
        modules = VersionModules(model_dir)
        try:
            user_class = load_user_class(class_setting(model_dir, options), modules)
            if is_aiplatform(user_class):
                raise TypeError(f"{user_class.__name__} is an AI Platform routine "
                                "(from_path); serve it with the 'custom' predictor")
            return cls.create(user_class, model_dir, modules)
        except BaseException:
            modules.close()
            raise

    @classmethod
    def create(cls, user_class: Any, model_dir: str, modules: VersionModules) -> VertexPredictor:
        """Create the class with no arguments and ``load`` the version folder, as Vertex AI's
        handler does once per server process."""
        user = modules.call(user_class)
        modules.call(user.load, model_dir)
        return cls(user, modules)

    def predict_request(self, body: Any) -> Any:
        return self.modules.call(self._handle, body)

    def _handle(self, body: Any) -> Any:
        user = self.user
        try:
            return user.postprocess(user.predict(user.preprocess(body)))
        except Exception as exc:
            error = client_error(exc)
            if error is None:
                raise
            raise error from exc

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        """Rows decoded by the declared signature, through the whole-request door."""
        if not self._declared:
            raise FailedPrecondition(NO_SIGNATURE)
        body: dict[str, Any] = {"instances": instances}
        if "parameters" in kwargs:
            body["parameters"] = kwargs["parameters"]
        answer = self.predict_request(body)
        predictions = answer.get("predictions") if isinstance(answer, Mapping) else None
        if not isinstance(predictions, list):
            raise TypeError(f"postprocess returned {type(answer).__name__}, not "
                            "{'predictions': [...]}")
        return predictions

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def after_fork(self) -> None:
        fork_routine(self.user, self.modules)

    def close(self) -> None:
        close_routine(self.user, self.modules)


def client_error(exc: Exception) -> InvalidInput | None:
    """A 400 for FastAPI's ``HTTPException`` with a 4xx ``status_code``, which Vertex AI's
    server answers with that status and its ``detail``; ``None`` for any other exception
    (that server answers 500, Starlette's own ``HTTPException`` included)."""
    fastapi = any(cls.__name__ == "HTTPException" and cls.__module__.startswith("fastapi.")
                  for cls in type(exc).__mro__)
    status = getattr(exc, "status_code", None)
    if fastapi and isinstance(status, int) and 400 <= status < 500:
        return InvalidInput(str(getattr(exc, "detail", None) or exc))
    return None
