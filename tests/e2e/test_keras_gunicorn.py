"""Keras files (``model.keras``, ``model.h5``; one input and several named ones) under real
gunicorn with 2 sync workers, asked over every protocol that carries named inputs: AI
Platform and TF Serving instances, TF Serving columnar inputs, V2 and grps over REST, and
gRPC for TF Serving, V2 and grps. Every answer is compared with ``model.predict`` on the same
file in this process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest

from tests.e2e.grpc_support import GrpcGunicornServer, answering_workers, generated_grps
from tests.e2e.server import request
from tests.keras_models import MODELS, keras_predict, sample_inputs

pytest.importorskip("flask_predict_tensorflow")
tf = pytest.importorskip("tensorflow")

import tritonclient.grpc as grpcclient  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.tensorflow]

ROWS = 3
Outputs = dict[str, np.ndarray]

V2_TYPES = {np.dtype("float32"): "FP32", np.dtype("int64"): "INT64",
            np.dtype("int32"): "INT32", np.dtype(object): "BYTES"}
GRPS_TYPES = {np.dtype("float32"): ("DT_FLOAT32", "flat_float32"),
              np.dtype("int64"): ("DT_INT64", "flat_int64"),
              np.dtype("int32"): ("DT_INT32", "flat_int32"),
              np.dtype(object): ("DT_STRING", "flat_string")}


@pytest.fixture(scope="module")
def server(keras_models: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[GrpcGunicornServer]:
    folder = tmp_path_factory.mktemp("keras_e2e")
    models: dict[str, Any] = {name: {"base_path": os.fspath(keras_models / name)}
                              for name in MODELS}
    models["named_h5"]["predictor"] = "tensorflow"  # named, not detected
    with GrpcGunicornServer(models, workers=2, log_path=folder / "server.log") as running:
        yield running


@pytest.fixture(scope="module")
def expected(keras_models: Path) -> dict[str, tuple[dict[str, np.ndarray], Outputs]]:
    """Each model's inputs and what ``model.predict`` answers, loaded here from its file."""
    import keras

    found = {}
    for name in MODELS:
        (file_name,) = os.listdir(keras_models / name / "1")
        model = keras.saving.load_model(keras_models / name / "1" / file_name, compile=False)
        inputs = sample_inputs(name, ROWS)
        found[name] = (inputs, keras_predict(model, inputs))
    return found


def same(got: Outputs, want: Outputs) -> None:
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        np.testing.assert_allclose(np.asarray(got[name], dtype=value.dtype), value,
                                   rtol=1e-6, atol=1e-7, err_msg=name)


def plain(value: np.ndarray) -> Any:
    """An input as JSON: strings as text."""
    if value.dtype == object:
        return [v.decode() for v in value.ravel()]
    return value.tolist()


def instances(inputs: dict[str, np.ndarray]) -> list[Any]:
    """Rows: objects keyed by input name; a single input's rows as they are."""
    if len(inputs) == 1:
        (value,) = inputs.values()
        return value.tolist()
    return [{name: plain(value[i:i + 1])[0] if value.ndim == 1 else value[i].tolist()
             for name, value in inputs.items()} for i in range(ROWS)]


def from_rows(predictions: list[Any], names: list[str]) -> Outputs:
    """Row answers (a list per row, or an object per row naming the outputs) as arrays."""
    if len(names) == 1:
        return {names[0]: np.asarray(predictions)}
    return {name: np.asarray([row[name] for row in predictions]) for name in names}


def post(server: GrpcGunicornServer, path: str, body: Any) -> Any:
    status, _, answer = request("POST", server.url + path, body=body)
    assert status == 200, answer
    return json.loads(answer)


# --- REST -------------------------------------------------------------------------------------

def ask_aiplatform(server: GrpcGunicornServer, name: str, inputs: dict[str, np.ndarray],
                   names: list[str]) -> Outputs:
    body = post(server, f"/v1/projects/demo/models/{name}:predict",
                {"instances": instances(inputs)})
    return from_rows(body["predictions"], names)


def ask_tfserving_rows(server: GrpcGunicornServer, name: str, inputs: dict[str, np.ndarray],
                       names: list[str]) -> Outputs:
    body = post(server, f"/v1/models/{name}:predict", {"instances": instances(inputs)})
    return from_rows(body["predictions"], names)


def ask_tfserving_columns(server: GrpcGunicornServer, name: str,
                          inputs: dict[str, np.ndarray], names: list[str]) -> Outputs:
    columns = {key: plain(value) if value.ndim == 1 else value.tolist()
               for key, value in inputs.items()}
    outputs = post(server, f"/v1/models/{name}:predict", {"inputs": columns})["outputs"]
    if len(names) == 1:
        return {names[0]: np.asarray(outputs)}
    return {key: np.asarray(value) for key, value in outputs.items()}


def ask_v2(server: GrpcGunicornServer, name: str, inputs: dict[str, np.ndarray],
           names: list[str]) -> Outputs:
    body = post(server, f"/v2/models/{name}/infer", {"inputs": [
        {"name": key, "shape": list(value.shape), "datatype": V2_TYPES[value.dtype],
         "data": plain(value) if value.dtype == object else value.ravel().tolist()}
        for key, value in inputs.items()]})
    return {out["name"]: np.asarray(out["data"]).reshape(out["shape"])
            for out in body["outputs"]}


def grps_tensors(inputs: dict[str, np.ndarray]) -> dict[str, Any]:
    return {"tensors": [{"name": key, "dtype": GRPS_TYPES[value.dtype][0],
                         "shape": list(value.shape),
                         GRPS_TYPES[value.dtype][1]: plain(value) if value.dtype == object
                         else value.ravel().tolist()} for key, value in inputs.items()]}


def from_grps(tensors: list[dict[str, Any]]) -> Outputs:
    return {t["name"]: np.asarray(t["flat_float32"], np.float32).reshape(
        [int(size) for size in t["shape"]]) for t in tensors}


def ask_grps(server: GrpcGunicornServer, name: str, inputs: dict[str, np.ndarray],
             names: list[str]) -> Outputs:
    body = post(server, "/grps/v1/infer/predict",
                {"model": f"{name}-1", "gtensors": grps_tensors(inputs)})
    return from_grps(body["gtensors"]["tensors"])


REST: list[Callable[..., Outputs]] = [ask_aiplatform, ask_tfserving_rows,
                                      ask_tfserving_columns, ask_v2, ask_grps]


@pytest.mark.parametrize("ask", REST, ids=lambda f: f.__name__[4:])
def test_rest_answers_are_model_predict_s(server: GrpcGunicornServer, expected: Any,
                                          ask: Callable[..., Outputs]) -> None:
    for name, (inputs, want) in expected.items():
        for _ in range(3):  # several requests: both workers answer
            same(ask(server, name, inputs, sorted(want)), want)


# --- gRPC -------------------------------------------------------------------------------------

def test_grpc_tfserving_and_v2_answers_are_model_predict_s(server: GrpcGunicornServer,
                                                           expected: Any) -> None:
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        with server.channel() as chan:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(chan)
            for name, (inputs, want) in expected.items():
                answer = stub.Predict(predict_request(name, inputs), timeout=30)
                same({key: tf.make_ndarray(t) for key, t in answer.outputs.items()}, want)
                tensors = []
                for key, value in inputs.items():
                    tensor = grpcclient.InferInput(key, list(value.shape), V2_TYPES[value.dtype])
                    tensor.set_data_from_numpy(value)
                    tensors.append(tensor)
                result = triton.infer(name, tensors)
                same({key: result.as_numpy(key) for key in want}, want)
    finally:
        triton.close()


def test_grpc_grps_answers_are_model_predict_s(server: GrpcGunicornServer, expected: Any,
                                               tmp_path: Path) -> None:
    pb2, pb2_grpc = generated_grps(tmp_path)
    with server.channel() as chan:
        stub = pb2_grpc.GrpsServiceStub(chan)
        for name, (inputs, want) in expected.items():
            message = json_format.ParseDict({"model": name, "gtensors": grps_tensors(inputs)},
                                            pb2.GrpsMessage())
            answer = json_format.MessageToDict(stub.Predict(message, timeout=30),
                                               preserving_proto_field_name=True)
            same(from_grps(answer["gtensors"]["tensors"]), want)


def predict_request(name: str, inputs: dict[str, np.ndarray]) -> Any:
    req = predict_pb2.PredictRequest()
    req.model_spec.name = name
    for key, value in inputs.items():
        req.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    return req


def test_both_workers_serve_the_keras_models(server: GrpcGunicornServer,
                                             expected: Any) -> None:
    inputs, want = expected["named_keras"]

    def ask(chan: Any) -> Any:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(chan)
        answer, call = stub.Predict.with_call(predict_request("named_keras", inputs),
                                              timeout=30)
        same({key: tf.make_ndarray(t) for key, t in answer.outputs.items()}, want)
        return call

    assert len(answering_workers(server, ask)) == 2


# --- metadata and errors ----------------------------------------------------------------------

def test_metadata_names_every_input_on_v2_and_tf_serving(server: GrpcGunicornServer) -> None:
    status, _, answer = request("GET", f"{server.url}/v2/models/named_keras")
    body = json.loads(answer)
    assert status == 200 and body["platform"] == "tensorflow_savedmodel"  # V2 names TF so
    assert [(t["name"], t["datatype"], t["shape"]) for t in body["inputs"]] == [
        ("age", "FP32", [-1]), ("city", "BYTES", [-1]), ("income", "FP32", [-1, 2]),
        ("rooms", "INT64", [-1])]
    assert [t["name"] for t in body["outputs"]] == ["kind", "price"]
    status, _, answer = request("GET", f"{server.url}/v1/models/named_h5/metadata")
    signature = json.loads(answer)["metadata"]["signature_def"]["signature_def"][
        "serving_default"]
    assert status == 200
    assert {k: v["dtype"] for k, v in signature["inputs"].items()} == {
        "size": "DT_FLOAT", "rooms": "DT_INT32"}
    assert sorted(signature["outputs"]) == ["output_0", "output_1"]


def test_bad_input_is_each_protocol_s_400(server: GrpcGunicornServer) -> None:
    for path, body, message in [
            ("/v1/models/classifier_keras:predict", {"inputs": {"features": [[1.0, 2.0]]}},
             "input 'features': shape [1, 2] does not fit the model's [-1, 4]"),
            ("/v1/projects/demo/models/classifier_h5:predict", {"instances": [[1.0, 2.0]]},
             "input 'features': shape [1, 2] does not fit the model's [-1, 4]"),
            ("/v2/models/named_keras/infer", {"inputs": [
                {"name": "age", "shape": [1], "datatype": "FP32", "data": [1.0]}]},
             "missing ['city', 'income', 'rooms']"),
            ("/grps/v1/infer/predict", {"model": "named_h5", "gtensors": {"tensors": [
                {"name": "size", "dtype": "DT_STRING", "shape": [1, 3],
                 "flat_string": ["a", "b", "c"]},
                {"name": "rooms", "dtype": "DT_INT32", "shape": [1, 1], "flat_int32": [1]}]}},
             "input size: expected float32 values, got strings")]:
        status, _, answer = request("POST", server.url + path, body=body)
        assert status == 400, (path, answer)
        assert message in answer.decode(), answer
