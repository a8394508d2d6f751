"""Models fitted on tables and on text under real gunicorn with 2 workers, one server for
them all: a scikit-learn DataFrame pipeline mixing text and number columns, a DataFrame
model of numbers only, a text pipeline, and XGBoost with a categorical column, each asked
over every protocol that carries its inputs, REST and gRPC (TF Serving's and grps's
messages as their users send them, V2 through tritonclient), the answer compared with the
model's own prediction in process. Every protocol's metadata names each column with its
type and shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from google.protobuf import json_format

from flask_predict.grpc.messages import tf as tf_messages, tfs
from tests.e2e.grpc_support import GrpcGunicornServer, generated_grps
from tests.e2e.server import request
from tests.tabular_models import (COLORS, NUMBER_ROWS, PEOPLE_ROWS, REVIEWS, SHOP_ROWS,
                                  columns, frame, train_all)

pytestmark = pytest.mark.e2e

COLUMNS = {
    "people": [("age", "FP64"), ("income", "FP64"), ("city", "BYTES"), ("segment", "BYTES")],
    "numbers": [("age", "FP64"), ("income", "FP64")],
    "reviews": [("inputs", "BYTES")],
    "shops": [("color", "BYTES"), ("size", "FP32")],
}
"""Each model's inputs as its metadata shows them (every one of shape [-1])."""

TF_DTYPES = {"FP64": "DT_DOUBLE", "FP32": "DT_FLOAT", "BYTES": "DT_STRING"}
GRPS_DTYPES = {"FP64": "DT_FLOAT64", "FP32": "DT_FLOAT32", "BYTES": "DT_STRING"}
TF_ENUMS = {"DT_FLOAT": 1, "DT_DOUBLE": 2, "DT_STRING": 7}

ROWS = {"people": PEOPLE_ROWS, "numbers": NUMBER_ROWS, "shops": SHOP_ROWS}
TEXT_COLUMNS = {"city", "segment", "color"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[GrpcGunicornServer, dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("tabular")
    fitted, models = train_all(folder / "models")
    with GrpcGunicornServer(models, workers=2, log_path=folder / "server.log") as server:
        yield server, fitted


@pytest.fixture(scope="module")
def server(served: tuple[GrpcGunicornServer, dict[str, Any]]) -> GrpcGunicornServer:
    return served[0]


@pytest.fixture(scope="module")
def grps(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``grps_pb2`` and its stub, generated from our ``grps.proto`` as a grps user does."""
    pb2, pb2_grpc = generated_grps(tmp_path_factory.mktemp("grps_client"))
    return pb2, pb2_grpc.GrpsServiceStub


# --- what the model answers in process ------------------------------------------------------

def expected(served: tuple[GrpcGunicornServer, dict[str, Any]], model: str,
             rows: list[Any]) -> dict[str, Any]:
    """``predict`` (labels, or XGBoost's probability) and ``predict_proba`` of *rows*, from
    the fitted model itself."""
    fitted = served[1][model]
    if model == "reviews":
        data = rows
    elif model == "shops":
        import pandas as pd

        data = frame(rows).astype({"size": float})
        data["color"] = pd.Categorical(data["color"], categories=COLORS)
        return {"predict": fitted.predict_proba(data)[:, 1]}
    else:
        data = frame(rows)
    return {"predict": fitted.predict(data).tolist(), "predict_proba": fitted.predict_proba(data)}


def check(answer: dict[str, Any], want: dict[str, Any]) -> None:
    """*answer* (output name -> values, labels as text) holds the expected outputs."""
    for name, values in want.items():
        got = answer[name]
        if isinstance(values, list):
            assert [_label(v) for v in np.asarray(got).reshape(-1).tolist()] == values, name
        else:  # float32 where a protocol carries it so: equal to float32's precision
            np.testing.assert_allclose(np.asarray(got, dtype=np.float64).reshape(values.shape),
                                       values, rtol=2e-7, atol=1e-7, err_msg=name)


def _label(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode()
    return bool(value) if isinstance(value, np.bool_) else value


def present(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows without a missing text (a protobuf string field has no null)."""
    return [row for row in rows if all(row[name] is not None for name in TEXT_COLUMNS
                                       if name in row)]


def post(server: GrpcGunicornServer, path: str, body: Any) -> Any:
    status, _, answer = request("POST", server.url + path, body=body)
    assert status == 200, answer
    return json.loads(answer)


# --- metadata -------------------------------------------------------------------------------

@pytest.mark.parametrize("model", sorted(COLUMNS))
def test_every_protocol_names_each_column_with_its_type(
        server: GrpcGunicornServer, grps: Any, model: str) -> None:
    want = COLUMNS[model]
    _, _, body = request("GET", f"{server.url}/v2/models/{model}")
    assert [(t["name"], t["datatype"], t["shape"]) for t in json.loads(body)["inputs"]] == [
        (name, datatype, [-1]) for name, datatype in want]
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        meta = triton.get_model_metadata(model)
    finally:
        triton.close()
    assert [(t.name, t.datatype, list(t.shape)) for t in meta.inputs] == [
        (name, datatype, [-1]) for name, datatype in want]

    tf_want = {name: (TF_DTYPES[datatype], [-1]) for name, datatype in want}
    _, _, body = request("GET", f"{server.url}/v1/models/{model}/metadata")
    inputs = json.loads(body)["metadata"]["signature_def"]["signature_def"][
        "serving_default"]["inputs"]
    assert {name: (info["dtype"], [int(d["size"]) for d in info["tensor_shape"]["dim"]])
            for name, info in inputs.items()} == tf_want
    ask = tfs.GetModelMetadataRequest(metadata_field=["signature_def"])
    ask.model_spec.name = model
    with server.channel() as chan:
        answer = chan.unary_unary(
            "/tensorflow.serving.PredictionService/GetModelMetadata",
            request_serializer=tfs.GetModelMetadataRequest.SerializeToString,
            response_deserializer=tfs.GetModelMetadataResponse.FromString)(ask)
    signatures = tfs.SignatureDefMap()
    assert answer.metadata["signature_def"].Unpack(signatures)
    grpc_inputs = signatures.signature_def["serving_default"].inputs
    names = {number: name for name, number in TF_ENUMS.items()}
    assert {name: (names[info.dtype], [d.size for d in info.tensor_shape.dim])
            for name, info in grpc_inputs.items()} == tf_want

    described = ["  - name: \"%s\"\n    dtype: \"%s\"\n    shape:\n      - -1" % (
        name, GRPS_DTYPES[datatype]) for name, datatype in want]
    text = post(server, "/grps/v1/metadata/model", {"str_data": model})["str_data"]
    assert "inputs:\n" + "\n".join(described) + "\n" in text
    pb2, stub = grps
    with server.channel() as chan:
        assert stub(chan).ModelMetadata(pb2.GrpsMessage(str_data=model)).str_data == text


# --- AI Platform, Vertex AI, TF Serving REST ------------------------------------------------

@pytest.mark.parametrize("model", ["people", "numbers", "reviews", "shops"])
def test_instances_by_name_by_position_and_as_text(
        served: tuple[GrpcGunicornServer, dict[str, Any]], model: str) -> None:
    server = served[0]
    sent = REVIEWS if model == "reviews" else ROWS[model]
    want = expected(served, model, sent)
    bodies = [{"instances": sent}]
    if model in ("people", "numbers"):  # plain rows, in the model's column order
        bodies.append({"instances": [list(row.values()) for row in sent]})
    for body in bodies:
        for path in (f"/v1/projects/p/models/{model}:predict",
                     f"/v1/projects/p/locations/l/endpoints/{model}:predict"):
            check({"predict": post(server, path, body)["predictions"]},
                  {"predict": want["predict"]})
        answer = post(server, f"/v1/models/{model}:predict", body)["predictions"]
        check({name: [row[name] for row in answer] for name in want} if len(want) > 1
              else {"predict": answer}, want)
    inputs = REVIEWS if model == "reviews" else columns(sent)
    outputs = post(server, f"/v1/models/{model}:predict", {"inputs": inputs})["outputs"]
    check(outputs if len(want) > 1 else {"predict": outputs}, want)


# --- TF Serving gRPC ------------------------------------------------------------------------

def tensor_proto(values: list[Any], datatype: str, shape: list[int]) -> Any:
    proto = tf_messages.TensorProto(dtype=TF_ENUMS[TF_DTYPES[datatype]])
    for size in shape:
        proto.tensor_shape.dim.add(size=size)
    if datatype == "BYTES":
        proto.string_val.extend(value.encode() for value in values)
    elif datatype == "FP32":
        proto.float_val.extend(np.nan if value is None else value for value in values)
    else:
        proto.double_val.extend(np.nan if value is None else value for value in values)
    return proto


def tfs_predict(server: GrpcGunicornServer, model: str, tensors: dict[str, Any]) -> dict[str, Any]:
    ask = tfs.PredictRequest()
    ask.model_spec.name = model
    for alias, proto in tensors.items():
        ask.inputs[alias].CopyFrom(proto)
    with server.channel() as chan:
        answer = chan.unary_unary("/tensorflow.serving.PredictionService/Predict",
                                  request_serializer=tfs.PredictRequest.SerializeToString,
                                  response_deserializer=tfs.PredictResponse.FromString)(ask)
    outputs = {}
    for alias, proto in answer.outputs.items():
        shape = [d.size for d in proto.tensor_shape.dim]
        values = (list(proto.string_val) or list(proto.double_val) or list(proto.float_val)
                  or list(proto.int64_val) or list(proto.bool_val))
        outputs[alias] = np.array(values, dtype=object if proto.string_val else None
                                  ).reshape(shape)
    return outputs


@pytest.mark.parametrize("model", ["people", "numbers", "reviews", "shops"])
def test_tf_serving_grpc_takes_one_tensor_per_column(
        served: tuple[GrpcGunicornServer, dict[str, Any]], model: str) -> None:
    server = served[0]
    if model == "reviews":
        check(tfs_predict(server, model, {"inputs": tensor_proto(REVIEWS, "BYTES", [3])}),
              expected(served, model, REVIEWS))
        return
    sent = present(ROWS[model])
    table = columns(sent)
    check(tfs_predict(server, model, {
        name: tensor_proto(table[name], datatype, [len(sent)])
        for name, datatype in COLUMNS[model]}), expected(served, model, sent))
    if model == "numbers":  # every column a number: one matrix of rows
        flat = [value for row in sent for value in row.values()]
        check(tfs_predict(server, model, {"x": tensor_proto(flat, "FP64", [len(sent), 2])}),
              expected(served, model, sent))


# --- V2 -------------------------------------------------------------------------------------

def pandas_codec_request(rows: list[dict[str, Any]], kinds: list[tuple[str, str]]) -> Any:
    """The body MLServer's pandas codec sends: one input per column, shape [N, 1], text as
    BYTES with the string codec's content type, the request's content type ``pd``."""
    table = columns(rows)
    inputs = []
    for name, datatype in kinds:
        item: dict[str, Any] = {"name": name, "shape": [len(rows), 1], "datatype": datatype,
                                "data": table[name]}
        if datatype == "BYTES":
            item["parameters"] = {"content_type": "str"}
        inputs.append(item)
    return {"parameters": {"content_type": "pd"}, "inputs": inputs}


def v2_outputs(body: Any) -> dict[str, Any]:
    return {out["name"]: np.array(out["data"]).reshape(out["shape"]) for out in body["outputs"]}


@pytest.mark.parametrize("model", ["people", "numbers", "reviews", "shops"])
def test_v2_rest_takes_the_pandas_codec_columns_and_plain_ones(
        served: tuple[GrpcGunicornServer, dict[str, Any]], model: str) -> None:
    server = served[0]
    path = f"/v2/models/{model}/infer"
    if model == "reviews":
        body = {"inputs": [{"name": "text", "shape": [3, 1], "datatype": "BYTES",
                            "data": REVIEWS, "parameters": {"content_type": "str"}}]}
        check(v2_outputs(post(server, path, body)), expected(served, model, REVIEWS))
        return
    sent = ROWS[model]
    want = expected(served, model, sent)
    check(v2_outputs(post(server, path, pandas_codec_request(sent, COLUMNS[model]))), want)
    table = columns(sent)
    plain = {"inputs": [{"name": name, "shape": [len(sent)], "datatype": datatype,
                         "data": table[name]} for name, datatype in COLUMNS[model]]}
    check(v2_outputs(post(server, path, plain)), want)
    if model == "numbers":
        rows = {"inputs": [{"name": "input-0", "shape": [len(sent), 2], "datatype": "FP64",
                            "data": [value for row in sent for value in row.values()]}]}
        check(v2_outputs(post(server, path, rows)), want)


@pytest.mark.parametrize("model", ["people", "numbers", "reviews", "shops"])
def test_v2_grpc_takes_the_pandas_codec_columns(
        served: tuple[GrpcGunicornServer, dict[str, Any]], model: str) -> None:
    server = served[0]
    if model == "reviews":
        sent: list[Any] = REVIEWS
        arrays = {"text": np.array([[text.encode()] for text in REVIEWS], dtype=object)}
        kinds = [("text", "BYTES")]
    else:
        sent = present(ROWS[model])
        table = columns(sent)
        kinds = COLUMNS[model]
        arrays = {name: (np.array([[value.encode()] for value in table[name]], dtype=object)
                         if datatype == "BYTES" else
                         np.array(table[name], dtype=float).reshape(-1, 1).astype(
                             np.float32 if datatype == "FP32" else np.float64))
                  for name, datatype in kinds}
    tensors = []
    for name, datatype in kinds:
        tensor = grpcclient.InferInput(name, list(arrays[name].shape), datatype)
        tensor.set_data_from_numpy(arrays[name])
        tensors.append(tensor)
    triton = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        result = triton.infer(model, tensors, parameters={"content_type": "pd"})
    finally:
        triton.close()
    want = expected(served, model, sent)
    check({name: result.as_numpy(name) for name in want}, want)


# --- grps -----------------------------------------------------------------------------------

def gtensors(rows: list[dict[str, Any]], kinds: list[tuple[str, str]]) -> dict[str, Any]:
    table = columns(rows)
    tensors = []
    for name, datatype in kinds:
        dtype = GRPS_DTYPES[datatype]
        field = "flat_string" if datatype == "BYTES" else f"flat_{dtype[3:].lower()}"
        values = ["NaN" if value is None else value for value in table[name]]
        tensors.append({"name": name, "dtype": dtype, "shape": [len(rows)], field: values})
    return {"tensors": tensors}


def gmap(row: dict[str, Any]) -> dict[str, Any]:
    """One row as grps's typed maps: text in ``s_s``, numbers in ``s_d``."""
    return {"s_s": {k: v for k, v in row.items() if isinstance(v, str)},
            "s_d": {k: v for k, v in row.items() if not isinstance(v, str)}}


def grps_outputs(body: Any) -> dict[str, Any]:
    assert body["status"]["code"] == 200, body
    outputs = {}
    for tensor in body["gtensors"]["tensors"]:
        field = next(key for key in tensor if key.startswith("flat_"))
        values = tensor[field]
        if tensor["dtype"] == "DT_INT64":
            values = [int(v) for v in values]
        outputs[tensor["name"]] = np.array(values).reshape(tensor["shape"])
    return outputs


@pytest.mark.parametrize("model", ["people", "numbers", "reviews", "shops"])
def test_grps_takes_named_tensors_a_gmap_row_and_rows(
        served: tuple[GrpcGunicornServer, dict[str, Any]], grps: Any, model: str) -> None:
    server = served[0]
    pb2, stub = grps
    if model == "reviews":
        sent: list[Any] = REVIEWS
        bodies = [{"gtensors": {"tensors": [{"dtype": "DT_STRING", "shape": [3],
                                             "flat_string": REVIEWS}]}}]
        gmap_row = {"inputs": REVIEWS[0]}
    else:
        sent = present(ROWS[model])
        bodies = [{"gtensors": gtensors(sent, COLUMNS[model])}]
        gmap_row = {k: v for k, v in sent[0].items() if v is not None}
    if model == "numbers":  # every column a number: rows as ndarray or one unnamed tensor
        flat = [value for row in sent for value in row.values()]
        bodies.append({"gtensors": {"tensors": [{"dtype": "DT_FLOAT64", "shape": [len(sent), 2],
                                                 "flat_float64": flat}]}})
    want = expected(served, model, sent)
    for body in bodies:
        message = {"model": model, **body}
        check(grps_outputs(post(server, "/grps/v1/infer/predict", message)), want)
        with server.channel() as chan:
            answer = stub(chan).Predict(json_format.ParseDict(message, pb2.GrpsMessage()))
        check(grps_outputs(json_format.MessageToDict(answer, preserving_proto_field_name=True)),
              want)
    if model == "numbers":
        check(grps_outputs(post(server, "/grps/v1/infer/predict",
                                {"model": model, "ndarray": [list(r.values()) for r in sent]})),
              want)
    one = expected(served, model, [gmap_row["inputs"]] if model == "reviews" else [gmap_row])
    message = {"model": model, "gmap": gmap(gmap_row)}
    check(grps_outputs(post(server, "/grps/v1/infer/predict", message)), one)
    with server.channel() as chan:
        answer = stub(chan).Predict(json_format.ParseDict(message, pb2.GrpsMessage()))
    check(grps_outputs(json_format.MessageToDict(answer, preserving_proto_field_name=True)), one)


# --- errors ---------------------------------------------------------------------------------

def refusals(age: Any) -> dict[str, tuple[str, Any]]:
    """``numbers`` asked with *age* as the one value of its ``age`` column, by every REST
    protocol's form: route and body (*age* ``...``: the column left out)."""
    row = {"income": 0.5} if age is ... else {"age": age, "income": 0.5}
    v2 = [{"name": name, "shape": [1], "datatype": "FP64", "data": [value]}
          for name, value in row.items()]
    grps = [{"name": name, "dtype": "DT_FLOAT64", "shape": [1], "flat_float64": [value]}
            for name, value in row.items() if value is not None]
    forms = {"aiplatform": ("/v1/projects/p/models/numbers:predict", {"instances": [row]}),
             "tfserving rows": ("/v1/models/numbers:predict", {"instances": [row]}),
             "tfserving columns": ("/v1/models/numbers:predict",
                                   {"inputs": {name: [value] for name, value in row.items()}}),
             "v2": ("/v2/models/numbers/infer", {"inputs": v2})}
    if age is not None:  # grps's typed tensors carry no null
        forms["grps"] = ("/grps/v1/infer/predict",
                         {"model": "numbers", "gtensors": {"tensors": grps}})
    return forms


@pytest.mark.parametrize("age, said", [
    (..., ("missing column(s): 'age'", "missing column(s) ['age']", "Missing named input: age ")),
    (None, ("column 'age': value 0 is missing (null or NaN)",))],
    ids=["missing column", "null in a column the model takes no NaN in"])
def test_a_refused_table_names_the_column_in_one_line_on_every_protocol(
        server: GrpcGunicornServer, age: Any, said: tuple[str, ...]) -> None:
    """LogisticRegression takes no missing value and needs every column: each protocol's
    400 names the column (in its own words), in one line, with none of scikit-learn's
    advice."""
    for form, (path, body) in refusals(age).items():
        status, _, answer = request("POST", server.url + path, body=body)
        assert status == 400, (form, answer)
        text = answer.decode()
        assert any(words in text for words in said), (form, text)
        assert "\\n" not in text and "sklearn" not in text and len(text) < 400, (form, text)
