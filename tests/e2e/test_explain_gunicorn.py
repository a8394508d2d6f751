"""Explanations under real gunicorn with 2 sync workers (scikit-learn, XGBoost and LightGBM
loaded once in the master, CatBoost and a custom routine in each worker): every route
answers attributions that add up to the library's own raw output, in each protocol's
shape, from both workers; a model that cannot explain answers its clear error and no
worker dies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest
import xgboost as xgb

from tests.e2e.server import GunicornServer, request, worker_pids
from tests.explained import assert_additive, rows_of
from tests.gbm_models import ROWS as TABLE_ROWS, catboost_frame, frame, train_catboost, \
    train_lightgbm
from tests.models import make_explaining

pytestmark = pytest.mark.e2e

ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]
XGB_ROWS = [[None, 0.5, -1.0, 2.0], [0.01, 0.5, -1.0, 2.0]]
ROUTES = {"aiplatform": "/v1/projects/demo/models/{}:explain",
          "vertex": "/v1/projects/demo/locations/us-central1/endpoints/{}:explain",
          "kserve_v1": "/v1/models/{}:explain"}
KEYS = {"aiplatform": {"explanations"},
        "vertex": {"explanations", "deployedModelId", "predictions"},
        "kserve_v1": {"predictions", "explanations"}}


def post(server: GunicornServer, path: str, body: Any) -> tuple[int, Any]:
    status, _, data = request("POST", server.url + path, body=body)
    return status, json.loads(data)


def test_every_route_explains_under_two_workers(model_config: dict[str, Any], model_root: Path,
                                                tmp_path: Path) -> None:
    house = make_explaining(tmp_path / "house")
    lightgbm = train_lightgbm(tmp_path / "lightgbm", "tier", "joblib")
    catboost = train_catboost(tmp_path / "catboost", "sold", "json")
    models = {**model_config, "house": {"base_path": str(house), "predictor": "custom",
                                        "class": "predictor.HousePrice"},
              "lightgbm": {"base_path": str(tmp_path / "lightgbm")},
              "catboost": {"base_path": str(tmp_path / "catboost")}}
    # CatBoost reads no missing category (a missing color is sent as "none") and takes
    # its categories as text
    as_catboost = [{**row, "color": row["color"] or "none"} for row in TABLE_ROWS]
    sent = {"lightgbm": TABLE_ROWS,
            "catboost": [{**row, "grade": str(row["grade"])} for row in as_catboost]}
    raw = {"lightgbm": lightgbm.predict(frame(TABLE_ROWS), raw_score=True),
           "catboost": catboost.predict(catboost_frame(as_catboost, text=False),
                                        prediction_type="RawFormulaVal").reshape(-1, 1)}
    iris = joblib.load(model_root / "iris" / "1" / "model.joblib")
    iris_raw = iris.decision_function(np.array(ROWS))
    booster = xgb.Booster(model_file=str(model_root / "xgb" / "1" / "model.json"))
    xgb_raw = booster.predict(xgb.DMatrix(np.array(XGB_ROWS, dtype=float), missing=np.nan),
                              output_margin=True)
    with GunicornServer(models, workers=2, log_path=tmp_path / "log") as server:
        pids = worker_pids(server, want=2)
        for _ in range(3):  # several times each, so that both workers answer
            for protocol, route in ROUTES.items():
                status, answer = post(server, route.format("iris"), {"instances": ROWS})
                assert status == 200 and set(answer) == KEYS[protocol]
                for row, attributions in enumerate(rows_of(answer["explanations"])):
                    for k, attribution in enumerate(attributions):
                        assert_additive(attribution, float(iris_raw[row, k]))
                status, answer = post(server, route.format("xgb"), {"instances": XGB_ROWS})
                assert status == 200
                for row, (attribution,) in enumerate(rows_of(answer["explanations"])):
                    assert_additive(attribution, float(xgb_raw[row]))
                for name in ("lightgbm", "catboost"):
                    status, answer = post(server, route.format(name),
                                          {"instances": sent[name]})
                    assert status == 200, answer
                    for row, attributions in enumerate(rows_of(answer["explanations"])):
                        for k, attribution in enumerate(attributions):
                            assert_additive(attribution, float(raw[name][row, k]))
                status, answer = post(server, route.format("house"),
                                      {"instances": [{"rooms": 2, "age": 4}]})
                assert status == 200
                assert answer["explanations"][0]["attributions"][0]["featureAttributions"] \
                    == {"rooms": 60.0, "age": -2.0}
                status, answer = post(server, route.format("echo"), {"instances": [1]})
                message = answer["error"]["message"] if protocol == "vertex" \
                    else answer["error"]
                assert status == 400 and "cannot explain" in message
        assert worker_pids(server, want=2) == pids, "no worker died"
