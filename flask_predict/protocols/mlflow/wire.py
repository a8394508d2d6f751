"""MLflow's scoring bodies, decoded and encoded without Flask: the content type and its
parameters, the four JSON formats (``dataframe_split``, ``dataframe_records``,
``instances``, ``inputs``) with their ``params``, CSV tables, and ``{"predictions": ...}``.

The texts of refusals are MLflow's own (``mlflow/pyfunc/scoring_server``), so a client that
matches on them keeps working; only the status of what MLflow answers 500 differs (4xx here).
"""

from __future__ import annotations

import csv
import io
import operator
from typing import Any, Mapping, NamedTuple

from ... import codecs
from ...errors import InvalidInput
from ...types import Limits, Signature, Tensor

JSON = "application/json"
CSV = "text/csv"
PARQUET = "application/vnd.apache.parquet"
CONTENT_TYPES = [CSV, JSON, PARQUET]
"""What MLflow's scoring server reads, in the order its refusal lists them."""

FORMATS = ("instances", "dataframe_split", "dataframe_records", "inputs")
"""The JSON input fields; a body holds exactly one."""

PARAMS = "params"

REQUIRED_INPUT_FORMAT = ("The input must be a JSON dictionary with exactly one of the input "
                         "fields {" + ", ".join(repr(name) for name in FORMATS) + "}")
SCORING_PROTOCOL_CHANGE_INFO = (
    "IMPORTANT: The MLflow Model scoring protocol has changed in MLflow version 2.0. If you are"
    " seeing this error, you are likely using an outdated scoring request format. To resolve the"
    " error, either update your request format or adjust your MLflow Model's requirements file to"
    " specify an older version of MLflow (for example, change the 'mlflow' requirement specifier"
    " to 'mlflow==1.30.0'). If you are making a request using the MLflow client"
    " (e.g. via `mlflow.pyfunc.spark_udf()`), upgrade your MLflow client to a version >= 2.0 in"
    " order to use the new request format. For more information about the updated MLflow"
    " Model scoring protocol in MLflow 2.0, see"
    " https://mlflow.org/docs/latest/models.html#deploy-mlflow-models.")

PREDICT_OUTPUT = "predict"
"""The output our plugins name for the estimator's ``predict``: what MLflow's pyfunc answers
for a model that also has ``predict_proba``, unless saved with ``pyfunc_predict_fn``."""


class UnsupportedMediaType(InvalidInput):
    """A content type (or one of its parameters) MLflow's server refuses with 415."""

    @property
    def http_status(self) -> int:
        return 415


class NotAcceptable(InvalidInput):
    """An ``Accept`` header that names no type this server answers (406)."""

    @property
    def http_status(self) -> int:
        return 406


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` header, its parameters checked as MLflow checks
    them: only ``charset=utf-8``; anything else (the pre-2.0 ``format=pandas-split``) is 415.
    No header at all is a 415 too (MLflow answers it 500)."""
    if content_type is None or not content_type.strip():
        raise UnsupportedMediaType(_only_types(content_type))
    mime, *pairs = [part.strip() for part in content_type.split(";")]
    parameters = {key: value for key, _, value in (pair.partition("=") for pair in pairs)}
    if parameters.get("charset", "utf-8").lower() != "utf-8":
        raise UnsupportedMediaType("The scoring server only supports UTF-8")
    unexpected = set(parameters) - {"charset"}
    if unexpected:
        raise UnsupportedMediaType(f"Unrecognized content type parameters: "
                                   f"{', '.join(sorted(unexpected))}. "
                                   f"{SCORING_PROTOCOL_CHANGE_INFO}")
    if mime not in (JSON, CSV):
        if mime == PARQUET:
            raise UnsupportedMediaType(f"Parquet bodies are not read by this server; send "
                                       f"{JSON} or {CSV}")
        raise UnsupportedMediaType(_only_types(content_type))
    return mime


def _only_types(content_type: str | None) -> str:
    return ("This predictor only supports the following content types: Types: "
            f"{CONTENT_TYPES}. Got '{content_type}'.")


class Body(NamedTuple):
    """A scoring request: its format, the data in it and its ``params``."""

    format: str
    data: Any
    params: Any
    """As sent: a model that takes none ignores them, as MLflow does (:func:`params`)."""


def params(body: Body) -> dict[str, Any]:
    """The ``params`` a model is handed: an object of names and values (none: empty)."""
    if body.params is None:
        return {}
    if not isinstance(body.params, dict):
        raise InvalidInput(f"Invalid input. 'params' must be a JSON object of parameter "
                           f"names and values, got {codecs.json_kind(body.params)}")
    return body.params


def decode_json(document: Any) -> Body:
    """A parsed JSON body as MLflow reads it: an object with exactly one input field."""
    if isinstance(document, list):
        raise InvalidInput(f"Invalid input. {REQUIRED_INPUT_FORMAT}. Received a list.")
    if not isinstance(document, dict):
        raise InvalidInput(f"Invalid input. {REQUIRED_INPUT_FORMAT}. Received unexpected "
                           f"input type '{type(document)}.")
    present = [name for name in document if name in FORMATS]
    if len(present) != 1:
        raise InvalidInput(f"{REQUIRED_INPUT_FORMAT}. Received dictionary with input fields: "
                           f"{present}. {SCORING_PROTOCOL_CHANGE_INFO}")
    return Body(present[0], document[present[0]], document.get(PARAMS))


SPLIT = "dataframe_split"
SPLIT_DEPTH = 4
"""How deeply ``{"dataframe_split": {"data": [[...]]}}`` nests."""


class NumberTable(NamedTuple):
    """A ``dataframe_split`` body of nothing but numbers, read straight into a matrix
    (``codecs.number_table``); its JSON, for a model that takes anything else."""

    columns: list[str]
    matrix: Tensor
    body: bytes


def number_split(body: bytes, limits: Limits) -> Body | None:
    """*body* when it is only a ``dataframe_split`` of named columns of numbers, read at
    once (no Python object per number); ``None`` for any other body (and under a depth limit
    that refuses it), which :func:`decode_json` reads after the full parse."""
    if limits.max_json_depth < SPLIT_DEPTH:
        return None
    found = codecs.number_table(body, SPLIT)
    return None if found is None else Body(SPLIT, NumberTable(*found, body), None)


def _doubles(signature: Signature) -> list[str] | None:
    """The inputs of a table of ``double`` columns (a tabular signature of FP64 inputs)."""
    if not signature.tabular or any(spec.datatype != "FP64" for spec in signature.inputs):
        return None
    return [spec.name for spec in signature.inputs]


# --- tables ---------------------------------------------------------------------------------

class Table(NamedTuple):
    """A data frame as it arrived: column names (``None``: by position) and rows."""

    columns: list[str] | None
    rows: list[list[Any]]


def split_table(value: Any) -> Table:
    """``dataframe_split``: pandas' ``split`` orient (``columns``, ``data``, ``index``)."""
    if not isinstance(value, dict) or "data" not in value:
        raise InvalidInput("Invalid input. 'dataframe_split' must be an object with 'data' "
                           "(a list of rows) and optional 'columns' and 'index'")
    rows, columns = value["data"], value.get("columns")
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise InvalidInput("Invalid input. 'dataframe_split' 'data' must be a list of rows, "
                           "each a list of values")
    if columns is not None:
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise InvalidInput("Invalid input. 'dataframe_split' 'columns' must be a list of "
                               "column names")
        if len(set(columns)) != len(columns):
            raise InvalidInput(f"Invalid input. 'dataframe_split' names a column twice: "
                               f"{columns}")
        for index, row in enumerate(rows):
            if len(row) != len(columns):
                raise InvalidInput(f"Invalid input. row {index} of 'dataframe_split' holds "
                                   f"{len(row)} values for {len(columns)} columns")
    return Table(columns, rows)


def records_table(value: Any) -> Table:
    """``dataframe_records``: one object per row (a column missing from a row is null)."""
    if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
        raise InvalidInput("Invalid input. 'dataframe_records' must be a list of objects, "
                           "one per row, naming its columns")
    names = list(value[0]) if value else []
    if len(names) > 1 and set(map(len, value)) == {len(names)}:
        # the usual table, every row naming the first row's columns (and no other, being
        # as long): read at C speed
        try:
            return Table(names, list(map(list, map(operator.itemgetter(*names), value))))
        except KeyError:
            pass
    columns: dict[str, None] = {}
    for row in value:
        columns.update(dict.fromkeys(row))
    return Table(list(columns), [[row.get(name) for name in columns] for row in value])


def table_tensors(table: Table, signature: Signature) -> dict[str, Tensor]:
    """A table as the model's inputs. Columns are taken by name where the signature names
    them (a tabular signature: extra columns ignored, order free) and by position otherwise
    (one input of feature rows: the frame's values, as MLflow hands them to the model).

    A table of nothing but numbers for a signature of ``double`` columns, all present, is
    read into one matrix at once (``codecs.named_rows``: the same values the columns would
    hold); any other table, and any refusal, is the columns' one by one."""
    if not table.rows:
        raise InvalidInput("Invalid input. the data frame holds no rows")
    if signature.tabular and table.columns is not None:
        doubles = _doubles(signature)
        if doubles is not None:
            matrix = codecs.named_rows(table.columns, table.rows, doubles)
            if matrix is not None:
                return matrix
        wanted = {spec.name for spec in signature.inputs}
        columns = {name: [row[index] for row in table.rows]
                   for index, name in enumerate(table.columns) if name in wanted}
        return codecs.columns_to_tensors(columns, signature)
    if signature.tabular or len(signature.inputs) == 1:
        return codecs.rows_to_tensors(table.rows, signature)
    raise InvalidInput(f"Invalid input. the model takes {len(signature.inputs)} inputs "
                       f"({', '.join(spec.name for spec in signature.inputs)}); send them "
                       "by name in 'inputs'")


def body_table(body: Body) -> Table:
    """The table of a ``dataframe_*`` or CSV body."""
    if body.format == CSV:
        table: Table = body.data
        return table
    if isinstance(body.data, NumberTable):  # a model that takes more than numbers
        return split_table(codecs.loads(body.data.body)[SPLIT])
    return split_table(body.data) if body.format == SPLIT else records_table(body.data)


def body_tensors(body: Body, signature: Signature) -> dict[str, Tensor]:
    """The model's inputs from any of the four JSON formats or a CSV table."""
    if body.format == "instances":
        return codecs.rows_to_tensors(body.data, signature)
    if body.format == "inputs":
        return codecs.columns_to_tensors(body.data, signature)
    if isinstance(body.data, NumberTable):
        doubles = _doubles(signature)
        matrix = None if doubles is None else codecs.named_matrix(
            body.data.columns, body.data.matrix, doubles)
        if matrix is not None:
            return matrix
    return table_tensors(body_table(body), signature)


def body_instances(body: Body) -> list[Any]:
    """The instances of a predictor whose door is ``predict(instances)``: rows as objects
    naming their columns where the body names them, else as sent."""
    data = body.data
    if body.format == "inputs" and isinstance(data, dict):  # columnar: one object per row
        if not all(isinstance(values, list) for values in data.values()):
            raise InvalidInput("Invalid input. each column of 'inputs' must be a list")
        if len({len(values) for values in data.values()}) > 1:
            raise InvalidInput("Invalid input. the columns of 'inputs' differ in length")
        return [dict(zip(data, values)) for values in zip(*data.values())]
    if body.format in ("instances", "inputs"):
        if not isinstance(data, list) or not data:
            raise InvalidInput(f"Invalid input. '{body.format}' must be a non-empty list of "
                               "rows or an object of columns")
        return data
    table = body_table(body)
    if table.columns is None:
        return table.rows
    return [dict(zip(table.columns, row)) for row in table.rows]


def decode_csv(text: bytes) -> Body:
    """A CSV body: its table, no ``params`` (MLflow reads none from CSV)."""
    return Body(CSV, csv_table(text), {})


def csv_table(text: bytes) -> Table:
    """A CSV body as ``pandas.read_csv`` reads it: a header row of column names, then one
    row per line; each column all integers, else all numbers, else text (an empty cell is
    missing: null)."""
    try:
        lines = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"Invalid input. Ensure that input is a valid UTF-8 encoded "
                           f"string. Error: '{exc!r}'")
    try:
        header, *rows = list(csv.reader(io.StringIO(lines)))
    except (csv.Error, ValueError) as exc:
        raise InvalidInput(f"Failed to parse input as a Pandas DataFrame. Ensure that the "
                           f"input is a valid CSV-formatted Pandas DataFrame produced using "
                           f"the `pandas.DataFrame.to_csv()` method. Error: '{exc}'")
    rows = [row for row in rows if row]
    for number, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise InvalidInput(f"Failed to parse input as a Pandas DataFrame. Ensure that the "
                               f"input is a valid CSV-formatted Pandas DataFrame produced "
                               f"using the `pandas.DataFrame.to_csv()` method. Error: "
                               f"'Error tokenizing data. Expected {len(header)} fields in "
                               f"line {number}, saw {len(row)}'")
    columns = [_csv_column([row[index] for row in rows]) for index in range(len(header))]
    return Table(header, [list(values) for values in zip(*columns)])


def _csv_column(cells: list[str]) -> list[Any]:
    present = [cell for cell in cells if cell != ""]
    for kind in (int, float):
        try:
            values = [kind(cell) if cell != "" else None for cell in cells]
        except ValueError:
            continue
        if kind is int and len(present) < len(cells):
            continue  # pandas: a missing value makes an integer column float
        return values
    return [cell if cell != "" else None for cell in cells]


# --- answers --------------------------------------------------------------------------------

def predictions(outputs: Mapping[str, Tensor]) -> Any:
    """The predictions as MLflow prints a pyfunc's answer: one output as its nested list
    (a numpy array's ``tolist()``), several as the records of a data frame (one object per
    row, naming the outputs). The view asks for the outputs the model's own ``predict``
    answers (``ModelService.instance_outputs``); where those are all and include ``predict``
    with others (``predict_proba``), ``predict`` alone, as MLflow's flavors answer."""
    if len(outputs) > 1 and PREDICT_OUTPUT in outputs:
        outputs = {PREDICT_OUTPUT: outputs[PREDICT_OUTPUT]}
    return codecs.tensors_to_rows(outputs)


def answer(predicted: Any) -> dict[str, Any]:
    return {"predictions": predicted}


def csv_answer(predicted: list[Any]) -> str:
    """``Accept: text/csv`` (SageMaker's batch transform): one line per prediction, its
    values comma-separated (objects: their values in order), no header."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in predicted:
        if isinstance(row, dict):
            row = list(row.values())
        writer.writerow(row if isinstance(row, list) else [row])
    return out.getvalue()
