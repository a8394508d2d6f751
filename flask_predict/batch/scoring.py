"""One chunk of a batch job scored: its instances predicted together, and one output line
per instance, as Vertex AI batch prediction writes them::

    {"instance": <the input>, "prediction": <its prediction>}
    {"instance": <the input>, "error": {"code": 400, "status": "INVALID_ARGUMENT", "message": ...}}

A chunk the model refuses or fails on is split in halves until each bad instance stands
alone, so one bad line costs its own error line and never another line's prediction.

The usual chunk, JSON lines that are each a flat list of numbers, skips the Python values:
its text is parsed into one float64 matrix in one call (:func:`codecs.number_lines`, with no
object per line or number) and predicted through the matrix door, which answers what the
instances door would; any other chunk, or one the model refuses, takes the instances door.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import orjson

from .. import codecs
from ..api import Model
from ..errors import HTTP_STATUS, CannotExplain, InvalidInput, PredictError, PredictorFailed
from ..types import Tensor
from .instances import InstanceConfig
from .reading import Chunk, Unreadable, line_ends

AS_READ = InstanceConfig()
"""Each record sent to the model as it was read."""


@dataclass
class Scored:
    """A chunk's output lines and what they hold."""

    lines: bytes
    predictions: int
    errors: int
    blank: int
    read_bytes: int


Record = tuple[bytes, Any, PredictError | None]
"""One input record: its output line's label (``"instance":...`` or ``"key":...``), its
instance, and the error that answers it instead (then the instance is not predicted)."""


def score(model: Model, chunk: Chunk, parameters: Mapping[str, Any],
          config: InstanceConfig = AS_READ, explain: bool = False) -> Scored:
    """Predict *chunk* with *model* (*parameters*: the predict request's other keys;
    *config*: how each record becomes its instance; *explain*: each prediction with its
    explanation, as Vertex AI's batch prediction writes them with ``generateExplanation``).

    :raises CannotExplain: *explain*, and the model does not explain.
    """
    numbers = numbers_of(model, chunk, parameters, config, explain)
    if numbers is not None:
        return numbers_scored(model, numbers, predicted(model, numbers.matrix), parameters,
                              config)
    return score_records(model, chunk, parameters, config, explain)


def score_records(model: Model, chunk: Chunk, parameters: Mapping[str, Any],
                  config: InstanceConfig = AS_READ, explain: bool = False) -> Scored:
    """:func:`score` without the matrix door: each record as its own value."""
    items, blank = chunk.items, chunk.blank
    if chunk.json_lines:
        items, blank_lines = _line_texts(chunk.text)
        blank += blank_lines
    if config.shapes_records:
        records = _shaped(items, chunk.json_lines, config)
    else:
        parsed = _json_values(items) if chunk.json_lines else None
        if parsed is not None and not explain:  # every line is JSON: printed at once when all are predicted
            outcomes = predict_each(model, parsed, parameters)
            if all(ok for ok, _ in outcomes):
                lines = _prediction_lines(items, [value for _, value in outcomes])
                return Scored(lines, len(parsed), 0, blank, chunk.read_bytes)
        records = _as_read(items, chunk.json_lines, parsed)
    return _answered(model, records, parameters, blank, chunk.read_bytes, explain)


@dataclass
class Numbers:
    """A chunk of JSON lines that are each a flat array of numbers, parsed into one float64
    matrix for the matrix door (:func:`numbers_of`)."""

    chunk: Chunk
    text: bytes
    """The chunk's text, with ``\n`` line ends."""
    ends: Tensor
    matrix: Tensor

    def scored(self, predictions: Any | None) -> Scored | None:
        """The chunk's output lines for the matrix door's *predictions*; ``None`` when there
        are none (the door refused or failed: the caller then scores its records)."""
        if predictions is None or len(predictions) != len(self.ends):
            return None
        lines = _text_prediction_lines(self.text, len(self.ends), predictions)
        if lines is None:
            echoes = self.text.split(b"\n")
            if self.text.endswith(b"\n"):
                echoes.pop()
            lines = _prediction_lines(echoes, predictions)
        return Scored(lines, len(self.ends), 0, self.chunk.blank, self.chunk.read_bytes)


def numbers_of(model: Model, chunk: Chunk, parameters: Mapping[str, Any],
               config: InstanceConfig = AS_READ, explain: bool = False) -> Numbers | None:
    """*chunk* parsed for the matrix door, when its lines are each one flat JSON array of
    numbers and nothing asks for the instances door (the request's other keys, an instance
    config, explanations, a model that takes instances); ``None`` otherwise."""
    if (not chunk.json_lines or parameters or config.shapes_records or explain
            or model.takes_instances):
        return None
    assert chunk.ends is not None
    text, ends = chunk.text, chunk.ends
    if b"\r" in text:  # CRLF line ends: the lines as they read without them
        text = text.replace(b"\r\n", b"\n")
        ends = line_ends(text)
    matrix = codecs.number_lines(text, ends)
    return None if matrix is None else Numbers(chunk, text, ends, matrix)


def numbers_scored(model: Model, numbers: Numbers, predictions: Any | None,
                   parameters: Mapping[str, Any], config: InstanceConfig = AS_READ) -> Scored:
    """*numbers*' output lines for the matrix door's *predictions*; when there are none (the
    door refused or failed), each of its records through the instances door."""
    scored = numbers.scored(predictions)
    if scored is None:
        scored = score_records(model, numbers.chunk, parameters, config)
    return scored


def predicted(model: Model, matrix: Tensor) -> Any | None:
    """*matrix*'s predictions through the door the server's predict routes take for a body
    of numbers; ``None`` when the model refuses or fails (the instances door then answers
    each line)."""
    try:
        return model.predict_matrix(matrix)
    except PredictError:
        return None


def _as_read(items: list[Any], json_lines: bool, parsed: list[Any] | None) -> list[Record]:
    """*items* (JSON lines' texts, or a table's rows) as records sent as they were read."""
    records: list[Record] = []
    for index, item in enumerate(items):
        if parsed is not None:
            echo, instance, error = item, parsed[index], None
        elif json_lines:
            echo, instance, error = _json_line(item)
        elif isinstance(item, Unreadable):
            echo, instance, error = codecs.dumps(item.text), None, InvalidInput(item.message)
        else:
            echo, instance, error = codecs.dumps(item), item, None
        records.append((b'"instance":' + echo, instance, error))
    return records


def _shaped(items: list[Any], json_lines: bool, config: InstanceConfig) -> list[Record]:
    """*items* as records shaped by *config* (Vertex AI's instance config): a record it
    cannot shape gets an error line, named as the others are."""
    records: list[Record] = []
    for item in items:
        error: PredictError | None = None
        if isinstance(item, Unreadable):
            record, error = None, InvalidInput(item.message)
            label = b'"instance":' + codecs.dumps(item.text)
        elif json_lines:
            echo, record, error = _json_line(item)
            field, value = config.label(record)
            label = (b'"instance":' + echo if field == "instance"
                     else b'"key":' + printed(value))
        else:
            record = item
            field, value = config.label(record)
            label = f'"{field}":'.encode() + printed(value)
        instance = None
        if error is None:
            try:
                instance = config.instance(record, table=not json_lines)
            except InvalidInput as exc:
                error = exc
        records.append((label, instance, error))
    return records


def _answered(model: Model, records: list[Record], parameters: Mapping[str, Any],
              blank: int, read_bytes: int, explain: bool = False) -> Scored:
    """The output lines of *records*: those without an error predicted (and *explain*:
    explained) together, every outcome printed after its label."""
    outcomes: list[tuple[bool, Any] | None] = [
        None if error is None else (False, error_body(error)) for _, _, error in records]
    wanted = [index for index, outcome in enumerate(outcomes) if outcome is None]
    instances = [records[index][1] for index in wanted]
    for index, predicted in zip(wanted, predict_each(model, instances, parameters, explain)):
        outcomes[index] = predicted
    parts: list[bytes] = []
    errors = 0
    for (label, _, _), outcome in zip(records, outcomes):
        assert outcome is not None
        ok, value = outcome
        if ok and explain:
            prediction, explanation = value
            parts.append(b"{" + label + b',"prediction":' + printed(prediction)
                         + b',"explanation":' + printed(explanation) + b"}\n")
        elif ok:
            parts.append(b"{" + label + b',"prediction":' + printed(value) + b"}\n")
        else:
            errors += 1
            parts.append(b"{" + label + b',"error":' + printed(value) + b"}\n")
    return Scored(b"".join(parts), len(records) - errors, errors, blank, read_bytes)


_SPACE = ord(" ")
"""No byte above this one starts a blank line (``bytes.strip`` removes ``\\t\\n\\v\\f\\r``
and the space)."""


def _line_texts(text: bytes) -> tuple[list[bytes], int]:
    """The lines of *text* without their line endings, and how many blank ones were left
    out. Lines that all start with a visible character (what their least, by bytes, tells
    in one pass) are kept as they are; others are looked at one by one."""
    lines = text.split(b"\n")
    if text.endswith(b"\n"):
        lines.pop()
    if lines and b"\r" not in text and min(lines)[:1] > bytes([_SPACE]):
        return lines, 0
    texts = [line.rstrip(b"\r") for line in lines]
    kept = [text for text in texts if text.strip()]
    return kept, len(texts) - len(kept)


def _prediction_lines(echoes: list[bytes], predictions: list[Any]) -> bytes:
    """``{"instance": <echo>, "prediction": <printed>}`` for each pair, as one piece: a
    list of plain numbers is printed in one call and joined at C speed, any other list one
    prediction at a time (:func:`printed`)."""
    values = _plain_values(predictions)
    if values is None or len(values) != len(echoes) or not echoes:
        values = [printed(value) for value in predictions]
    pairs = map(b',"prediction":'.join, zip(echoes, values))
    return b'{"instance":' + b'}\n{"instance":'.join(pairs) + b"}\n" if echoes else b""


_ECHO = b'{"instance":'
_AFTER_ECHO = b',"prediction":%s}\n' + _ECHO
"""What each line end of a chunk's text becomes in :func:`_text_prediction_lines`."""


def _text_prediction_lines(text: bytes, count: int, predictions: Any) -> bytes | None:
    """The output lines of the *count* lines of *text* (``\n`` line ends, the last one's
    optional; no blank line) and their *predictions*, without a piece per line: each line
    end becomes its prediction's place in one format string, filled by one ``%``. ``None``
    when a prediction is not a plain number, or a line holds a ``%``."""
    values = _plain_values(predictions)
    if values is None or len(values) != count or b"%" in text:
        return None
    if not text.endswith(b"\n"):
        text += b"\n"
    try:
        filled = text.replace(b"\n", _AFTER_ECHO) % tuple(values)
    except TypeError:  # not one line end per prediction
        return None
    return b"".join((_ECHO, memoryview(filled)[:-len(_ECHO)]))  # one copy, not two


def _plain_values(predictions: Any) -> list[bytes] | None:
    """Each of *predictions* as JSON, when all are plain numbers (printed in one call and
    split); ``None`` otherwise."""
    try:
        text = orjson.dumps(predictions, option=orjson.OPT_SERIALIZE_NUMPY)
    except (TypeError, ValueError, RecursionError):
        return None
    if any(mark in text for mark in (b"null", b'"', b"{")) or text.count(b"[") != 1:
        return None
    return text[1:-1].split(b",")


def _json_values(lines: list[bytes]) -> list[Any] | None:
    """Every line's JSON value; ``None`` when a line is not one JSON value that orjson
    reads (each line is then parsed by :func:`codecs.loads`, as a server reads it, to read
    NaN tokens and integers past 64 bits and to answer the bad lines).

    Each line is parsed on its own: lines joined into one array could pair up, a row cut
    over two lines reading as one value and the count still matching."""
    try:
        return [orjson.loads(line) for line in lines]
    except orjson.JSONDecodeError:
        return None


def _json_line(text: bytes) -> tuple[bytes, Any, PredictError | None]:
    try:
        return text, codecs.loads(text), None
    except PredictError as exc:
        return codecs.dumps(text.decode("utf-8", "replace")), None, InvalidInput(
            f"the line is not JSON: {exc.message}")


def predict_each(model: Model, instances: list[Any], parameters: Mapping[str, Any],
                 explain: bool = False) -> list[tuple[bool, Any]]:
    """One outcome per instance: the whole list at once, else its halves, down to the
    instances that fail alone. With *explain*, each prediction with its explanation (a
    pair), from Vertex AI's explain door.

    :raises CannotExplain: *explain*, and the model does not explain (whatever the
        instances: there is nothing to split).
    """
    if not instances:
        return []
    try:
        if explain:
            predictions, explanations = model.explain_instances(instances, **parameters)
            results: list[Any] = list(zip(predictions, explanations))
            given = min(len(predictions), len(explanations))
        else:
            results = model.predict_instances(instances, **parameters)
            given = len(results)
        if given != len(instances):
            raise PredictorFailed(f"model {model.name!r} returned {given} predictions for "
                                  f"{len(instances)} instances")
        return [(True, result) for result in results]
    except CannotExplain:
        raise
    except PredictError as exc:
        if len(instances) == 1:
            return [(False, error_body(exc))]
    middle = len(instances) // 2
    return (predict_each(model, instances[:middle], parameters, explain)
            + predict_each(model, instances[middle:], parameters, explain))


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
