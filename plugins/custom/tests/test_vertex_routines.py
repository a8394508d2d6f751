"""Vertex AI custom prediction routines, served as Vertex AI's CPR model server calls them:
created with no arguments, ``load`` once with the version folder, then ``preprocess`` (the
whole body), ``predict``, ``postprocess`` (the answer) per request. The reference answers come
from Google's own ``CprModelServer``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from flask_predict.errors import FailedPrecondition, InvalidInput
from flask_predict.models.plugins import detect_predictor, manifests
from flask_predict_custom import CustomPredictor, VertexPredictor
from tests.routines import IRIS_ROWS, make_vertex, python, vertex_answers

BODIES: list[Any] = [
    {"instances": IRIS_ROWS},
    {"instances": IRIS_ROWS[:1], "parameters": {"scale": 1.5}},
]

ERRORS = '''
from fastapi import HTTPException


class Picky:
    def load(self, artifacts_uri):
        pass

    def preprocess(self, prediction_input):
        if "instances" not in prediction_input:
            raise HTTPException(status_code=400, detail="send instances")
        return prediction_input["instances"]

    def predict(self, instances):
        return [1 / x for x in instances]

    def postprocess(self, prediction_results):
        return {"predictions": prediction_results}
'''
ERROR_BODIES: list[Any] = [{"nothing": 1}, {"instances": [0]}, {"instances": [4]}]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("vertex")
    found = {kind: root / kind / "1" for kind in ("plain", "google", "signature", "errors")}
    make_vertex([(found["plain"], False, False), (found["google"], True, False),
                 (found["signature"], False, True)])
    found["errors"].mkdir(parents=True)
    (found["errors"] / "predictor.py").write_text(ERRORS)
    return found


@pytest.fixture(scope="module")
def reference(folders: dict[str, Path]) -> dict[str, list[tuple[int, Any]]]:
    """Google's server's answers, all computed in one process."""
    kinds = {"plain": BODIES, "google": BODIES, "signature": BODIES[:1],
             "errors": ERROR_BODIES}
    answers = vertex_answers([(folders[kind], "Picky" if kind == "errors" else
                               "CprPredictor", bodies) for kind, bodies in kinds.items()])
    return dict(zip(kinds, answers))


@pytest.fixture(params=["plain", "google"], ids=["plain-class", "google-base"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def served(folders: dict[str, Path], kind: str) -> Iterator[Any]:
    predictor = CustomPredictor.from_path(str(folders[kind]))
    yield predictor
    predictor.close()


def test_answers_as_googles_cpr_server(served: Any, kind: str,
                                       reference: dict[str, list[tuple[int, Any]]]) -> None:
    assert isinstance(served, VertexPredictor)
    meta = served.metadata()
    assert meta.request_door and meta.instances_door
    for body, (status, expected) in zip(BODIES, reference[kind]):
        assert status == 200 and served.predict_request(body) == expected


def test_named_class_and_detection(folders: dict[str, Path], kind: str,
                                   reference: dict[str, list[tuple[int, Any]]]) -> None:
    assert detect_predictor(str(folders[kind]), {}, manifests()) == "custom"
    predictor = VertexPredictor.from_path(str(folders[kind]),
                                          **{"class": "predictor:CprPredictor"})
    try:
        assert predictor.predict_request(BODIES[0]) == reference[kind][0][1]
    finally:
        predictor.close()


def test_other_protocols_need_a_signature(served: Any) -> None:
    with pytest.raises(FailedPrecondition, match="must declare a 'signature'"):
        served.predict(IRIS_ROWS)
    with pytest.raises(FailedPrecondition, match="Vertex AI prediction routine"):
        served.predict_tensors({"instances": np.array(IRIS_ROWS)})


def test_a_declared_signature_serves_rows(folders: dict[str, Path],
                                          reference: dict[str, list[tuple[int, Any]]]) -> None:
    (_, expected), = reference["signature"]
    predictor = CustomPredictor.from_path(str(folders["signature"]))
    try:
        meta = predictor.metadata()
        assert meta.request_door and not meta.instances_door
        assert [s.name for s in meta.signature.inputs] == ["features"]
        assert predictor.predict(IRIS_ROWS) == expected["predictions"]
        outputs = predictor.predict_tensors({"features": np.array(IRIS_ROWS)})
        labels = [p["label"].encode() for p in expected["predictions"]]
        assert outputs["label"].tolist() == labels
        np.testing.assert_allclose(outputs["scores"],
                                   [p["scores"] for p in expected["predictions"]])
    finally:
        predictor.close()


def test_errors_map_as_the_cpr_server_maps_them(
        folders: dict[str, Path], reference: dict[str, list[tuple[int, Any]]]) -> None:
    """FastAPI's ``HTTPException`` with a 4xx status is the client's error (400 here, with
    its detail); any other exception is the server's (500), as in Vertex AI's server."""
    assert [status for status, _ in reference["errors"]] == [400, 500, 200]
    predictor = CustomPredictor.from_path(str(folders["errors"]))
    try:
        with pytest.raises(InvalidInput, match="send instances"):
            predictor.predict_request(ERROR_BODIES[0])
        with pytest.raises(ZeroDivisionError):
            predictor.predict_request(ERROR_BODIES[1])
        assert predictor.predict_request(ERROR_BODIES[2]) == reference["errors"][2][1]
    finally:
        predictor.close()


def test_served_without_google_cloud_aiplatform(
        folders: dict[str, Path], reference: dict[str, list[tuple[int, Any]]]) -> None:
    """The plugin never imports Google's package: a plain routine class loads and answers
    in a process where it cannot be imported."""
    answer = python('''
        import json, sys
        sys.modules["google.cloud.aiplatform"] = None  # any import of it fails
        from flask_predict_custom import CustomPredictor
        predictor = CustomPredictor.from_path(sys.argv[1])
        print(json.dumps(predictor.predict_request(json.loads(sys.argv[2]))))
        ''', str(folders["plain"]), json.dumps(BODIES[0]))
    assert json.loads(answer) == reference["plain"][0][1]
