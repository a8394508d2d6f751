"""Open Inference Protocol V2 conformance through the Flask test client.

``cases/`` holds request/expected pairs run against the session models (sklearn iris,
XGBoost trained with missing values, the custom echo predictor). The tests below cover the
other endpoints, every datatype (through an identity predictor that returns its inputs) and
the binary tensor data extension in both directions.
"""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_predict import FlaskPredict, ModelMetadata, Predictor, Signature
from flask_predict.codecs import V2_TO_NUMPY
from flask_predict.protocols.kserve_v2 import wire
from flask_predict.protocols.kserve_v2.binary import split_body
from flask_predict.types import DEFAULT_SIGNATURE, ModelSpec, Tensor
from tests.protocols.compare import assert_json_close

CASES = sorted((Path(__file__).parent / "cases").glob("*.request.json"))
HEADER = "Inference-Header-Content-Length"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name.split(".")[0])
def test_case(client: FlaskClient, case: Path) -> None:
    sent = json.loads(case.read_text())
    expected = json.loads(case.with_name(case.name.replace(".request.", ".expected."))
                          .read_text())
    data = sent["raw"].encode() if "raw" in sent else json.dumps(sent["body"]).encode()
    got = client.post(sent["path"], data=data)  # no Content-Type, as tritonclient sends
    assert got.status_code == expected["status"]
    assert got.mimetype == "application/json"
    assert_json_close(got.get_json(), expected["body"])


# --- an identity model: every datatype in and out -----------------------------------------

class IdentityPredictor(Predictor):
    """Returns its inputs as outputs of the same names; an input named ``explode`` fails."""

    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> IdentityPredictor:
        return cls()

    def predict_tensors(self, inputs: Mapping[str, Tensor],
                        outputs: Sequence[str] | None = None,
                        signature: str | None = None) -> dict[str, Tensor]:
        if "explode" in inputs:
            raise RuntimeError("the model broke")
        return dict(inputs)

    def metadata(self) -> ModelMetadata:
        return ModelMetadata("identity", {DEFAULT_SIGNATURE: Signature(inputs=(), outputs=())})


def identity_app(base: Path, **config: Any) -> Flask:
    """An app serving the identity model ``same`` from *base* over V2 (*config*: more keys)."""
    (base / "1").mkdir()
    predict = FlaskPredict()
    predict.register_predictor("identity", IdentityPredictor)
    app = Flask("identity_app")
    app.config.update(PREDICT_MODELS={"same": {"base_path": str(base), "predictor": "identity"}},
                      PREDICT_POLL_SECONDS=0, PREDICT_PROTOCOLS=["kserve_v2"], **config)
    predict.init_app(app)
    return app


@pytest.fixture(scope="module")
def identity_client(tmp_path_factory: pytest.TempPathFactory) -> FlaskClient:
    app = identity_app(tmp_path_factory.mktemp("identity"))
    return app.test_client()


SAMPLES: dict[str, list[Any]] = {
    "BOOL": [True, False, True, True, False, False],
    "UINT8": [0, 1, 2, 253, 254, 255],
    "UINT16": [0, 1, 2, 3, 4, 65535],
    "UINT32": [0, 1, 2, 3, 4, 4294967295],
    "UINT64": [0, 1, 2, 3, 4, 9223372036854775807],  # JSON above 2**63-1: binary only
    "INT8": [-128, -1, 0, 1, 2, 127],
    "INT16": [-32768, -1, 0, 1, 2, 32767],
    "INT32": [-2147483648, -1, 0, 1, 2, 2147483647],
    "INT64": [-9223372036854775808, -1, 0, 1, 2, 9223372036854775807],
    "FP16": [-1.5, 0.0, 0.25, 1.0, 2.5, 65504.0],
    "FP32": [-1.5, 0.0, 0.25, 1.0, 2.5, 3.0e38],
    "FP64": [-1.5, 0.0, 0.25, 1.0, 2.5, 1.0e300],
    "BF16": [-1.5, 0.0, 0.25, 1.0, 2.5, 256.0],
    "BYTES": ["a", "", "héllo", "d", "e", "f"],
}


def parse(response: Any) -> tuple[dict[str, Any], bytes]:
    """Split a response into its JSON header and binary part."""
    length = response.headers.get(HEADER)
    body = response.get_data()
    if length is None:
        return json.loads(body), b""
    return json.loads(body[:int(length)]), body[int(length):]


def binary_of(values: list[Any], datatype: str) -> bytes:
    if datatype == "BYTES":
        encoded = [v.encode() for v in values]
        return b"".join(struct.pack("<I", len(v)) + v for v in encoded)
    return np.asarray(values, dtype=V2_TO_NUMPY[datatype]).tobytes()


def infer_binary(client: FlaskClient, header: dict[str, Any], binary: bytes,
                 model: str = "same", **headers: str) -> Any:
    text = json.dumps(header).encode()
    return client.post(f"/v2/models/{model}/infer", data=text + binary,
                       headers={HEADER: str(len(text)), **headers})


@pytest.mark.parametrize("datatype", sorted(SAMPLES))
def test_every_datatype_json_round_trip(identity_client: FlaskClient, datatype: str) -> None:
    if datatype not in V2_TO_NUMPY:
        pytest.skip("numpy has no bfloat16 here (ml_dtypes is not installed)")
    values = SAMPLES[datatype]
    nested = [values[:3], values[3:]]
    body = {"inputs": [{"name": "flat", "datatype": datatype, "shape": [2, 3], "data": values},
                       {"name": "nested", "datatype": datatype, "shape": [3, 2],
                        "data": nested}]}
    got = identity_client.post("/v2/models/same/infer", json=body)
    assert got.status_code == 200, got.data
    outputs = got.get_json()["outputs"]
    assert [o["name"] for o in outputs] == ["flat", "nested"]
    for output, shape in zip(outputs, ([2, 3], [3, 2])):
        assert output["datatype"] == datatype
        assert output["shape"] == shape
        assert output["data"] == values  # flat, row-major


@pytest.mark.parametrize("datatype", sorted(SAMPLES))
def test_every_datatype_binary_round_trip(identity_client: FlaskClient, datatype: str) -> None:
    if datatype not in V2_TO_NUMPY:
        pytest.skip("numpy has no bfloat16 here (ml_dtypes is not installed)")
    values = SAMPLES[datatype]
    raw = binary_of(values, datatype)
    header = {"inputs": [{"name": "x", "datatype": datatype, "shape": [2, 3],
                          "parameters": {"binary_data_size": len(raw)}}],
              "parameters": {"binary_data_output": True}}
    got = infer_binary(identity_client, header, raw)
    assert got.status_code == 200, got.data
    assert got.mimetype == "application/octet-stream"
    head, binary = parse(got)
    (output,) = head["outputs"]
    assert output == {"name": "x", "datatype": datatype, "shape": [2, 3],
                      "parameters": {"binary_data_size": len(raw)}}
    assert binary == raw


def test_binary_inputs_json_outputs_and_mixed(identity_client: FlaskClient) -> None:
    a = np.arange(6, dtype=np.float32)
    b = np.array([1, -2], dtype=np.int64)
    raw = a.tobytes() + b.tobytes()
    header = {"inputs": [{"name": "a", "datatype": "FP32", "shape": [2, 3],
                          "parameters": {"binary_data_size": 24}},
                         {"name": "j", "datatype": "INT32", "shape": [1], "data": [7]},
                         {"name": "b", "datatype": "INT64", "shape": [2],
                          "parameters": {"binary_data_size": 16}}]}
    got = infer_binary(identity_client, header, raw)
    assert got.status_code == 200, got.data
    assert HEADER not in got.headers
    outputs = {o["name"]: o for o in got.get_json()["outputs"]}
    assert outputs["a"]["data"] == a.tolist()
    assert outputs["j"]["data"] == [7]
    assert outputs["b"]["data"] == [1, -2]


def test_binary_output_flag_per_output(client: FlaskClient) -> None:
    """``binary_data`` on a requested output overrides ``binary_data_output``."""
    body = {"inputs": [{"name": "x", "datatype": "FP64", "shape": [2, 4],
                        "data": [5.1, 3.5, 1.4, 0.2, 6.2, 2.9, 4.3, 1.3]}],
            "parameters": {"binary_data_output": True},
            "outputs": [{"name": "predict_proba"},
                        {"name": "predict", "parameters": {"binary_data": False}}]}
    got = client.post("/v2/models/iris/infer", json=body)
    assert got.status_code == 200
    head, binary = parse(got)
    proba, label = head["outputs"]
    assert label == {"name": "predict", "datatype": "INT64", "shape": [2], "data": [0, 1]}
    assert proba["parameters"] == {"binary_data_size": 48} and "data" not in proba
    values = np.frombuffer(binary, dtype="<f8").reshape(2, 3)
    assert values.argmax(axis=1).tolist() == [0, 1]
    assert np.allclose(values.sum(axis=1), 1.0)


def test_binary_request_to_sklearn_without_content_type(client: FlaskClient) -> None:
    rows = np.array([[5.1, 3.5, 1.4, 0.2], [6.2, 2.9, 4.3, 1.3]], dtype=np.float32)
    header = {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [2, 4],
                          "parameters": {"binary_data_size": rows.nbytes}}],
              "outputs": [{"name": "predict", "parameters": {"binary_data": True}}]}
    got = infer_binary(client, header, rows.tobytes(), model="iris")
    assert got.status_code == 200, got.data
    head, binary = parse(got)
    assert head["outputs"][0]["parameters"]["binary_data_size"] == 16
    assert np.frombuffer(binary, dtype="<i8").tolist() == [0, 1]


def test_bytes_output_not_text_is_base64(identity_client: FlaskClient) -> None:
    raw = struct.pack("<I", 2) + b"\xff\x00"
    header = {"inputs": [{"name": "b", "datatype": "BYTES", "shape": [1],
                          "parameters": {"binary_data_size": len(raw)}}]}
    got = infer_binary(identity_client, header, raw)
    (output,) = got.get_json()["outputs"]
    assert output["parameters"] == {"content_type": "base64"}
    assert output["data"] == ["/wA="]


def test_nan_and_infinity_print_as_null(identity_client: FlaskClient) -> None:
    raw = np.array([np.nan, np.inf, 1.0], dtype=np.float32).tobytes()
    header = {"inputs": [{"name": "f", "datatype": "FP32", "shape": [3],
                          "parameters": {"binary_data_size": 12}}]}
    got = infer_binary(identity_client, header, raw)
    assert got.data.count(b"NaN") == 0 and got.data.count(b"Infinity") == 0
    assert got.get_json()["outputs"][0]["data"] == [None, None, 1.0]


@pytest.mark.parametrize("header_length, body, expected", [
    ("500", b'{"inputs": []}', "is 500 but the body has only 14 bytes"),
    ("ten", b'{"inputs": []}', "must be an integer"),
    ("-1", b'{"inputs": []}', "must not be negative"),
    ("0", b"\x00\x00\x80\x3f", "Raw request must only have 1 input (found 1) to be deduced "
                                  "but got 0 inputs in 'same' model configuration"),
])
def test_bad_binary_header(identity_client: FlaskClient, header_length: str, body: bytes,
                           expected: str) -> None:
    got = identity_client.post("/v2/models/same/infer", data=body,
                               headers={HEADER: header_length})
    assert got.status_code == 400
    assert expected in got.get_json()["error"]


@pytest.mark.parametrize("tensor, binary, expected", [
    ({"datatype": "FP32", "shape": [2, 2], "parameters": {"binary_data_size": 12}},
     b"\x00" * 12, "binary_data_size is 12 bytes but FP32 of shape [2, 2] needs 16"),
    ({"datatype": "INT64", "shape": [3], "parameters": {"binary_data_size": 16}},
     b"\x00" * 16, "needs 24"),
    ({"datatype": "FP32", "shape": [1], "parameters": {"binary_data_size": 4}},
     b"\x00" * 8, "4 bytes of binary data after the JSON header belong to no input"),
    ({"datatype": "FP32", "shape": [1], "parameters": {"binary_data_size": 8}},
     b"\x00" * 4, "runs past the end of the binary data"),
    ({"datatype": "FP32", "shape": [1], "parameters": {"binary_data_size": -4}},
     b"", "must be a non-negative integer"),
    ({"datatype": "FP32", "shape": [1], "parameters": {"binary_data_size": 4}, "data": [1.0]},
     b"\x00" * 4, "not both"),
    ({"datatype": "BOOL", "shape": [2], "parameters": {"binary_data_size": 2}},
     b"\x01\x02", "BOOL bytes must be 0 or 1"),
    ({"datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 6}},
     struct.pack("<I", 5) + b"ab", "runs past the end of its data"),
    ({"datatype": "BYTES", "shape": [2], "parameters": {"binary_data_size": 6}},
     struct.pack("<I", 2) + b"ab", "shape [2] needs 2 values, got 1"),
    ({"datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 2}},
     b"ab", "ends inside a length prefix"),
])
def test_bad_binary_input(identity_client: FlaskClient, tensor: dict[str, Any], binary: bytes,
                          expected: str) -> None:
    got = infer_binary(identity_client, {"inputs": [{"name": "x", **tensor}]}, binary)
    assert got.status_code == 400
    assert expected in got.get_json()["error"]


@pytest.mark.parametrize("input_parameters, output, expected", [
    ([], {"name": "y"}, "input 'x': 'parameters' must be an object"),
    ({}, {"name": "y", "parameters": 3}, "output 'y': 'parameters' must be an object"),
    ({}, {"name": "y", "parameters": {"binary_data": "yes"}},
     "output 'y': parameter 'binary_data' must be true or false"),
])
def test_bad_tensor_parameters_name_their_tensor(identity_client: FlaskClient,
                                                 input_parameters: Any, output: Any,
                                                 expected: str) -> None:
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1.0],
                        "parameters": input_parameters}], "outputs": [output]}
    got = identity_client.post("/v2/models/same/infer", json=body)
    assert got.status_code == 400
    assert got.get_json()["error"] == expected


def test_predictor_failure_is_500_with_error_body(identity_client: FlaskClient) -> None:
    body = {"inputs": [{"name": "explode", "datatype": "FP32", "shape": [1], "data": [1]}]}
    got = identity_client.post("/v2/models/same/infer", json=body)
    assert got.status_code == 500
    assert got.get_json() == {"error": "model 'same' failed to predict"}


def test_body_over_the_limit_is_413(make_app: Any, model_config: dict[str, Any]) -> None:
    small = make_app(model_config, max_request_bytes=64).test_client()
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [10, 4], "data": [0.5] * 40}]}
    got = small.post("/v2/models/iris/infer", json=body)
    assert got.status_code == 413
    assert "error" in got.get_json()


@pytest.mark.parametrize("encoding, compress", [
    ("gzip", lambda data: gzip.compress(data)),
    ("deflate", lambda data: zlib.compress(data)),
])
def test_compressed_binary_request(client: FlaskClient, encoding: str,
                                   compress: Any) -> None:
    rows = np.array([[5.1, 3.5, 1.4, 0.2], [6.2, 2.9, 4.3, 1.3]])
    header = json.dumps({"inputs": [{"name": "x", "datatype": "FP64", "shape": [2, 4],
                                     "parameters": {"binary_data_size": rows.nbytes}}],
                         "outputs": [{"name": "predict"}]}).encode()
    got = client.post("/v2/models/iris/infer", data=compress(header + rows.tobytes()),
                      headers={HEADER: str(len(header)), "Content-Encoding": encoding})
    assert got.status_code == 200, got.data
    assert got.get_json()["outputs"][0]["data"] == [0, 1]


DIGITS = np.random.default_rng(0).integers(48, 58, 70_000, np.uint8).tobytes()
"""70,000 random digits: they deflate to less than half, far from the inflate-ratio limit."""


@pytest.mark.parametrize("encoding, body, status, expected", [
    pytest.param("br", b"x", 400, "unsupported Content-Encoding 'br'", id="br"),
    pytest.param("gzip", b"not gzip at all", 400, "the gzip request body is corrupt",
                 id="gzip-corrupt"),
    pytest.param("gzip", gzip.compress(b'{"inputs": []}', mtime=0)[:12], 400,
                 "the gzip request body is truncated", id="gzip-truncated"),
    pytest.param("deflate", zlib.compress(b" " * 100_000), 413,
                 "inflates to more than 200 times its size", id="deflate-ratio"),
    pytest.param("deflate", zlib.compress(DIGITS), 413, "inflates to more than 65536 bytes",
                 id="deflate-size"),
])
def test_bad_compressed_request(make_app: Any, model_config: dict[str, Any], encoding: str,
                                body: bytes, status: int, expected: str) -> None:
    small = make_app(model_config, max_request_bytes=65536).test_client()
    got = small.post("/v2/models/iris/infer", data=body, headers={"Content-Encoding": encoding})
    assert got.status_code == status
    assert expected in got.get_json()["error"]


def test_classification_extension(client: FlaskClient) -> None:
    body = {"inputs": [{"name": "x", "datatype": "FP64", "shape": [2, 4],
                        "data": [5.1, 3.5, 1.4, 0.2, 7.7, 3.0, 6.1, 2.3]}],
            "outputs": [{"name": "predict_proba", "parameters": {"classification": 2}},
                        {"name": "predict", "parameters": {"classification": 5}}]}
    got = client.post("/v2/models/iris/infer", json=body)
    assert got.status_code == 200, got.data
    proba, label = got.get_json()["outputs"]
    assert proba["datatype"] == "BYTES" and proba["shape"] == [2, 2]
    first = [item.split(":") for item in proba["data"][:2]]
    assert [(index, name) for _, index, name in first] == [("0", "0"), ("1", "1")]
    assert float(first[0][0]) > 0.9 > float(first[1][0])
    assert proba["data"][2].endswith(":2:2")  # row 2 is a virginica, class label 2
    # a 1-D output is classified as a whole; asking for more than it has gives all
    assert label == {"name": "predict", "datatype": "BYTES", "shape": [2],
                     "data": ["2:1", "0:0"]}


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "2"])
def test_classification_count_must_be_positive(client: FlaskClient, count: Any) -> None:
    body = {"inputs": [{"name": "x", "datatype": "FP64", "shape": [1, 4],
                        "data": [5.1, 3.5, 1.4, 0.2]}],
            "outputs": [{"name": "predict_proba", "parameters": {"classification": count}}]}
    got = client.post("/v2/models/iris/infer", json=body)
    assert got.status_code == 400
    assert "'classification' must be a positive integer" in got.get_json()["error"]


def test_classify_refuses_bytes() -> None:
    from flask_predict.errors import InvalidInput
    from flask_predict.protocols.kserve_v2.classification import classify

    with pytest.raises(InvalidInput, match="output 's': classification needs numbers"):
        classify(np.array([b"a"], dtype=object), 1, None, "s")


# --- metadata, health, readiness ---------------------------------------------------------

@pytest.mark.parametrize("path", ["/v2", "/v2/"])
def test_server_metadata_without_redirect(client: FlaskClient, path: str) -> None:
    got = client.get(path)
    assert got.status_code == 200
    assert got.get_json() == {"name": "flask-predict", "version": package_version("flask-predict"),
                              # this app does not poll: no model_repository extension
                              "extensions": ["binary_tensor_data", "classification",
                                             "statistics"]}


def test_server_name_setting(make_app: Any, model_config: dict[str, Any]) -> None:
    named = make_app(model_config, server_name="triton-compatible").test_client()
    assert named.get("/v2").get_json()["name"] == "triton-compatible"


@pytest.mark.parametrize("path", ["/v2/health/live", "/v2/health/ready", "/v2/models/iris/ready",
                                  "/v2/models/xgb/versions/1/ready", "/v2/models/echo/ready"])
def test_probes_answer_200_with_an_empty_body(client: FlaskClient, path: str) -> None:
    got = client.get(path)
    assert got.status_code == 200
    assert got.data == b""


@pytest.mark.parametrize("path, status", [
    ("/v2/models/nope/ready", 404),
    ("/v2/models/iris/versions/2/ready", 404),
    ("/v2/models/iris/versions/x/ready", 404),
    ("/v2/models/nope", 404),
    ("/v2/models/iris/versions/3", 404),
    ("/v2/models/iris/versions/one", 404),
    ("/v2/unknown/path", 404),
    ("/v2/models/iris/infer", 404),  # GET on the inference route
])
def test_unknown_things_answer_error_json(client: FlaskClient, path: str, status: int) -> None:
    got = client.get(path)
    assert got.status_code == status
    assert isinstance(got.get_json()["error"], str)


@pytest.fixture(scope="module")
def half_ready_app(make_app: Any, model_config: dict[str, Any],
                   tmp_path_factory: pytest.TempPathFactory) -> Flask:
    """Iris loaded, and model ``broken`` whose only version failed to load."""
    app = make_app(model_config)
    broken = tmp_path_factory.mktemp("broken")
    (broken / "1").mkdir()
    (broken / "1" / "model.joblib").write_bytes(b"not a pickle")
    specs = [*app.extensions["predict"].settings.models,
             ModelSpec(name="broken", base_path=str(broken), predictor="sklearn")]
    app.extensions["predict"].service.repository.sync(specs)
    return app


def test_readiness_is_false_while_a_model_has_no_version(half_ready_app: Flask) -> None:
    client = half_ready_app.test_client()
    assert client.get("/v2/health/live").status_code == 200
    assert client.get("/v2/health/ready").status_code == 400
    assert client.get("/v2/models/iris/ready").status_code == 200
    assert client.get("/v2/models/broken/ready").status_code == 400
    assert client.get("/v2/models/broken/versions/1/ready").status_code == 400
    got = client.post("/v2/models/broken/infer", json={"inputs": []})
    assert got.status_code == 503
    assert got.get_json()["error"] == "Request for unknown model: 'broken' has no available versions"


def test_model_metadata_sklearn(client: FlaskClient) -> None:
    expected = {"name": "iris", "versions": ["1"], "platform": "sklearn",
                "inputs": [{"name": "inputs", "datatype": "FP64", "shape": [-1, 4]}],
                "outputs": [{"name": "predict", "datatype": "INT64", "shape": [-1]},
                            {"name": "predict_proba", "datatype": "FP64", "shape": [-1, 3]}]}
    assert client.get("/v2/models/iris").get_json() == expected
    assert client.get("/v2/models/iris/versions/1").get_json() == expected


def test_model_metadata_xgboost_and_custom(client: FlaskClient) -> None:
    xgb = client.get("/v2/models/xgb").get_json()
    assert xgb["platform"] == "xgboost"
    assert xgb["inputs"] == [{"name": "inputs", "datatype": "FP32", "shape": [-1, 4]}]
    assert xgb["outputs"] == [{"name": "predict", "datatype": "FP32", "shape": [-1]}]
    echo = client.get("/v2/models/echo").get_json()
    assert echo["platform"] == "custom"
    assert echo["inputs"] == [{"name": "instances", "datatype": "BYTES", "shape": [-1]}]


def test_per_model_default_outputs(make_app: Any, model_config: dict[str, Any]) -> None:
    config = {"iris": {**model_config["iris"], "outputs": ["predict_proba"]}}
    client = make_app(config).test_client()
    body = {"inputs": [{"name": "x", "datatype": "FP64", "shape": [1, 4],
                        "data": [5.1, 3.5, 1.4, 0.2]}]}
    outputs = client.post("/v2/models/iris/infer", json=body).get_json()["outputs"]
    assert [o["name"] for o in outputs] == ["predict_proba"]
    body["outputs"] = [{"name": "predict"}]
    outputs = client.post("/v2/models/iris/infer", json=body).get_json()["outputs"]
    assert [o["name"] for o in outputs] == ["predict"]


def test_xgboost_nan_token_and_null_are_both_missing(client: FlaskClient) -> None:
    def predict(first: Any) -> float:
        body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4],
                            "data": [first, 0.1, 0.2, 0.3]}]}
        data = json.dumps(body).replace('"FIRST"', "NaN").encode()
        got = client.post("/v2/models/xgb/infer", data=data)
        assert got.status_code == 200, got.data
        value: float = got.get_json()["outputs"][0]["data"][0]
        return value

    assert predict(None) > 0.9
    assert predict("FIRST") > 0.9  # the NaN token
    assert predict(0.0) < 0.1  # zero is a value, not missing


# --- pure functions ------------------------------------------------------------------------

def test_split_body() -> None:
    assert split_body(b'{"a":1}xyz', "7") == (b'{"a":1}', b"xyz")
    assert split_body(b'{"a":1}', None) == (b'{"a":1}', b"")


def test_encode_orders_outputs_and_echoes_id() -> None:
    from flask_predict.types import InferenceResponse

    response = InferenceResponse("m", 3, {"b": np.array([1.0]), "a": np.array([[True]])})
    body, chunks = wire.encode_infer(response, "42", wire.OutputOptions(binary={"a": True}))
    assert body == {"model_name": "m", "model_version": "3", "id": "42", "outputs": [
        {"name": "b", "datatype": "FP64", "shape": [1], "data": body["outputs"][0]["data"]},
        {"name": "a", "datatype": "BOOL", "shape": [1, 1],
         "parameters": {"binary_data_size": 1}}]}
    assert body["outputs"][0]["data"].tolist() == [1.0]
    assert chunks == [b"\x01"]


@pytest.mark.parametrize("body", [
    b'{"inputs":[{"name":"x","datatype":"FP32","shape":[2,2],"data":[1,2.5,-3e2,4]}],"id":"a"}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[2,2],"data":[[1,2],[3,4]]}]}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[2,2],"data":[[1,2],[3]]}]}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[2],"data":[1,null]}]}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[2],"data":[true,1]}]}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[2],"data":["1",1]}]}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[2],"data":[NaN,1]}]}',
    b'{"inputs":[{"name":"x","datatype":"INT64","shape":[2],"data":[9007199254740993,1]}]}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[0],"data":[]}]}',
    b'{"inputs":"none"}', b'{"id":"no inputs"}', b'[1,2]', b'{"inputs":[1,{"a":2}]}',
    # simdjson's buffer flattens nesting: the brackets must still be counted
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[2],"data":[1,[2]]}]}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[3],"data":[1,[],[2,3]]}]}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[2,2],"data":[[1,[2]],[3,4]]}]}',
    b'{"inputs":[{"name":"x[0]","datatype":"FP64","shape":[2],"data":[1,2]},'
    b'{"name":"y","datatype":"FP32","shape":[2],"data":[3,[4]]}],"outputs":[{"name":"o"}]}',
    b'{"inputs":[{"name":"x","datatype":"FP64","shape":[2],"data":[1,2],'
    b'"parameters":{"p":[[1]]}}],"id":"[["}',
])
def test_loads_v2_infer_matches_loads(body: bytes) -> None:
    from flask_predict import codecs

    # padded past SMALL_BODY: simdjson's path (smaller bodies are read by loads itself)
    fast = codecs.loads_v2_infer(body + b" " * codecs.parsing.SMALL_BODY)
    plain = codecs.loads(body)
    if isinstance(plain, dict) and isinstance(plain.get("inputs"), list):
        for got, want in zip(fast["inputs"], plain["inputs"]):
            if isinstance(got, dict) and isinstance(got.get("data"), np.ndarray):
                assert got["data"].dtype == np.float64
                assert got["data"].tolist() == np.asarray(want["data"], float).ravel().tolist()
                got, want = ({k: v for k, v in d.items() if k != "data"} for d in (got, want))
            assert got == want
        assert {k: v for k, v in fast.items() if k != "inputs"} == \
            {k: v for k, v in plain.items() if k != "inputs"}
    else:
        assert fast == plain


def test_loads_v2_infer_reads_numbers_into_one_array() -> None:
    from flask_predict import codecs

    body = b'{"inputs":[{"name":"x","datatype":"FP32","shape":[2],"data":[0.5,2]}]}'
    # past SMALL_BODY (a smaller body is read by orjson: simdjson's set-up costs more)
    padded = body + b" " * codecs.parsing.SMALL_BODY
    data = codecs.loads_v2_infer(padded)["inputs"][0]["data"]
    assert isinstance(data, np.ndarray) and data.tolist() == [0.5, 2.0]
    assert codecs.loads_v2_infer(body)["inputs"][0]["data"] == [0.5, 2]
