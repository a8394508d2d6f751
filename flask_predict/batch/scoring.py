"""One chunk of a batch job scored: its instances predicted together, and one output line
per instance, as Vertex AI batch prediction writes them::

    {"instance": <the input>, "prediction": <its prediction>}
    {"instance": <the input>, "error": {"code": 400, "status": "INVALID_ARGUMENT", "message": ...}}

A chunk the model refuses or fails on is split in halves until each bad instance stands
alone, so one bad line costs its own error line and never another line's prediction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import orjson
import simdjson

from .. import codecs
from ..api import Model
from ..errors import HTTP_STATUS, InvalidInput, PredictError, PredictorFailed
from .reading import Chunk, Unreadable

@dataclass
class Scored:
    """A chunk's output lines and what they hold."""

    lines: bytes
    predictions: int
    errors: int
    blank: int
    read_bytes: int


def score(model: Model, chunk: Chunk, parameters: Mapping[str, Any]) -> Scored:
    """Predict *chunk* with *model* (*parameters*: the predict request's other keys)."""
    echoes: list[bytes] = []
    outcomes: list[tuple[bool, Any] | None] = []
    wanted: list[int] = []
    instances: list[Any] = []
    parsed = _json_values(chunk.items) if chunk.json_lines else None
    if parsed is not None:  # every line is JSON: the usual chunk, printed at once
        outcomes_all = predict_each(model, parsed, parameters)
        if all(ok for ok, _ in outcomes_all):
            lines = b"".join([b'{"instance":%b,"prediction":%b}\n' % (echo, printed(value))
                              for echo, (_, value) in zip(chunk.items, outcomes_all)])
            return Scored(lines, len(parsed), 0, chunk.blank, chunk.read_bytes)
    for index, item in enumerate(chunk.items):
        if parsed is not None:
            echo, instance, error = item, parsed[index], None
        elif chunk.json_lines:
            echo, instance, error = _json_line(item)
        elif isinstance(item, Unreadable):
            echo, instance, error = codecs.dumps(item.text), None, InvalidInput(item.message)
        else:
            echo, instance, error = codecs.dumps(item), item, None
        echoes.append(echo)
        if error is not None:
            outcomes.append((False, error_body(error)))
        else:
            outcomes.append(None)
            wanted.append(len(outcomes) - 1)
            instances.append(instance)
    for index, predicted in zip(wanted, predict_each(model, instances, parameters)):
        outcomes[index] = predicted
    parts: list[bytes] = []
    errors = 0
    for echo, outcome in zip(echoes, outcomes):
        assert outcome is not None
        ok, value = outcome
        if ok:
            parts.append(b'{"instance":' + echo + b',"prediction":' + printed(value) + b"}\n")
        else:
            errors += 1
            parts.append(b'{"instance":' + echo + b',"error":' + printed(value) + b"}\n")
    return Scored(b"".join(parts), len(echoes) - errors, errors, chunk.blank,
                  chunk.read_bytes)


def _json_values(lines: list[bytes]) -> list[Any] | None:
    """Every line's JSON value, parsed in one call; ``None`` when a line is not one JSON
    value (each line is then parsed alone, to answer the bad ones)."""
    try:
        # simdjson refuses what it cannot read exactly (an integer past 64 bits, NaN tokens):
        # those chunks are parsed line by line by codecs.loads, as a server reads them
        values = simdjson.loads(b"[" + b",".join(lines) + b"]")
    except (ValueError, RuntimeError):
        return None
    return values if isinstance(values, list) and len(values) == len(lines) else None


def _json_line(text: bytes) -> tuple[bytes, Any, PredictError | None]:
    try:
        return text, codecs.loads(text), None
    except PredictError as exc:
        return codecs.dumps(text.decode("utf-8", "replace")), None, InvalidInput(
            f"the line is not JSON: {exc.message}")


def predict_each(model: Model, instances: list[Any], parameters: Mapping[str, Any]
                 ) -> list[tuple[bool, Any]]:
    """One outcome per instance: the whole list at once, else its halves, down to the
    instances that fail alone."""
    if not instances:
        return []
    try:
        predictions = model.predict_instances(instances, **parameters)
        if len(predictions) != len(instances):
            raise PredictorFailed(f"model {model.name!r} returned {len(predictions)} "
                                  f"predictions for {len(instances)} instances")
        return [(True, prediction) for prediction in predictions]
    except PredictError as exc:
        if len(instances) == 1:
            return [(False, error_body(exc))]
    middle = len(instances) // 2
    return (predict_each(model, instances[:middle], parameters)
            + predict_each(model, instances[middle:], parameters))


def error_body(error: PredictError) -> dict[str, Any]:
    """An error line's ``error``: the HTTP status a server answers, its canonical code and
    the message (a server's generic one for a model's failure, with the cause's type)."""
    message = error.message
    cause = error.__cause__
    if cause is not None:
        message = f"{message}: {type(cause).__name__}: {cause}"
    return {"code": HTTP_STATUS[error.code], "status": error.code.value, "message": message}


def printed(value: Any) -> bytes:
    """*value* as JSON (as :func:`codecs.dumps` prints it: NaN and infinities as tokens); a
    prediction JSON cannot carry is printed as its text."""
    try:
        fast: bytes = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)
        if b"null" not in fast:
            return fast
        return codecs.dumps(value)
    except (TypeError, ValueError, RecursionError):
        return codecs.dumps(repr(value))
