"""Google's custom prediction routines, served unchanged from a model's version folder.

* An **AI Platform** routine is a class with ``from_path(model_dir)`` and
  ``predict(instances, **kwargs)`` (:class:`CustomPredictor`).
* A **Vertex AI** routine is a class with ``load(artifacts_uri)``, ``preprocess``,
  ``predict`` and ``postprocess``, as Google's CPR ``Predictor`` defines them
  (:class:`~.vertex.VertexPredictor`).

The model config names the class as ``module.Class`` or ``module:Class`` (AI Platform's
``predictionClass``); without it, the one routine class the folder's source defines is used
(:mod:`.discovery`). A module shipped in the version folder is imported the way Google's
runtimes make it importable, with each loaded version keeping its own copy
(:mod:`.modules`); a class not shipped there comes from the installed packages. The class
needs no base class; when it has ``metadata``, ``predict_tensors``, ``explain`` or ``close``
methods they are used too, and a ``signature`` declares what it takes and returns
(:mod:`.signature`). ``explain(instances, **kwargs)`` answers a
:class:`flask_predict.Explanation` for the instances (the ``explain`` verb).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Mapping, Sequence

from flask_predict.plugin import (Explanation, ModelMetadata, Predictor, Tensor, cannot_explain,
                                  tensors_to_instances)

from .modules import VersionModules
from .routine import (class_setting, close_routine, fork_routine, is_aiplatform,
                      load_user_class)
from .signature import declared_by, declared_metadata
from .vertex import VertexPredictor

__all__ = ["CustomPredictor", "VertexPredictor", "declared_metadata"]


class CustomPredictor(Predictor):
    """Adapts a user's AI Platform prediction class to the predictor contract; its
    :meth:`from_path` loads a Vertex AI routine as a :class:`VertexPredictor`."""

    def __init__(self, user: Any, modules: VersionModules) -> None:
        self.user = user
        self.modules = modules
        self._accepts = _accepted_keywords(user.predict)
        declared = declared_by(user, modules)
        metadata = declared or super().metadata()
        # with neither a declared signature nor a tensor door of its own, protocols hand
        # the class the request's JSON instances as they are
        own_tensors = callable(getattr(user, "predict_tensors", None))
        self._metadata = dataclasses.replace(
            metadata, instances_door=declared is None and not own_tensors)

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Predictor:
        options.pop("shared", None)  # read by the server (loaded once per machine), not here
        modules = VersionModules(model_dir)
        try:
            user_class = load_user_class(class_setting(model_dir, options), modules)
            if not is_aiplatform(user_class):
                return VertexPredictor.create(user_class, model_dir, modules)
            return cls(modules.call(user_class.from_path, model_dir), modules)
        except BaseException:
            modules.close()
            raise

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        if self._accepts is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in self._accepts}
        result: list[Any] = self.modules.call(self.user.predict, instances, **kwargs)
        return result

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        own = getattr(self.user, "predict_tensors", None)
        if callable(own):
            result: dict[str, Tensor] = self.modules.call(own, inputs, outputs, signature)
            return result
        return super().predict_tensors(inputs, outputs, signature)

    def explain_instances(self, instances: list[Any], **kwargs: Any) -> Explanation:
        """The class's own ``explain(instances, **kwargs)``; refused (400) without one."""
        own = getattr(self.user, "explain", None)
        if not callable(own):
            raise cannot_explain(f"{type(self.user).__name__} (a custom routine without "
                                 "explain())")
        accepted = _accepted_keywords(own)
        if accepted is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in accepted}
        result: Explanation = self.modules.call(own, instances, **kwargs)
        return result

    def explain(self, inputs: Mapping[str, Tensor],
                signature: str | None = None) -> Explanation:
        """Named tensors (TF Serving's and KServe's ``:explain``) as the class's instances."""
        return self.explain_instances(tensors_to_instances(inputs))

    def metadata(self) -> ModelMetadata:
        return self._metadata

    def after_fork(self) -> None:
        fork_routine(self.user, self.modules)

    def close(self) -> None:
        close_routine(self.user, self.modules)


def _accepted_keywords(method: Any) -> set[str] | None:
    """The keyword names *method* takes, or ``None`` when it takes ``**kwargs``."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
