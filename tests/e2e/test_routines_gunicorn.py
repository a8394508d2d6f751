"""Google's prediction routines served unchanged under real gunicorn with 2 sync workers, all
by one server: AI Platform's tutorial routine with its pickled preprocessor, one routine in
two versions whose folders hold different code under the same module names, and Vertex AI
routines (a plain class, and one subclassing Google's ``Predictor`` with a declared
signature). Each is asked over the AI Platform and Vertex AI routes (and the other protocols,
REST and gRPC, through the declared signature), and every answer is compared with the
routine's own: run in a fresh process as Google's runtime runs it, or by Google's own CPR
model server."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from tests.e2e.grpc_support import GrpcGunicornServer
from tests.e2e.server import request, worker_pids
from tests.routines import (IRIS_ROWS, aiplatform_answers, make_tutorial, make_versioned,
                            make_vertex, make_vertex_echo, vertex_answers)

pytestmark = pytest.mark.e2e

AIP = "/v1/projects/demo/models/{}:predict"
ENDPOINT = "/v1/projects/demo/locations/us-central1/endpoints/{}"
CONTAINER = "/v1/endpoints/1/deployedModels/2:predict"
LIMIT = 64 * 1024
"""PREDICT_MAX_REQUEST_BYTES of this server."""
SCALER_ROWS = [1, 2.5]
VERTEX_BODIES: list[Any] = [
    {"instances": IRIS_ROWS},
    {"instances": IRIS_ROWS[:1], "parameters": {"scale": 1.5}},
]
NO_SIGNATURE = "over this protocol its class must declare a 'signature'"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("routines")
    make_tutorial(root / "tutorial" / "1")
    make_versioned(root / "scaler", 1, "one", "x * self.factor")
    make_versioned(root / "scaler", 2, "two", "x * self.factor + 1000")
    make_vertex([(root / "cpr" / "1", False, False), (root / "cpr-google" / "1", True, True)])
    make_vertex_echo(root / "vertex-echo" / "1")
    return root


@pytest.fixture(scope="module")
def expected(root: Path) -> dict[str, Any]:
    """Each routine's own answers: AI Platform's run with its modules top-level in a fresh
    process, Vertex AI's by Google's CprModelServer (the processes run side by side)."""
    with ThreadPoolExecutor(4) as pool:
        tutorial = pool.submit(aiplatform_answers, root / "tutorial" / "1",
                               "predictor.MyPredictor",
                               [(IRIS_ROWS, {}), (IRIS_ROWS, {"probabilities": True})])
        scalers = [pool.submit(aiplatform_answers, root / "scaler" / str(version),
                               "predictor.Routine", [(SCALER_ROWS, {})]) for version in (1, 2)]
        cpr = pool.submit(vertex_answers, [(root / kind / "1", "CprPredictor", VERTEX_BODIES)
                                           for kind in ("cpr", "cpr-google")])
    found: dict[str, Any] = dict(zip(("labels", "probabilities"), tutorial.result()))
    for version, answers in zip((1, 2), scalers):
        found[f"scaler-{version}"], = answers.result()
    assert found["scaler-1"][0]["label"] == "one" and found["scaler-2"][0]["label"] == "two"
    for kind, replies in zip(("cpr", "cpr-google"), cpr.result()):
        assert [status for status, _ in replies] == [200, 200]
        found[kind] = [body for _, body in replies]
    return found


@pytest.fixture(scope="module")
def server(root: Path, model_config: dict[str, Any],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrpcGunicornServer]:
    models = {
        "tutorial": {"base_path": str(root / "tutorial")},  # its class found by reading
        "scaler": {"base_path": str(root / "scaler"), "version_policy": {"all": {}},
                   "class": "predictor.Routine"},
        **{name: {"base_path": str(root / name)} for name in ("cpr", "cpr-google",
                                                               "vertex-echo")},
        "echo": model_config["echo"],  # answers which worker it runs in
    }
    endpoints = {name: name for name in ("tutorial", "cpr", "cpr-google", "vertex-echo")}
    endpoints.update({f"scaler-{v}": {"model": "scaler", "version": v} for v in (1, 2)})
    env = {"FLASK_PREDICT_VERTEX_ENDPOINTS": json.dumps(endpoints),
           "FLASK_PREDICT_VERTEX_PREDICT_ROUTE": CONTAINER,
           "FLASK_PREDICT_VERTEX_MODEL": "cpr-google",
           "FLASK_PREDICT_MAX_REQUEST_BYTES": str(LIMIT)}
    log = tmp_path_factory.mktemp("routines_server") / "server.log"
    with GrpcGunicornServer(models, workers=2, env=env, log_path=log) as running:
        assert len(worker_pids(running, want=2)) == 2
        yield running


def post(server: GrpcGunicornServer, path: str, body: Any = None,
         data: bytes | None = None) -> tuple[int, Any]:
    status, headers, answer = request("POST", server.url + path, body=body, data=data)
    assert headers.get("Content-Type") == "application/json", (status, answer[:300])
    return status, json.loads(answer)


def many(ask: Callable[[], tuple[int, Any]], times: int = 8) -> tuple[int, Any]:
    """*ask* from several threads at once (so both workers answer): the one answer all
    got."""
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: ask(), range(times)))
    assert all(answer == answers[0] for answer in answers), answers
    return answers[0]


def vertex_fields(model: str, version: int = 1) -> dict[str, str]:
    return {"deployedModelId": model, "modelDisplayName": model,
            "modelVersionId": str(version),
            "model": f"projects/demo/locations/us-central1/models/{model}"}


def test_the_tutorial_routine_with_its_pickled_preprocessor(
        server: GrpcGunicornServer, expected: dict[str, Any]) -> None:
    labels = {"predictions": expected["labels"]}
    probabilities = {"predictions": expected["probabilities"]}
    for path in (AIP, ENDPOINT + ":rawPredict"):
        path = path.format("tutorial")
        assert many(lambda: post(server, path, {"instances": IRIS_ROWS})) == (200, labels)
        assert many(lambda: post(server, path, {"instances": IRIS_ROWS,
                                                "probabilities": True})) == (200, probabilities)
    # an endpoint's parameters reach predict() as the keyword `parameters`
    assert many(lambda: post(server, ENDPOINT.format("tutorial") + ":predict",
                             {"instances": IRIS_ROWS, "parameters": {"x": 1}})) == \
        (200, {**labels, **vertex_fields("tutorial")})
    assert post(server, "/v1/models/tutorial:predict", {"instances": IRIS_ROWS}) == \
        (200, labels)


def test_two_versions_with_the_same_module_names_side_by_side(
        server: GrpcGunicornServer, expected: dict[str, Any]) -> None:
    def ask(version: int) -> tuple[int, Any]:
        return post(server, f"/v1/projects/demo/models/scaler/versions/{version}:predict",
                    {"instances": SCALER_ROWS})

    with ThreadPoolExecutor(4) as pool:  # interleaved, in both workers
        answers = list(pool.map(ask, [1, 2] * 6))
    assert answers == [(200, {"predictions": expected[f"scaler-{v}"]}) for v in [1, 2] * 6]
    for version in (1, 2):
        want = expected[f"scaler-{version}"]
        assert post(server, ENDPOINT.format(f"scaler-{version}") + ":predict",
                    {"instances": SCALER_ROWS}) == \
            (200, {"predictions": want, **vertex_fields("scaler", version)})
        assert post(server, f"/v1/models/scaler/versions/{version}:predict",
                    {"instances": SCALER_ROWS}) == (200, {"predictions": want})


@pytest.mark.parametrize("model", ["cpr", "cpr-google"], ids=["plain-class", "google-base"])
def test_vertex_routines_answer_as_googles_server(server: GrpcGunicornServer,
                                                  expected: dict[str, Any], model: str) -> None:
    for body, answer in zip(VERTEX_BODIES, expected[model]):
        for path in (AIP, ENDPOINT + ":rawPredict"):
            assert many(lambda: post(server, path.format(model), body)) == (200, answer)
        assert many(lambda: post(server, ENDPOINT.format(model) + ":predict", body)) == \
            (200, {**answer, **vertex_fields(model)})
        if model == "cpr-google":  # the model the container's route serves
            assert many(lambda: post(server, CONTAINER, body)) == (200, answer)


def test_a_declared_signature_serves_the_other_protocols(
        server: GrpcGunicornServer, expected: dict[str, Any]) -> None:
    predictions = expected["cpr-google"][0]["predictions"]
    labels = [p["label"] for p in predictions]
    scores = np.array([p["scores"] for p in predictions])
    assert post(server, "/v1/models/cpr-google:predict", {"instances": IRIS_ROWS}) == \
        (200, {"predictions": predictions})
    status, v2 = post(server, "/v2/models/cpr-google/infer", {"inputs": [
        {"name": "features", "datatype": "FP64", "shape": [3, 4],
         "data": np.ravel(IRIS_ROWS).tolist()}]})
    outputs = {output["name"]: output for output in v2["outputs"]}
    assert status == 200 and outputs["label"]["data"] == labels
    np.testing.assert_array_equal(np.reshape(outputs["scores"]["data"], (3, 3)), scores)
    status, grps = post(server, "/grps/v1/infer/predict",
                        {"model": "cpr-google", "ndarray": IRIS_ROWS})
    tensors = {tensor["name"]: tensor for tensor in grps["gtensors"]["tensors"]}
    assert status == 200 and tensors["label"]["flat_string"] == labels
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        features = grpcclient.InferInput("features", [3, 4], "FP64")
        features.set_data_from_numpy(np.array(IRIS_ROWS))
        result = client.infer("cpr-google", [features])
        assert [v.decode() for v in result.as_numpy("label")] == labels
        np.testing.assert_array_equal(result.as_numpy("scores"), scores)
        with pytest.raises(InferenceServerException) as refused:
            client.infer("cpr", [features])
        assert refused.value.status() == "StatusCode.FAILED_PRECONDITION"  # HTTP 400
        assert NO_SIGNATURE in refused.value.message()
    finally:
        client.close()


def test_without_a_signature_the_other_protocols_answer_a_clear_400(
        server: GrpcGunicornServer) -> None:
    for path, body, message in [
            ("/v1/models/cpr:predict", {"instances": IRIS_ROWS}, lambda b: b["error"]),
            ("/v2/models/cpr/infer", {"inputs": [{"name": "instances", "datatype": "FP64",
                                                  "shape": [1, 4], "data": IRIS_ROWS[0]}]},
             lambda b: b["error"]),
            ("/grps/v1/infer/predict", {"model": "cpr", "ndarray": IRIS_ROWS},
             lambda b: b["status"]["msg"])]:
        status, answer = post(server, path, body)
        assert status == 400 and NO_SIGNATURE in message(answer), (path, answer)


BAD = [
    (AIP, b"{not json", 400, lambda b: b["error"], "JSON Parse error"),
    (AIP, b"[1, 2]", 400, lambda b: b["error"], "must be a JSON object"),
    (AIP, b'{"instances": [' + b"1," * LIMIT + b"1]}", 413, lambda b: b["error"],
     "over the limit"),
    (AIP, b'{"instances": [1], "parameters": {"ask": "raise"}}', 500, lambda b: b["error"],
     "failed to predict"),
    (AIP, b'{"instances": [1], "parameters": {"ask": "set"}}', 500, lambda b: b["error"],
     "answered a value that is not JSON"),
    (ENDPOINT + ":predict", b"{not json", 400, lambda b: b["error"]["message"],
     "JSON Parse error"),
    (ENDPOINT + ":predict", b'"text"', 400, lambda b: b["error"]["message"],
     "Expected an object"),
    (ENDPOINT + ":predict", b'{"instances": [1], "parameters": {"ask": "bare"}}', 500,
     lambda b: b["error"]["message"], 'answered without a "predictions" list'),
    (ENDPOINT + ":predict", b'{"instances": [1], "parameters": {"ask": "circular"}}', 500,
     lambda b: b["error"]["message"], "answered a value that is not JSON"),
    (ENDPOINT + ":rawPredict", b"{not json", 400, lambda b: b["error"], "JSON Parse error"),
    (ENDPOINT + ":rawPredict", b'{"parameters": {"ask": "raise"}}', 500,
     lambda b: b["error"], "failed to predict"),
]


def test_bad_bodies_and_misbehaving_routines_leave_every_worker_alive(
        server: GrpcGunicornServer) -> None:
    pids = worker_pids(server, want=2)
    for _ in range(3):
        for path, data, status, message, text in BAD:
            got_status, answer = post(server, path.format("vertex-echo"), data=data)
            assert got_status == status and text in message(answer), (path, data[:60], answer)
    # the container's route serves cpr-google, whose preprocess needs "instances"
    status, answer = post(server, CONTAINER, {"no": "instances"})
    assert status == 500 and answer == {"error": "model 'cpr-google' failed to predict"}
    assert worker_pids(server, want=2) == pids, "no worker died"
