"""MLflow model folders served by real gunicorn with two workers: a flat scikit-learn folder
(skops) and an XGBoost one loaded natively once in the master and shared, a custom
PythonModel loaded through mlflow.pyfunc in each worker; answers equal mlflow's own."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.e2e.server import GunicornServer, request
from tests.mlflow.models import NUMBERS, ROWS, frame, reference, save_all

pytest.importorskip("mlflow")
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GunicornServer,
                                                                          dict[str, Path]]]:
    root = tmp_path_factory.mktemp("mlflow_e2e")
    folders = save_all(root)
    models = {"sk": {"base_path": str(folders["sk_skops"])},  # flat: version 1
              "xgb": {"base_path": str(folders["xgb"])},
              "custom": {"base_path": str(folders["custom"])}}
    with GunicornServer(models, workers=2, log_path=root / "server.log",
                        timeout=240) as server:
        yield server, folders


def post(server: GunicornServer, path: str, body: Any) -> tuple[int, Any]:
    status, _, data = request("POST", server.url + path,
                              data=json.dumps(body).encode())  # NaN as TF Serving writes it
    return status, json.loads(data)


def close(got: list[Any], want: list[Any]) -> bool:
    return len(got) == len(want) and all(
        math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-6) if isinstance(w, float) else g == w
        for g, w in zip(got, want))


def test_every_worker_answers_as_mlflow(served: tuple[GunicornServer, dict[str, Path]]) -> None:
    server, folders = served
    for _ in range(4):  # both workers, most likely
        status, body = post(server, "/v1/projects/p/models/sk:predict", {"instances": ROWS})
        assert status == 200, body
        assert body["predictions"] == reference(folders["sk_skops"], frame(ROWS))
        status, body = post(server, "/v1/projects/p/models/xgb:predict",
                            {"instances": NUMBERS})
        assert status == 200, body
        assert close(body["predictions"], reference(folders["xgb"], frame(NUMBERS)))
        status, body = post(server, "/v1/projects/p/models/custom:predict",
                            {"instances": NUMBERS, "parameters": {"factor": 3.0}})
        assert status == 200, body
        assert close(body["predictions"],
                     reference(folders["custom"], frame(NUMBERS), {"factor": 3.0}))


def test_native_flavors_are_shared_and_pyfunc_is_not(
        served: tuple[GunicornServer, dict[str, Path]]) -> None:
    server, _ = served
    log = server.log_text()
    assert "model 'sk': version 1 shared from the master" in log
    assert "model 'xgb': version 1 shared from the master" in log
    assert "model 'custom': version 1 shared from the master" not in log


def test_bad_bodies_are_4xx_never_500(served: tuple[GunicornServer, dict[str, Path]]) -> None:
    server, _ = served
    for name, body in (("sk", {"instances": [{"age": "old", "income": 1.0, "city": "x"}]}),
                       ("xgb", {"instances": [{"b": 1.0}]}),
                       ("custom", {"instances": [{"a": 1.0, "b": 1.0}],
                                   "parameters": {"factor": "three"}})):
        status, answer = post(server, f"/v1/projects/p/models/{name}:predict", body)
        assert status == 400, answer
        status, answer = post(server, f"/v2/models/{name}/infer", {"inputs": [
            {"name": "a", "datatype": "BYTES", "shape": [1], "data": ["x"]}]})
        assert 400 <= status < 500, answer
