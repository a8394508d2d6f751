"""The one door into the core: every protocol front end (REST views, gRPC servicers) goes
through :class:`ModelService` and nothing else.

A request is resolved once: :meth:`ModelService.use` finds the loaded version a request names
(number, label, version name or default) and holds it until the request is done, so a swap
never closes a predictor under a running request. The verbs (:meth:`predict`,
:meth:`predict_instances`, :meth:`classify`, :meth:`explain` ...) run on the held version;
they are the only callers of predictor methods, and any failure of a predictor becomes
:class:`~flask_predict.errors.PredictorFailed` (a 500; the cause is chained for the log).
Model control is here too: readiness, the index of configured models, load and unload, the
online switch, per-version statistics. Nothing here knows Flask or a protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..runtime import deadline
from ..errors import (InvalidInput, ModelNotFound, ModelNotReady, PredictError, PredictorFailed,
                      Unimplemented)
from ..explanation import Explanation, checked
from ..models.control import IndexEntry, ModelControl
from .calls import call_by, held_call, streamed_items
from ..models.lazy_types import TierEntry
from ..models.repository import ModelRepository
from ..models.served import LoadedVersion, ServedModel
from ..models.shared_state import StateDir
from ..observability import statistics
from ..types import Classification, Example, InferenceRequest, InferenceResponse, Tensor
from ..request.record import current_request
from ..models.startup import NO_MODEL

if TYPE_CHECKING:
    from ..observability.metrics import Metrics

logger = logging.getLogger(__name__)

_RESOLVE_TRIES = 3
"""A version retired between lookup and acquire is looked up again (its replacement)."""


class ModelService:
    """What protocols may ask of the models of one app."""

    def __init__(self, repository: ModelRepository, load_wait_seconds: float = 0.0,
                 timeout_seconds: float | None = None, metrics: Metrics | None = None,
                 control: ModelControl | None = None) -> None:
        self.repository = repository
        self.metrics = metrics
        """The app's metrics (statistics read them); ``None`` when ``PREDICT_METRICS`` is off."""
        self.control = control or ModelControl(repository, (), None, load_wait_seconds)
        self.load_wait_seconds = load_wait_seconds
        """How long a request that arrives while the models first load waits for them."""
        self.timeout_seconds = timeout_seconds
        """The time limit of a predictor call for models without their own."""
        self._synced = False
        """Whether the repository's first sync was seen done (see :meth:`acquire`)."""
        self.ready_checks: list[Callable[[], bool]] = []
        """More conditions for readiness (the server adds "every worker is ready")."""

    # --- what is served --------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """A model is configured, every configured model has a version loaded in this worker
        (see :attr:`ModelRepository.ready`), and every added readiness check passes."""
        return (self.control.configured_any and self.repository.ready
                and all(check() for check in self.ready_checks))

    def check_configured(self) -> None:
        """Raise :class:`ModelNotReady` (503) naming how to configure a model when none is:
        what every protocol's readiness answers then."""
        if not self.control.configured_any:
            raise ModelNotReady(NO_MODEL)

    @property
    def online(self) -> bool:
        """The server's online switch (grps's online/offline): true unless turned off."""
        return self.control.online

    def set_online(self, online: bool) -> None:
        self.control.set_online(online)

    def open_online_switch(self, state_dir: StateDir, initial: bool) -> None:
        """Give the server an online switch shared through *state_dir* (grps's); the first
        worker to open it sets it to *initial*."""
        self.control.open_online_switch(state_dir, initial)

    @property
    def can_load(self) -> bool:
        """Whether :meth:`load` and :meth:`unload` work (the model watcher runs)."""
        return self.control.can_load

    def index(self) -> list[IndexEntry]:
        """Every configured model, one entry per version this worker knows of."""
        return self.control.index()

    def load(self, name: str) -> None:
        """Serve configured model *name* in every worker; return once this one does."""
        self.control.load(name)

    def unload(self, name: str) -> None:
        """Stop serving configured model *name* in every worker."""
        self.control.unload(name)

    def add_model(self, name: str, url: str) -> None:
        """Add model *name* from its folder *url* in the lazy tier's root, loaded here."""
        self.control.add(name, url)

    def added_models(self) -> dict[str, str]:
        """The models added by name, each with its folder."""
        return self.control.added()

    def remove_model(self, name: str) -> None:
        """Forget an added model in every worker."""
        self.control.remove(name)

    def lazy_tier(self) -> tuple[str, int, int, list[TierEntry]] | None:
        """The lazy tier's root, cap and bytes held here, and its models' states (``None``
        without one)."""
        lazy = self.repository.lazy
        return None if lazy is None else (lazy.root, lazy.max_bytes, lazy.held_bytes,
                                          lazy.entries())

    def statistics(self, model: str | None = None, version: str | None = None
                   ) -> list[tuple[str, str, statistics.VersionStats]]:
        """(model, version, statistics) for every version this worker serves, of every
        model or of *model* (404 when it is not served), or of that one *version* (404 when
        it is not loaded); summed over the server's workers."""
        if self.metrics is None:
            raise Unimplemented("statistics are off: PREDICT_METRICS is false")
        served = [self.model(model)] if model else self.models()
        wanted: list[tuple[str, str]] = []
        for entry in served:
            versions = [str(v) for v in sorted(entry.versions)]
            if version:
                if version not in versions:
                    raise ModelNotFound(f"requested model '{entry.name}' version {version} "
                                        "is not available")
                versions = [version]
            wanted.extend((entry.name, v) for v in versions)
        found = statistics.read(self.metrics.families())
        return [(name, v, found.get((name, v), statistics.VersionStats()))
                for name, v in wanted]

    def names(self) -> list[str]:
        return self.repository.names()

    def models(self) -> list[ServedModel]:
        """Every configured model with its versions and their states."""
        return self.repository.models()

    def model(self, name: str, wait: bool = True) -> ServedModel:
        """One configured model (404 when unknown). In a worker still loading its models
        this waits for them first, as a request does (:meth:`acquire`); a probe passes
        *wait* false and is answered at once."""
        if wait:
            self._await_first_load()
        return self.repository.model(name)

    # --- resolve once ----------------------------------------------------------------------

    def use(self, model: str, version: str | int | None = None, label: str | None = None,
            version_name: str | None = None) -> LoadedVersion:
        """Resolve the version a request names and hold it: ``with service.use(...) as
        loaded:`` releases it when the block ends.

        Give at most one of *version* (a number), *label* or *version_name* (a label, else
        a number: AI Platform's and grps's names); none means the default version.
        """
        return self.acquire(model, version, label, version_name)

    def acquire(self, model: str, version: str | int | None = None, label: str | None = None,
                version_name: str | None = None) -> LoadedVersion:
        """The version a request names, held: release it with ``release()`` or by using it
        as a context manager (:meth:`use`)."""
        if self.load_wait_seconds > 0 and not self._synced \
                and not self._serves(model, version, label, version_name):
            self._await_first_load()
        for _ in range(_RESOLVE_TRIES):
            loaded = self.repository.get(model, version, label, version_name)
            if loaded.acquire():
                if (record := current_request.get()) is not None:
                    record.resolved(loaded.spec.name, loaded.version)  # metrics, access log
                return loaded
        raise ModelNotReady(f"model {model!r} is being replaced; try again")

    def _serves(self, model: str, version: str | int | None, label: str | None,
                version_name: str | None) -> bool:
        """Whether the version a request names is loaded already (while the others still
        load, a model the worker inherited from the master answers at once)."""
        try:
            self.repository.get(model, version, label, version_name)
        except PredictError:
            return False
        return True

    def _await_first_load(self) -> None:
        """The worker serves while its models first load: a request waits for them (as it
        would in the listen queue of a worker that loads before serving), at most
        ``load_wait_seconds``."""
        if self.load_wait_seconds <= 0 or self._synced:
            return
        first_sync = self.repository.first_sync
        if first_sync.is_set():
            self._synced = True  # never unset: the next requests skip the event
            return
        started = perf_counter()
        first_sync.wait(self.load_wait_seconds)
        if (record := current_request.get()) is not None:
            record.waited("load", started)  # a trace's span

    # --- verbs -----------------------------------------------------------------------------

    def predict(self, loaded: LoadedVersion, request: InferenceRequest) -> InferenceResponse:
        """Run the tensor door of *loaded* on *request*'s inputs."""
        signature = loaded.predictor.signature(request.signature)
        if request.outputs is not None:
            unknown = [name for name in request.outputs if signature.output(name) is None]
            if unknown:
                raise InvalidInput(f"unknown output(s) {unknown}; the model's outputs are "
                                   f"{[spec.name for spec in signature.outputs]}")
        outputs = self.call(loaded, "predict", loaded.predictor.predict_tensors,
                            (request.inputs, request.outputs, request.signature))
        mapping_of_arrays = type(outputs) is dict or isinstance(outputs, Mapping)  # dict: no ABC
        if mapping_of_arrays:
            for value in outputs.values():  # a loop: all() over a generator costs more
                if not isinstance(value, np.ndarray):
                    mapping_of_arrays = False
                    break
        if not mapping_of_arrays:
            raise PredictorFailed(f"model {loaded.name!r} returned "
                                  f"{type(outputs).__name__}, not a mapping of arrays")
        return InferenceResponse(loaded.name, loaded.version, dict(outputs))

    def call(self, loaded: LoadedVersion, verb: str, method: Callable[..., Any],
             args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None) -> Any:
        """``method(*args, **kwargs)``, a predictor method: our own errors pass, anything
        else becomes :class:`PredictorFailed` (500, generic message) with the cause chained
        for the log.

        One call at a time per model version: a worker's gRPC threads and its HTTP thread
        never run the same predictor concurrently (predictors need not be thread-safe). The
        wait and the call are bounded by the model's time limit (:mod:`.deadline`), and by the
        client's deadline where the request's scope has one. Both, the wait included, are timed
        on the request's record (metrics, access log). A plain
        function, not a context manager: every request makes one such call."""
        spec = loaded.spec
        seconds = deadline.seconds_for(spec, self.timeout_seconds)
        record = current_request.get()
        started = perf_counter()
        calls = loaded.calls
        try:
            if record is not None and record.deadline is not None:
                return call_by(record.deadline, loaded, seconds, verb, method, args, kwargs,
                                record)
            if seconds:
                with deadline.limit(seconds, spec.name):
                    return held_call(calls, record, method, args, kwargs)
            return held_call(calls, record, method, args, kwargs)
        except PredictError:
            raise
        except Exception as exc:
            raise PredictorFailed(f"model {spec.name!r} failed to {verb}") from exc
        finally:
            if record is not None:
                record.predicted(spec.name, loaded.version, started)

    def predict_instances(self, loaded: LoadedVersion, instances: list[Any],
                          kwargs: Mapping[str, Any]) -> list[Any]:
        """Run the instances door: AI Platform's ``predict(instances, **kwargs)``."""
        predictions = self.call(loaded, "predict", loaded.predictor.predict, (instances,),
                                kwargs)
        if isinstance(predictions, np.ndarray):
            predictions = predictions.tolist()
        if not isinstance(predictions, (list, tuple)):
            raise PredictorFailed(f"model {loaded.name!r} returned "
                                  f"{type(predictions).__name__}; predict must return a "
                                  "list or a numpy array")
        return list(predictions)

    def predict_request(self, loaded: LoadedVersion, body: Any) -> Any:
        """The whole-request door (``metadata.request_door``): the parsed body in, the
        predictor's JSON-able answer out, as it returned it."""
        return self.call(loaded, "predict", loaded.predictor.predict_request, (body,))

    def predict_matrix(self, loaded: LoadedVersion, matrix: Tensor) -> list[Any] | None:
        """The instances door for instances parsed straight into a float64 matrix;
        ``None`` when *loaded* needs them as JSON values."""
        predictions: list[Any] | None = self.call(loaded, "predict",
                                                  loaded.predictor.predict_matrix, (matrix,))
        return predictions

    def predict_stream(self, loaded: LoadedVersion, instances: list[Any],
                       kwargs: Mapping[str, Any]) -> Iterator[list[Any]]:
        """The instances door for a streaming request, one message at a time.

        A predictor streams by returning an iterator from ``predict`` (a generator, say):
        each item it yields is one message holding that one prediction. A list answer is
        a single message. ``predict`` is called at once; the items are produced as the
        caller iterates, and a failure while producing one raises :class:`PredictorFailed`.
        """
        result = self.call(loaded, "predict", loaded.predictor.predict, (instances,), kwargs)
        if isinstance(result, np.ndarray):
            result = result.tolist()
        if isinstance(result, (list, tuple)):
            return iter([list(result)])
        if not isinstance(result, Iterator):
            raise PredictorFailed(f"model {loaded.name!r} returned {type(result).__name__}; "
                                  "predict must return a list or an iterator")
        return streamed_items(loaded, result)

    def classify(self, loaded: LoadedVersion, examples: Sequence[Example],
                 signature: str | None = None) -> Classification:
        """Class labels and scores (TF Serving's ``:classify``)."""
        result = self.call(loaded, "classify", loaded.predictor.classify, (examples, signature))
        if not isinstance(result, Classification):
            raise PredictorFailed(f"model {loaded.name!r} returned {type(result).__name__}, "
                                  "not a Classification")
        return result

    def regress(self, loaded: LoadedVersion, examples: Sequence[Example],
                signature: str | None = None) -> Tensor:
        """One value per example (TF Serving's ``:regress``)."""
        values = self.call(loaded, "regress", loaded.predictor.regress, (examples, signature))
        return np.asarray(values)

    def explain(self, loaded: LoadedVersion, request: InferenceRequest,
                with_predictions: bool = False) -> tuple[dict[str, Tensor], Explanation]:
        """Attributions of *request*'s rows (:meth:`Predictor.explain`), and with
        *with_predictions* every output of the tensor door for them: one predictor call,
        bounded by the model's time limit as a prediction is."""
        predictor, inputs, signature = loaded.predictor, request.inputs, request.signature
        outputs, explanation = self.call(loaded, "explain", _explained, (
            partial(predictor.explain, inputs, signature),
            partial(predictor.predict_tensors, inputs, None, signature)
            if with_predictions else None))
        rows = len(next(iter(inputs.values()))) if inputs else 0
        return dict(outputs or {}), checked(explanation, rows, loaded.name)

    def explain_instances(self, loaded: LoadedVersion, instances: list[Any],
                          kwargs: Mapping[str, Any], with_predictions: bool = False
                          ) -> tuple[list[Any], Explanation]:
        """:meth:`explain` for JSON instances (:meth:`Predictor.explain_instances`); the
        predictions are what ``predict(instances)`` answers."""
        predictor = loaded.predictor
        predictions, explanation = self.call(loaded, "explain", _explained, (
            partial(predictor.explain_instances, instances, **kwargs),
            partial(predictor.predict, instances, **kwargs) if with_predictions else None))
        if isinstance(predictions, np.ndarray):
            predictions = predictions.tolist()
        return list(predictions or []), checked(explanation, len(instances), loaded.name)


def _explained(explain: Callable[[], Any], predict: Callable[[], Any] | None
               ) -> tuple[Any, Any]:
    """An explanation, then the predictions of the same rows where *predict* is given."""
    explanation = explain()
    return (predict() if predict is not None else None), explanation
