"""The LightGBM, CatBoost and ONNX plugins under real gunicorn with 2 workers, one server for
them all: LightGBM (a Booster's text file with categories, a classifier's joblib), CatBoost
(a ``.cbm`` with categorical and text features), ONNX (a graph as PyTorch's exporter writes
it, a converted scikit-learn DataFrame pipeline, a Keras model exported by Keras, a model of
every tensor type), each asked over every protocol, REST and gRPC, the answer compared with
the library's own in process; metadata, bad input and ``flask-predict predict`` as for the
other plugins.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from google.protobuf import json_format

from flask_predict.grpc.messages import tf as tf_messages, tfs
from tests import gbm_models, onnx_models
from tests.e2e.grpc_support import GrpcGunicornServer, generated_grps
from tests.e2e.server import request

pytestmark = [pytest.mark.e2e, pytest.mark.tensorflow]  # the Keras model is exported here

TF_ENUMS = {"FP32": 1, "FP64": 2, "BYTES": 7, "INT64": 9}
TF_FIELDS = {"FP32": "float_val", "FP64": "double_val", "BYTES": "string_val",
             "INT64": "int64_val"}
GRPS_DTYPES = {"FP32": "DT_FLOAT32", "FP64": "DT_FLOAT64", "BYTES": "DT_STRING",
               "INT64": "DT_INT64"}


@dataclass
class Case:
    """One model: the typed inputs every tensor protocol sends, the rows AI Platform sends,
    and what the library answers for them in process."""

    inputs: dict[str, tuple[str, np.ndarray]]
    """Input name -> (V2 datatype, the array as declared)."""
    expected: dict[str, np.ndarray]
    """Output name -> the library's own answer."""
    instances: list[Any]
    predictions: list[Any]
    """What AI Platform answers *instances*: the instances door's outputs."""
    outputs: list[tuple[str, str]] = field(default_factory=list)
    """Declared outputs (name, V2 datatype), as metadata shows them."""


def text(values: list[str]) -> np.ndarray:
    return np.array([value.encode() for value in values], dtype=object)


def lightgbm_cases(root: Path) -> dict[str, Case]:
    rows = [row for row in gbm_models.ROWS if row["color"] is not None]  # a missing size
    sizes = np.array([math.nan if row["size"] is None else row["size"] for row in rows])
    inputs = {"color": ("BYTES", text([row["color"] for row in rows])),
              "size": ("FP64", sizes),
              "grade": ("FP64", np.array([float(row["grade"]) for row in rows]))}
    sold = gbm_models.train_lightgbm(root / "lgb_sold", "sold", "txt")
    tier = gbm_models.train_lightgbm(root / "lgb_tier", "tier", "joblib")
    data = gbm_models.frame(rows)
    labels = tier.predict(data)
    booster = sold.booster_.predict(data)
    return {
        "lgb_sold": Case(inputs, {"predict": booster}, rows, booster.tolist(),
                         [("predict", "FP64")]),
        "lgb_tier": Case(inputs, {"predict": labels, "predict_proba": tier.predict_proba(data)},
                         rows, labels.tolist(), [("predict", "BYTES"), ("predict_proba", "FP64")]),
    }


def catboost_case(root: Path) -> Case:
    rows = [{**row, "color": row["color"] or "none", "grade": str(row["grade"]),
             "review": gbm_models.REVIEWS[index]} for index, row in enumerate(gbm_models.ROWS)]
    fitted = gbm_models.train_catboost(root / "cb_tier", "tier", "cbm")
    data = gbm_models.catboost_frame([{**row, "grade": int(row["grade"])} for row in rows])
    labels = fitted.predict(data).reshape(-1)
    inputs = {"color": ("BYTES", text([row["color"] for row in rows])),
              "size": ("FP64", np.array([math.nan if row["size"] is None else row["size"]
                                         for row in rows])),
              "grade": ("BYTES", text([row["grade"] for row in rows])),
              "review": ("BYTES", text([row["review"] for row in rows]))}
    return Case(inputs, {"predict": labels, "predict_proba": fitted.predict_proba(data)}, rows,
                labels.tolist(), [("predict", "BYTES"), ("predict_proba", "FP64")])


def onnx_cases(root: Path) -> dict[str, Case]:
    import onnxruntime as ort

    def own(name: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        session = ort.InferenceSession(str(root / name / "1" / "model.onnx"),
                                       providers=["CPUExecutionProvider"])
        names = [node.name for node in session.get_outputs()]
        answers = session.run(names, feeds)
        # a ZipMap's maps (float32 values) as rows, as the plugin answers them
        return {n: np.array([[row[k] for k in row] for row in a], dtype=np.float32)
                if isinstance(a, list) else a for n, a in zip(names, answers)}

    rows = np.random.default_rng(8).normal(size=(3, 4)).round(3).astype(np.float32)
    onnx_models.torch_like(root / "onnx_torch")
    torch = own("onnx_torch", {"input": rows})["output"]
    onnx_models.keras_model(root / "onnx_keras")
    keras = own("onnx_keras", {"features": rows})
    (keras_output,) = keras
    people = onnx_models.PIPELINE_ROWS
    onnx_models.pipeline(root / "onnx_pipeline")
    feeds = {"age": np.array([[row["age"]] for row in people], dtype=np.int64),
             "income": np.array([[row["income"]] for row in people], dtype=np.float32),
             "city": np.array([[row["city"]] for row in people], dtype=object)}
    pipeline = own("onnx_pipeline", feeds)
    onnx_models.every_type(root / "onnx_types")
    types = {datatype.lower(): (datatype, onnx_models.type_values(datatype))
             for datatype in onnx_models.TYPES}
    return {
        "onnx_torch": Case({"input": ("FP32", rows)}, {"output": torch}, rows.tolist(),
                           torch.tolist(), [("output", "FP32")]),
        "onnx_keras": Case({"features": ("FP32", rows)}, keras, rows.tolist(),
                           keras[keras_output].tolist(), [(keras_output, "FP32")]),
        "onnx_pipeline": Case(
            {"age": ("INT64", feeds["age"]), "income": ("FP32", feeds["income"]),
             "city": ("BYTES", np.array([[row["city"].encode()] for row in people],
                                        dtype=object))},
            pipeline, [{name: [row[name]] for name in row} for row in people],
            [{"output_label": int(label), "output_probability": probability.tolist()}
             for label, probability in zip(pipeline["output_label"],
                                           pipeline["output_probability"])],
            [("output_label", "INT64"), ("output_probability", "FP32")]),
        "onnx_types": Case({name: (datatype, values if datatype != "BYTES" else np.array(
            [[v.encode() for v in row] for row in values], dtype=object))
            for name, (datatype, values) in types.items()},
            {f"{name}_out": values for name, (_, values) in types.items()}, [], []),
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[GrpcGunicornServer, dict[str, Case]]]:
    folder = tmp_path_factory.mktemp("plugins")
    root = folder / "models"
    cases = {**lightgbm_cases(root), "cb_tier": catboost_case(root), **onnx_cases(root)}
    models = {name: {"base_path": str(root / name)} for name in cases}
    with GrpcGunicornServer(models, workers=2, log_path=folder / "server.log") as server:
        yield server, cases


@pytest.fixture(scope="module")
def grps(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``grps_pb2`` and its stub, generated as a grps user generates them."""
    pb2, pb2_grpc = generated_grps(tmp_path_factory.mktemp("grps_client"))
    return pb2, pb2_grpc.GrpsServiceStub


TABLE_MODELS = ["lgb_sold", "lgb_tier", "cb_tier", "onnx_torch", "onnx_keras",
                "onnx_pipeline"]


def check(got: Any, want: np.ndarray, name: str, single: bool = False) -> None:
    """*got* (as a protocol carried it: *single*, in float32) is the library's answer:
    labels equal, numbers to the precision of their type."""
    if want.dtype.kind in "OSU":
        values = [v.decode() if isinstance(v, bytes) else v for v in
                  np.asarray(got, dtype=object).reshape(-1).tolist()]
        assert values == [str(v) for v in want.reshape(-1).tolist()], name
    elif want.dtype.kind in "iub":
        assert np.asarray(got).reshape(want.shape).tolist() == want.tolist(), name
    else:
        rtol = 1e-12 if want.dtype == np.float64 and not single else 2e-7
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64).reshape(want.shape), want,
                                   rtol=rtol, atol=1e-12, err_msg=name)


def post(server: GrpcGunicornServer, path: str, body: Any) -> Any:
    status, _, answer = request("POST", server.url + path, body=body)
    assert status == 200, answer
    return json.loads(answer)


def json_values(array: np.ndarray) -> Any:
    if array.dtype.kind == "O":
        return [[v.decode() for v in row] if isinstance(row, list) else row.decode()
                for row in array.tolist()]
    return array.tolist()


# --- metadata -------------------------------------------------------------------------------

@pytest.mark.parametrize("model", TABLE_MODELS)
def test_every_protocol_shows_the_declared_inputs_and_outputs(
        served: tuple[GrpcGunicornServer, dict[str, Case]], grps: Any, model: str) -> None:
    server, case = served[0], served[1][model]
    inputs = [(name, datatype, [-1, *array.shape[1:]])
              for name, (datatype, array) in case.inputs.items()]
    _, _, body = request("GET", f"{server.url}/v2/models/{model}")
    meta = json.loads(body)
    assert [(t["name"], t["datatype"], t["shape"]) for t in meta["inputs"]] == inputs
    assert [(t["name"], t["datatype"]) for t in meta["outputs"]] == case.outputs
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        grpc_meta = triton.get_model_metadata(model)
    finally:
        triton.close()
    assert [(t.name, t.datatype, list(t.shape)) for t in grpc_meta.inputs] == inputs
    assert grpc_meta.platform == meta["platform"] == model.split("_")[0].replace(
        "lgb", "lightgbm").replace("cb", "catboost")

    _, _, body = request("GET", f"{server.url}/v1/models/{model}/metadata")
    signature = json.loads(body)["metadata"]["signature_def"]["signature_def"][
        "serving_default"]
    assert sorted(signature["inputs"]) == sorted(case.inputs)
    assert sorted(signature["outputs"]) == sorted(name for name, _ in case.outputs)
    ask = tfs.GetModelMetadataRequest(metadata_field=["signature_def"])
    ask.model_spec.name = model
    with server.channel() as chan:
        answer = chan.unary_unary(
            "/tensorflow.serving.PredictionService/GetModelMetadata",
            request_serializer=tfs.GetModelMetadataRequest.SerializeToString,
            response_deserializer=tfs.GetModelMetadataResponse.FromString)(ask)
    signatures = tfs.SignatureDefMap()
    assert answer.metadata["signature_def"].Unpack(signatures)
    assert sorted(signatures.signature_def["serving_default"].inputs) == sorted(case.inputs)

    described = post(server, "/grps/v1/metadata/model", {"str_data": model})["str_data"]
    for name, datatype, _ in inputs:
        assert f'- name: "{name}"\n    dtype: "{GRPS_DTYPES[datatype]}"' in described
    pb2, stub = grps
    with server.channel() as chan:
        assert stub(chan).ModelMetadata(pb2.GrpsMessage(str_data=model)).str_data == described


# --- predictions over every protocol --------------------------------------------------------

@pytest.mark.parametrize("model", TABLE_MODELS)
def test_ai_platform_rows(served: tuple[GrpcGunicornServer, dict[str, Case]],
                          model: str) -> None:
    server, case = served[0], served[1][model]
    for path in (f"/v1/projects/p/models/{model}:predict",
                 f"/v1/projects/p/locations/l/endpoints/{model}:predict"):
        predictions = post(server, path, {"instances": case.instances})["predictions"]
        if isinstance(case.predictions[0], dict):
            for name in case.expected:
                check([row[name] for row in predictions], case.expected[name], name)
        elif model == "lgb_tier" or model == "cb_tier":
            assert predictions == case.predictions
        else:
            check(predictions, np.asarray(case.predictions, dtype=np.float64), "predictions")


@pytest.mark.parametrize("model", TABLE_MODELS)
def test_tf_serving_rest_and_grpc(served: tuple[GrpcGunicornServer, dict[str, Case]],
                                  model: str) -> None:
    server, case = served[0], served[1][model]
    body = {"inputs": {name: json_values(array) for name, (_, array) in case.inputs.items()}}
    outputs = post(server, f"/v1/models/{model}:predict", body)["outputs"]
    if len(case.expected) == 1:
        outputs = {next(iter(case.expected)): outputs}
    for name, want in case.expected.items():
        check(outputs[name], want, name)

    ask = tfs.PredictRequest()
    ask.model_spec.name = model
    for name, (datatype, array) in case.inputs.items():
        proto = tf_messages.TensorProto(dtype=TF_ENUMS[datatype])
        for size in array.shape:
            proto.tensor_shape.dim.add(size=size)
        getattr(proto, TF_FIELDS[datatype]).extend(array.reshape(-1).tolist())
        ask.inputs[name].CopyFrom(proto)
    with server.channel() as chan:
        answer = chan.unary_unary("/tensorflow.serving.PredictionService/Predict",
                                  request_serializer=tfs.PredictRequest.SerializeToString,
                                  response_deserializer=tfs.PredictResponse.FromString)(ask)
    for name, want in case.expected.items():
        proto = answer.outputs[name]
        values = (list(proto.string_val) or list(proto.double_val) or list(proto.float_val)
                  or list(proto.int64_val))
        check(values, want, name)


def v2_request(case: Case) -> dict[str, Any]:
    return {"inputs": [{"name": name, "datatype": datatype, "shape": list(array.shape),
                        "data": json_values(array.reshape(-1))}
                       for name, (datatype, array) in case.inputs.items()]}


@pytest.mark.parametrize("model", [*TABLE_MODELS, "onnx_types"])
def test_v2_rest_and_grpc(served: tuple[GrpcGunicornServer, dict[str, Case]],
                          model: str) -> None:
    server, case = served[0], served[1][model]
    answer = post(server, f"/v2/models/{model}/infer", v2_request(case))
    outputs = {out["name"]: out["data"] for out in answer["outputs"]}
    for name, want in case.expected.items():
        check(outputs[name], want, name)

    tensors = []
    for name, (datatype, array) in case.inputs.items():
        tensor = grpcclient.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        result = triton.infer(model, tensors)
    finally:
        triton.close()
    for name, want in case.expected.items():
        check(result.as_numpy(name), want, name)


@pytest.mark.parametrize("model", TABLE_MODELS)
def test_grps_rest_and_grpc(served: tuple[GrpcGunicornServer, dict[str, Case]], grps: Any,
                            model: str) -> None:
    server, case = served[0], served[1][model]
    tensors = []
    for name, (datatype, array) in case.inputs.items():
        dtype = GRPS_DTYPES[datatype]
        field_name = "flat_string" if datatype == "BYTES" else f"flat_{dtype[3:].lower()}"
        values = ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in
                  json_values(array.reshape(-1))]
        tensors.append({"name": name, "dtype": dtype, "shape": list(array.shape),
                        field_name: values})
    message = {"model": model, "gtensors": {"tensors": tensors}}
    pb2, stub = grps
    with server.channel() as chan:
        by_grpc = json_format.MessageToDict(
            stub(chan).Predict(json_format.ParseDict(message, pb2.GrpsMessage())),
            preserving_proto_field_name=True)
    for body in (post(server, "/grps/v1/infer/predict", message), by_grpc):
        assert body["status"]["code"] == 200, body
        outputs, single = {}, set()
        for tensor in body["gtensors"]["tensors"]:
            values = tensor[next(key for key in tensor if key.startswith("flat_"))]
            outputs[tensor["name"]] = [int(v) for v in values] if tensor[
                "dtype"] == "DT_INT64" else values
            if tensor["dtype"] == "DT_FLOAT32":  # grps sends probabilities so
                single.add(tensor["name"])
        for name, want in case.expected.items():
            check(outputs[name], want, name, single=name in single)


# --- bad input ------------------------------------------------------------------------------

def test_bad_input_is_each_protocols_client_error(
        served: tuple[GrpcGunicornServer, dict[str, Case]]) -> None:
    server = served[0]
    wide = {"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 5],
                        "data": [1, 2, 3, 4, 5]}]}
    status, _, body = request("POST", f"{server.url}/v2/models/onnx_torch/infer", body=wide)
    assert status == 400 and "expected shape [-1, 4], got [1, 5]" in json.loads(body)["error"]
    for path in ("/v1/models/onnx_torch:predict", "/v1/projects/p/models/onnx_torch:predict"):
        status, _, body = request("POST", server.url + path, body={"instances": [[1, 2, 3]]})
        assert status == 400 and "error" in json.loads(body), body
    missing = {"instances": [{**served[1]["cb_tier"].instances[0], "color": None}]}
    status, _, body = request("POST", f"{server.url}/v1/projects/p/models/cb_tier:predict",
                              body=missing)
    assert status == 400 and "column 'color'" in json.loads(body)["error"]
    status, _, body = request("POST", f"{server.url}/v2/models/lgb_sold/infer", body={
        "inputs": [{"name": "size", "datatype": "FP64", "shape": [1], "data": [1.0]}]})
    assert status == 400 and "missing column(s) ['color', 'grade']" in json.loads(body)["error"]
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    tensor = grpcclient.InferInput("input", [1, 4], "BYTES")
    tensor.set_data_from_numpy(np.array([[b"a"] * 4], dtype=object))
    try:
        with pytest.raises(Exception, match="the model expects FP32, got BYTES") as caught:
            triton.infer("onnx_torch", [tensor])
    finally:
        triton.close()
    assert "StatusCode.INVALID_ARGUMENT" in str(caught.value)
    status, _, body = request("POST", f"{server.url}/grps/v1/infer/predict", body={
        "model": "onnx_torch", "ndarray": [[1.0, 2.0]]})
    assert json.loads(body)["status"]["code"] == 400, body


# --- flask-predict predict ------------------------------------------------------------------

@pytest.mark.parametrize("model", ["lgb_tier", "cb_tier", "onnx_torch"])
def test_flask_predict_predict_answers_as_the_server(
        served: tuple[GrpcGunicornServer, dict[str, Case]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], model: str) -> None:
    from flask_predict.cli import main

    server, case = served
    base_path = json.loads(server.env["FLASK_PREDICT_MODELS"])[model]["base_path"]
    rows = tmp_path / "rows.json"
    rows.write_text("".join(json.dumps(row) + "\n" for row in case[model].instances))
    assert main(["predict", base_path, "--json-instances", str(rows)]) in (0, None)
    printed = json.loads(capsys.readouterr().out)["predictions"]
    answered = post(server, f"/v1/projects/p/models/{model}:predict",
                    {"instances": case[model].instances})["predictions"]
    assert printed == answered
