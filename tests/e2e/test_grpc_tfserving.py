"""TF Serving's gRPC API through tensorflow-serving-api's own ``PredictionServiceStub`` and
``ModelServiceStub``, under real gunicorn with 2 workers, against TF Serving's test
SavedModels, a SavedModel the test exports, and scikit-learn/XGBoost models: every answer
equals the REST answer for the same model and input, and errors carry TF Serving's codes.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from tests.e2e.grpc_support import GrpcGunicornServer
from tests.e2e.server import request
from tests.tf_models import TAG, export_multi

pytest.importorskip("flask_predict_tensorflow")
tf = pytest.importorskip("tensorflow")

import grpc  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2,  # noqa: E402
                                     get_model_status_pb2, inference_pb2, model_service_pb2_grpc,
                                     predict_pb2, prediction_service_pb2_grpc, regression_pb2)

pytestmark = [pytest.mark.e2e, pytest.mark.tensorflow]

ROWS = np.array([[5.1, 3.5, 1.4, 0.2], [6.2, 2.9, 4.3, 1.3], [7.7, 3.0, 6.1, 2.3]])


MAX_INSTANCES = 1000


@pytest.fixture(scope="module")
def server(model_config: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
           tfserving_models: Path) -> Iterator[GrpcGunicornServer]:
    folder = tmp_path_factory.mktemp("grpc_tf")
    models = {
        **model_config,
        "half_plus_two": {"base_path": os.fspath(tfserving_models / "saved_model_half_plus_two_cpu"),
                          "version_labels": {"stable": 123}},
        "half_plus_three": {"base_path": os.fspath(tfserving_models / "saved_model_half_plus_three")},
        "multi": {"base_path": os.fspath(export_multi(folder / "multi"))},
    }
    with GrpcGunicornServer(models, workers=2, log_path=folder / "server.log",
                            env={"FLASK_PREDICT_MAX_INSTANCES": str(MAX_INSTANCES)}) as running:
        yield running


@pytest.fixture()
def stub(server: GrpcGunicornServer) -> Iterator[Any]:
    with server.channel() as chan:
        yield prediction_service_pb2_grpc.PredictionServiceStub(chan)


def rest(server: GrpcGunicornServer, method: str, path: str, body: Any = None
         ) -> tuple[int, Any]:
    status, _, answer = request(method, server.url + path, body=body)
    return status, json.loads(answer)


def predict_request(model: str, inputs: dict[str, np.ndarray], signature: str = "",
                    version: int | None = None, label: str = "") -> Any:
    req = predict_pb2.PredictRequest()
    req.model_spec.name = model
    req.model_spec.signature_name = signature
    if version is not None:
        req.model_spec.version.value = version
    if label:
        req.model_spec.version_label = label
    for alias, array in inputs.items():
        req.inputs[alias].CopyFrom(tf.make_tensor_proto(array))
    return req


def rest_path(model: str, version: int | None, label: str, verb: str) -> str:
    where = f"/versions/{version}" if version is not None else (
        f"/labels/{label}" if label else "")
    return f"/v1/models/{model}{where}:{verb}"


def json_inputs(inputs: dict[str, np.ndarray]) -> Any:
    def value(array: np.ndarray) -> Any:
        if array.dtype.kind == "O":
            return [v.decode() for v in array.tolist()]
        return [None if isinstance(v, float) and np.isnan(v) else v for v in array.tolist()] \
            if array.ndim == 1 else array.tolist()
    return {alias: value(array) for alias, array in inputs.items()}


PREDICT_CASES = [
    ("half_plus_two", {"x": np.array([1.0, 2.0, 5.0], np.float32)}, "", None, ""),
    ("half_plus_two", {"x": np.array([[1.5], [3.0]], np.float32)}, "", 123, ""),
    ("half_plus_two", {"x": np.array([2.0], np.float32)}, "", None, "stable"),
    ("half_plus_three", {"x": np.array([1.0, 2.0, 5.0], np.float32)}, "", None, ""),
    ("multi", {"x": np.array([0.4, 2.6], np.float32),
               "s": np.array([b"ab", b"c"], dtype=object)}, "", None, ""),
    ("multi", {"n": np.array([1, -7], np.int32)}, "ints", None, ""),
    ("iris", {"inputs": ROWS}, "", None, ""),
    ("xgb", {"inputs": np.array([[np.nan, 0.1, 0.2, 0.3], [0, 0.1, 0.2, 0.3]], np.float32)},
     "", None, ""),
]


@pytest.mark.parametrize("model,inputs,signature,version,label", PREDICT_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(PREDICT_CASES)])
def test_predict_equals_rest(server: GrpcGunicornServer, stub: Any, model: str,
                             inputs: dict[str, np.ndarray], signature: str,
                             version: int | None, label: str) -> None:
    answer = stub.Predict(predict_request(model, inputs, signature, version, label))
    body: dict[str, Any] = {"inputs": json_inputs(inputs)}
    if signature:
        body["signature_name"] = signature
    status, expected = rest(server, "POST", rest_path(model, version, label, "predict"), body)
    assert status == 200, expected
    outputs = {alias: tf.make_ndarray(proto) for alias, proto in answer.outputs.items()}
    wanted = expected["outputs"] if len(outputs) > 1 else {
        next(iter(outputs)): expected["outputs"]}
    assert sorted(outputs) == sorted(wanted)
    for alias, array in outputs.items():
        got = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v
               for v in array.ravel().tolist()]
        want = np.asarray(wanted[alias], dtype=object).ravel().tolist()
        if alias.endswith("_bytes"):  # REST prints these as {"b64": ...}
            want = [v["b64"] for v in want]
            got = [base64.b64encode(v).decode() for v in array.ravel()]
        if array.dtype.kind == "f":
            want = [np.float32(v) if array.dtype == np.float32 else v for v in want]
        assert got == want, alias
    assert answer.model_spec.name == model
    assert answer.model_spec.version.value == (123 if model.startswith("half") else 1)
    assert answer.model_spec.signature_name == (signature or "serving_default")


def test_tagged_bytes_keep_their_bytes(stub: Any) -> None:
    answer = stub.Predict(predict_request("multi", {
        "x": np.array([1.0], np.float32), "s": np.array([b"q"], dtype=object)}))
    assert tf.make_ndarray(answer.outputs["tagged_bytes"]).tolist() == [b"q" + TAG]


def test_output_filter(stub: Any) -> None:
    req = predict_request("iris", {"inputs": ROWS})
    req.output_filter.append("predict")
    assert list(stub.Predict(req).outputs) == ["predict"]
    req.output_filter.append("nope")
    with pytest.raises(grpc.RpcError) as caught:
        stub.Predict(req)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details().startswith("output tensor alias not found in signature: nope")


ERRORS = [
    (predict_request("nope", {"x": np.ones(1, np.float32)}), grpc.StatusCode.NOT_FOUND,
     "Servable not found for request: Latest(nope)"),
    (predict_request("half_plus_two", {"x": np.ones(1, np.float32)}, version=7),
     grpc.StatusCode.NOT_FOUND, "Servable not found for request: Specific(half_plus_two, 7)"),
    (predict_request("half_plus_two", {"x": np.ones(1, np.float32)}, label="canary"),
     grpc.StatusCode.INVALID_ARGUMENT, "Unrecognized servable version label: canary"),
    (predict_request("half_plus_two", {"x": np.ones(1, np.float32)}, signature="zz"),
     grpc.StatusCode.FAILED_PRECONDITION, 'Serving signature key "zz" not found.'),
    (predict_request("half_plus_two", {"q": np.ones(1, np.float32)}),
     grpc.StatusCode.INVALID_ARGUMENT,
     "input tensor alias not found in signature: q. Inputs expected to be in the set {x}."),
    (predict_request("multi", {"x": np.ones(1, np.float32)}), grpc.StatusCode.INVALID_ARGUMENT,
     "input size does not match signature: 1!=2 len({x}) != len({s,x}). Sent extra: {}. "
     "Missing but required: {s}."),
    (predict_pb2.PredictRequest(), grpc.StatusCode.INVALID_ARGUMENT, "Missing ModelSpec"),
    (predict_request("iris", {"inputs": ROWS.astype(np.int64)[:, :3]}),
     grpc.StatusCode.INVALID_ARGUMENT, "expected shape [-1, 4], got [3, 3]"),
    # a double past float32's range is refused, not cast to infinity
    (predict_request("half_plus_two", {"x": np.array([1e300])}),
     grpc.StatusCode.INVALID_ARGUMENT, "input 'x': a value is out of range for DT_FLOAT"),
]


@pytest.mark.parametrize("req,code,message", ERRORS, ids=[e[2][:30] for e in ERRORS])
def test_predict_errors_are_tf_serving_s(stub: Any, req: Any, code: Any, message: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.Predict(req)
    assert caught.value.code() == code
    assert message in caught.value.details()


def example(**features: Any) -> Any:
    feature = {name: tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))
               for name, values in features.items()}
    return tf.train.Example(features=tf.train.Features(feature=feature))


EXAMPLE_CASES = [  # model, signature, examples as JSON
    ("half_plus_two", "classify_x_to_y", [{"x": [2.0]}, {"x": [3.5]}]),
    ("half_plus_two", "regress_x_to_y", [{"x": [1.0]}, {"x": [2.0]}]),
    ("half_plus_three", "tensorflow/serving/regress", [{"x": [1.0]}, {"x": [2.0]}]),
    ("multi", "classify", [{"x": [0.25]}]),
    ("iris", "", [{"row": row} for row in ROWS.tolist()]),
]


@pytest.mark.parametrize("model,signature,examples", EXAMPLE_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in EXAMPLE_CASES])
def test_classify_and_regress_equal_rest(server: GrpcGunicornServer, stub: Any, model: str,
                                         signature: str, examples: list[Any]) -> None:
    verb = "regress" if "regress" in signature else "classify"
    cls = regression_pb2.RegressionRequest if verb == "regress" else \
        classification_pb2.ClassificationRequest
    req = cls()
    req.model_spec.name = model
    req.model_spec.signature_name = signature
    req.input.example_list.examples.extend([example(**e) for e in examples])
    answer = getattr(stub, verb.capitalize())(req)
    body: dict[str, Any] = {"examples": examples}
    if signature:
        body["signature_name"] = signature
    status, expected = rest(server, "POST", f"/v1/models/{model}:{verb}", body)
    assert status == 200, expected
    if verb == "regress":
        got: Any = [r.value for r in answer.result.regressions]
        want: Any = [float(np.float32(v)) for v in expected["results"]]
    else:
        got = [[[c.label, c.score] for c in row.classes]
               for row in answer.result.classifications]
        want = [[[label, float(np.float32(score))] for label, score in row]
                for row in expected["results"]]
    assert got == want


def test_multi_inference_equals_classify_and_regress(stub: Any) -> None:
    req = inference_pb2.MultiInferenceRequest()
    for signature, method in (("regress_x_to_y", "tensorflow/serving/regress"),
                              ("classify_x_to_y", "tensorflow/serving/classify")):
        task = req.tasks.add(method_name=method)
        task.model_spec.name = "half_plus_two"
        task.model_spec.signature_name = signature
    req.input.example_list.examples.extend([example(x=[1.0]), example(x=[3.0])])
    regress, classify = stub.MultiInference(req).results
    assert [r.value for r in regress.regression_result.regressions] == [2.5, 3.5]
    assert [[c.score for c in row.classes]
            for row in classify.classification_result.classifications] == [[2.5], [3.5]]
    assert classify.model_spec.signature_name == "classify_x_to_y"
    req.tasks[1].method_name = "tensorflow/serving/predict"
    with pytest.raises(grpc.RpcError) as caught:
        stub.MultiInference(req)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("model", ["half_plus_two", "multi", "iris", "echo"])
def test_metadata_equals_rest(server: GrpcGunicornServer, stub: Any, model: str) -> None:
    req = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    req.model_spec.name = model
    answer = stub.GetModelMetadata(req)
    signatures = get_model_metadata_pb2.SignatureDefMap()
    assert answer.metadata["signature_def"].Unpack(signatures)
    got = json_format.MessageToDict(signatures, preserving_proto_field_name=True,
                                    always_print_fields_with_no_presence=True)
    _, expected = rest(server, "GET", f"/v1/models/{model}/metadata")
    assert got == expected["metadata"]["signature_def"]
    assert answer.model_spec.version.value == int(expected["model_spec"]["version"])
    req.metadata_field[:] = []
    with pytest.raises(grpc.RpcError) as caught:
        stub.GetModelMetadata(req)
    assert caught.value.details() == \
        "GetModelMetadataRequest must specify at least one metadata_field"


def test_model_status_equals_rest(server: GrpcGunicornServer) -> None:
    with server.channel() as chan:
        models = model_service_pb2_grpc.ModelServiceStub(chan)
        for model in ("half_plus_two", "iris"):
            req = get_model_status_pb2.GetModelStatusRequest()
            req.model_spec.name = model
            got = json_format.MessageToDict(models.GetModelStatus(req),
                                            preserving_proto_field_name=True,
                                            always_print_fields_with_no_presence=True)
            assert got == rest(server, "GET", f"/v1/models/{model}")[1]
        req.model_spec.name = "nope"
        with pytest.raises(grpc.RpcError) as caught:
            models.GetModelStatus(req)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert caught.value.details() == "Could not find any versions of model nope"


def test_predict_keeps_the_rest_route_s_instance_limit(server: GrpcGunicornServer,
                                                        stub: Any) -> None:
    rows = np.zeros((MAX_INSTANCES + 1, 4))  # a small message, too many rows
    with pytest.raises(grpc.RpcError) as error:
        stub.Predict(predict_request("iris", {"inputs": rows}))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"limit is {MAX_INSTANCES}" in error.value.details()
    status, _ = rest(server, "POST", "/v1/models/iris:predict",
                     {"instances": rows.tolist()})
    assert status == 413
    assert stub.Predict(predict_request("iris", {"inputs": rows[:MAX_INSTANCES]})).outputs


def test_server_log_has_no_traceback(server: GrpcGunicornServer) -> None:
    assert server.log_path is not None
    assert "Traceback" not in Path(server.log_path).read_text()
