"""Every body sent to ``mlflow models serve --env-manager local`` (MLflow's own scoring
server, started here on the same model folders) and to our MLflow routes: where MLflow
answers 200, the same predictions; where it answers 4xx, a 4xx (415 where it says 415); where
it answers 500, a 4xx."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Iterator

import pytest
from flask.testing import FlaskClient

from tests.conftest import AppFactory
from tests.e2e.server import free_port
from tests.tabular_models import PEOPLE_ROWS

from .conftest import single_app
from .models import IRIS_COLUMNS, IRIS_ROWS, close

pytestmark = pytest.mark.e2e

PLUGINS, PYFUNC = "flask_predict.predictors", "mlflow"
"""The entry points our plugins are found by, and the name of the python_function one."""

JSON = "application/json"
Body = tuple[str | None, bytes]


def _json(value: Any) -> Body:
    return JSON, json.dumps(value).encode()


def _csv(text: str) -> Body:
    return "text/csv", text.encode()


IRIS_CSV = ",".join(IRIS_COLUMNS) + "\n" + "\n".join(",".join(map(str, r)) for r in IRIS_ROWS)
RECORDS = [dict(zip(IRIS_COLUMNS, row)) for row in IRIS_ROWS]

COMMON: dict[str, Body] = {
    "no content type": (None, json.dumps({"instances": IRIS_ROWS}).encode()),
    "format=pandas-split": ("application/json; format=pandas-split", b"{}"),
    "format=pandas-records": ("application/json; format=pandas-records", b"[]"),
    "csv format=": ("text/csv; format=pandas-split", IRIS_CSV.encode()),
    "latin-1": ("application/json; charset=latin-1", b"{}"),
    "text/plain": ("text/plain", b"{}"),
    "form": ("application/x-www-form-urlencoded", b"a=1"),
    "broken JSON": (JSON, b"{bad"),
    "not UTF-8 JSON": (JSON, b'{"instances": "\xff"}'),
    "a list": _json([1, 2]),
    "a number": _json(3),
    "no input field": _json({"data": IRIS_ROWS}),
    "two input fields": _json({"instances": IRIS_ROWS, "inputs": IRIS_ROWS}),
    "ragged CSV": _csv("a,b\n1\n1,2,3\n"),
    "CSV not UTF-8": ("text/csv", b"\xff,a\n1,2\n"),
}

BODIES: dict[str, dict[str, Body]] = {
    "iris": {
        "dataframe_split": _json({"dataframe_split": {"columns": IRIS_COLUMNS,
                                                      "data": IRIS_ROWS}}),
        "split, index": _json({"dataframe_split": {"index": [4, 5, 6],
                                                   "columns": IRIS_COLUMNS,
                                                   "data": IRIS_ROWS}}),
        "split, reordered and an extra column": _json({"dataframe_split": {
            "columns": ["extra", *reversed(IRIS_COLUMNS)],
            "data": [[0, *reversed(row)] for row in IRIS_ROWS]}}),
        "dataframe_records": _json({"dataframe_records": RECORDS}),
        "instances of objects": _json({"instances": RECORDS}),
        "inputs of columns": _json({"inputs": {name: [row[i] for row in IRIS_ROWS]
                                               for i, name in enumerate(IRIS_COLUMNS)}}),
        "params": _json({"dataframe_records": RECORDS, "params": {}}),
        "csv": _csv(IRIS_CSV),
        "csv utf-8": ("text/csv; charset=utf-8", IRIS_CSV.encode()),
        "integers for doubles": _json({"dataframe_records": [
            dict(zip(IRIS_COLUMNS, [5, 3, 1, 0]))]}),
        "a missing column": _json({"dataframe_records": [
            {name: 1.0 for name in IRIS_COLUMNS[1:]}]}),
        "text for a double": _json({"dataframe_records": [
            {**RECORDS[0], IRIS_COLUMNS[1]: "x"}]}),
        "csv with text": _csv(",".join(IRIS_COLUMNS) + "\n1,x,2,3\n"),
        "csv missing a column": _csv(",".join(IRIS_COLUMNS[1:]) + "\n1,2,3\n"),
        "params not an object": _json({"dataframe_records": RECORDS, "params": [1]}),
        "split without data": _json({"dataframe_split": {"columns": IRIS_COLUMNS}}),
        **COMMON,
    },
    "matrix": {
        "dataframe_split": _json({"dataframe_split": {"data": IRIS_ROWS}}),
        "instances": _json({"instances": IRIS_ROWS}),
        "inputs": _json({"inputs": IRIS_ROWS}),
        "instances of the wrong width": _json({"instances": [[1.0, 2.0]]}),
        "ragged instances": _json({"instances": [[1.0, 2.0, 3.0, 4.0], [1.0]]}),
        "text in the matrix": _json({"instances": [["a", "b", "c", "d"]]}),
        **COMMON,
    },
    "people": {
        "dataframe_records": _json({"dataframe_records": PEOPLE_ROWS}),
        "dataframe_split": _json({"dataframe_split": {
            "columns": list(PEOPLE_ROWS[0]),
            "data": [list(row.values()) for row in PEOPLE_ROWS]}}),
        "csv": _csv("age,income,city,segment\n31,40000.5,Paris,retail\n"
                    "58,61000.0,Rome,\n"),
        "a number for the city": _json({"dataframe_records": [
            {**PEOPLE_ROWS[0], "city": 3}]}),
        "no age": _json({"dataframe_records": [
            {k: v for k, v in PEOPLE_ROWS[0].items() if k != "age"}]}),
        **COMMON,
    },
}

MLFLOW_ROWS = [{"age": 31.0, "income": 40000.0, "city": "paris"},
               {"age": 58.0, "income": 12000.0, "city": "lyon"},
               {"age": 22.0, "income": 95000.0, "city": "nice"}]
TABLE: dict[str, Body] = {
    "dataframe_records": _json({"dataframe_records": MLFLOW_ROWS}),
    "dataframe_split": _json({"dataframe_split": {
        "columns": ["city", "age", "income"],
        "data": [[r["city"], r["age"], r["income"]] for r in MLFLOW_ROWS]}}),
    "instances of objects": _json({"instances": MLFLOW_ROWS}),
    "csv": _csv("age,income,city\n31,40000,paris\n58,12000,lyon\n"),
    "a number for the city": _json({"dataframe_records": [{**MLFLOW_ROWS[0], "city": 3}]}),
    "text for the age": _json({"dataframe_records": [{**MLFLOW_ROWS[0], "age": "old"}]}),
    "no income": _json({"dataframe_records": [{"age": 1.0, "city": "nice"}]}),
}
"""Bodies for the MLflow test folders' pipeline (a string column), saved with MLflow 3's
default serialization (skops) and with ``pyfunc_predict_fn="predict_proba"``."""

CUSTOM_ROWS = [{"a": 1.0, "b": 0.5}, {"a": 4.0, "b": 0.0}]
BODIES["sk_skops"] = {**TABLE, **COMMON}
BODIES["sk_proba"] = {**TABLE, **COMMON}
BODIES["custom"] = {
    "records": _json({"dataframe_records": CUSTOM_ROWS}),
    "records, params": _json({"dataframe_records": CUSTOM_ROWS, "params": {"factor": 3.0}}),
    "split, params": _json({"dataframe_split": {"columns": ["a", "b"],
                                                "data": [[1.0, 0.5], [4.0, 0.0]]},
                            "params": {"factor": 0.5}}),
    "params of the wrong type": _json({"dataframe_records": CUSTOM_ROWS,
                                       "params": {"factor": "three"}}),
    "params not an object": _json({"dataframe_records": CUSTOM_ROWS, "params": [3]}),
    "csv": _csv("a,b\n1.0,0.5\n4.0,0.0\n"),
    **COMMON,
}
"""A custom ``PythonModel`` (``mlflow.pyfunc``) with a ``factor`` param and code_paths."""

ACCEPTED_ON_PURPOSE: set[tuple[str, str]] = set()
"""Bodies MLflow refuses that we answer, on purpose (docs/protocols/mlflow.md)."""
REFUSED_ON_PURPOSE = {("sk_skops", "a number for the city"),
                      ("sk_proba", "a number for the city")}
"""Bodies MLflow answers that we refuse with a 400, on purpose: a number where the signature
says text is not cast to text (docs/protocols/mlflow.md)."""


class Reference:
    """``mlflow models serve`` on one model folder, on a free port of 127.0.0.1."""

    def __init__(self, folder: Path, log: Path) -> None:
        self.port = free_port()
        bin_dir = str(Path(sys.executable).parent)  # uvicorn, started by mlflow by name
        env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
        self.log = log
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "mlflow", "models", "serve", "-m", str(folder),
                 "--env-manager", "local", "-h", "127.0.0.1", "-p", str(self.port), "-w", "1"],
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while self.post_status("GET", "/ping") != 200:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"mlflow models serve did not start: "
                                   f"{log.read_text()[-3000:]}")
            time.sleep(0.3)

    def post_status(self, method: str, path: str) -> int:
        try:
            return self.send(method, path, None, b"")[0]
        except OSError:
            return 0

    def send(self, method: str, path: str, content_type: str | None,
             data: bytes) -> tuple[int, str, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.putrequest(method, path)
            if content_type is not None:
                connection.putheader("Content-Type", content_type)
            connection.putheader("Content-Length", str(len(data)))
            connection.endheaders(data)
            answer = connection.getresponse()
            return answer.status, answer.getheader("Content-Type", ""), answer.read()
        finally:
            connection.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()


@pytest.fixture(scope="session")
def folders(mlflow_models: dict[str, dict[str, str]],
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """``PREDICT_MODELS`` of every model compared: ours (version folders), and the MLflow
    folders of tests/mlflow (flat)."""
    from tests.mlflow.models import save_all

    saved = save_all(tmp_path_factory.mktemp("mlflow-folders"))
    return {**mlflow_models, **{name: {"base_path": str(saved[name])}
                                for name in ("sk_skops", "sk_proba", "custom")}}


@pytest.fixture(scope="module", params=sorted(BODIES))
def pair(request: pytest.FixtureRequest, make_app: AppFactory,
         folders: dict[str, dict[str, str]],
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Reference,
                                                                     FlaskClient]]:
    """(model name, MLflow's server on its folder, our app serving only it)."""
    name: str = request.param
    if name == "custom" and PYFUNC not in {e.name for e in entry_points(group=PLUGINS)}:
        pytest.skip("needs flask-predict's mlflow plugin installed (plugins/mlflow)")
    base = Path(folders[name]["base_path"])
    folder = base / "1" if (base / "1").is_dir() else base
    reference = Reference(folder, tmp_path_factory.mktemp("reference") / "log")
    try:
        yield name, reference, single_app(make_app, folders, name).test_client()
    finally:
        reference.stop()


def ours(client: FlaskClient, content_type: str | None, data: bytes) -> tuple[int, str, bytes]:
    headers = {"Content-Type": content_type} if content_type is not None else {}
    answer = client.post("/invocations", data=data, headers=headers)
    return answer.status_code, answer.content_type, answer.data


def test_every_body_answers_as_mlflow_answers(pair: tuple[str, Reference, FlaskClient],
                                              request: pytest.FixtureRequest) -> None:
    name, reference, client = pair
    differences = []
    for case, (content_type, data) in BODIES[name].items():
        theirs = reference.send("POST", "/invocations", content_type, data)
        mine = ours(client, content_type, data)
        why = compare(name, case, theirs, mine)
        if why:
            differences.append(f"{case}: {why}\n  mlflow {theirs[0]} {theirs[2][:300]!r}\n"
                               f"  ours   {mine[0]} {mine[2][:300]!r}")
    assert not differences, "\n".join(differences)


def compare(name: str, case: str, theirs: tuple[int, str, bytes],
            mine: tuple[int, str, bytes]) -> str:
    """Why our answer is not MLflow's, or an empty string."""
    (status, _, body), (my_status, my_type, my_body) = theirs, mine
    if not my_type.startswith(JSON):
        return f"our answer is {my_type}"
    answer = json.loads(my_body)
    if my_status != 200:
        if set(answer) != {"error_code", "message"}:
            return "not MLflow's error shape"
        if "Traceback" in answer["message"] or "/tmp/" in answer["message"]:
            return "a traceback or a server path in the message"
    if (name, case) in REFUSED_ON_PURPOSE:
        return "" if my_status == 400 else "we should refuse it (on purpose)"
    if status == 200:
        if my_status != 200:
            return "MLflow answers it, we refuse it"
        expected = json.loads(body)["predictions"]
        return "" if close(answer["predictions"], expected) else "other predictions"
    if (name, case) in ACCEPTED_ON_PURPOSE:
        return "" if my_status == 200 else "we should answer it (on purpose)"
    if status == 415 or status >= 500:
        return "" if 400 <= my_status < 500 and (status != 415 or my_status == 415) else (
            f"MLflow {status}, we {my_status}")
    return "" if 400 <= my_status < 500 else f"MLflow {status}, we {my_status}"
