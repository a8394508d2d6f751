"""TF Serving REST conformance through the Flask test client: the cases/ folder, then the
behaviours a JSON comparison cannot show (float printing, NaN tokens, metadata documents)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flask.testing import FlaskClient

from flask_predict.errors import InvalidInput
from flask_predict.protocols.tfserving import wire
from flask_predict.types import Classification, Signature, TensorSpec
from tests.protocols.compare import assert_json_close

CASES = sorted((Path(__file__).parent / "cases").glob("*.request.json"))
METADATA = Path(__file__).parent / "metadata"
"""TF Serving's own expected metadata documents (see the README there)."""


def send(client: FlaskClient, sent: dict[str, Any]) -> Any:
    data = sent["raw"] if "raw" in sent else (
        json.dumps(sent["body"]) if "body" in sent else None)
    return client.open(sent["path"], method=sent["method"], data=data)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name.split(".")[0])
def test_case(tf_client: FlaskClient, case: Path) -> None:
    sent = json.loads(case.read_text())
    expected = json.loads(case.with_name(case.name.replace(".request.", ".expected.")).read_text())
    got = send(tf_client, sent)
    assert got.status_code == expected["status"], got.data
    assert got.content_type == "application/json"
    body = json.loads(got.data)
    if "error_contains" in expected:
        assert set(body) == {"error"}
        assert expected["error_contains"] in body["error"]
    else:
        assert_json_close(body, expected["body"])


# --- output formatting ----------------------------------------------------------------------

def test_float32_printed_at_float32_precision(tf_client: FlaskClient) -> None:
    got = tf_client.post("/v1/models/half_plus_two:predict", data='{"instances": [0.1, 1.0]}')
    assert got.data == b'{"predictions":[2.05,2.5]}'


def test_nan_and_infinity_tokens(tf_client: FlaskClient) -> None:
    got = tf_client.post("/v1/models/half_plus_two:predict",
                         data='{"instances": [NaN, Infinity, -Infinity, 0.1]}')
    assert got.status_code == 200
    assert got.data == b'{"predictions":[NaN,Infinity,-Infinity,2.05]}'


def test_floats_printed_as_tf_servings_writer_does(tf_client: FlaskClient) -> None:
    """%g when six digits read back, else %.9g (float32) / %.17g (float64), .0 after whole
    numbers written without exponent (json_tensor.cc's WriteDecimal and its test vectors)."""
    got = tf_client.post("/v1/models/half_plus_two:predict",
                         data='{"instances": [17999996.0, 0.00002, 1999996.0, -4.0, 0.6666667]}')
    assert got.data == b'{"predictions":[9e+06,2.00001,1e+06,0.0,2.33333325]}'
    columnar = tf_client.post("/v1/models/half_plus_two:predict", data='{"inputs": 19999996.0}')
    assert columnar.data == b'{"outputs":1e+07}'


def test_shortest_numbers_on_request(make_app: Any, tf_models: dict[str, Any]) -> None:
    """PREDICT_TFSERVING_NUMBERS = "shortest": the shortest text that reads back the same."""
    app = make_app({"half_plus_two": tf_models["half_plus_two"]},
                   protocols=["tfserving"], tfserving_numbers="shortest")
    got = app.test_client().post("/v1/models/half_plus_two:predict",
                                 data='{"instances": [17999996.0, 0.6666667]}')
    assert got.data == b'{"predictions":[9000000.0,2.3333333]}'


def test_float64_outputs_print_seventeen_digits_when_six_do_not_read_back(
        tf_client: FlaskClient) -> None:
    got = tf_client.post("/v1/models/iris:predict", json={"inputs": [[5.1, 3.5, 1.4, 0.2]]})
    text = got.data.decode()
    proba = got.get_json()["outputs"]["predict_proba"][0]
    for value in proba:
        short = "%g" % value
        printed = short if float(short) == value else "%.17g" % value
        assert printed in text


def test_integers_stay_integers(tf_client: FlaskClient) -> None:
    got = tf_client.post("/v1/models/multi:predict",
                         json={"signature_name": "ints", "inputs": {"n": [[1, 2]]}})
    assert got.data == b'{"outputs":[[2,3]]}'


# --- metadata -------------------------------------------------------------------------------

def test_metadata_equals_tf_serving_document(tf_client: FlaskClient) -> None:
    expected = json.loads((METADATA / "half_plus_two_model_metadata.json").read_text())
    expected["model_spec"]["name"] = "half_plus_two"
    got = tf_client.get("/v1/models/half_plus_two/metadata")
    assert got.status_code == 200
    assert got.get_json() == expected
    assert tf_client.get("/v1/models/half_plus_two/versions/123/metadata").get_json() == expected


def test_metadata_tf2_export_lists_init_op_and_defaults(tf_client: FlaskClient) -> None:
    signatures = tf_client.get("/v1/models/tf2/metadata").get_json()[
        "metadata"]["signature_def"]["signature_def"]
    approximate = json.loads(
        (METADATA / "saved_model_half_plus_two_tf2_2_versions_metadata.json").read_text())[
        "metadata"]["signature_def"]["signature_def"]
    assert "__saved_model_init_op" in signatures
    for name, sig in approximate.items():
        assert signatures[name]["inputs"] == sig["inputs"]
        assert signatures[name]["outputs"] == sig["outputs"]
    assert "x" in signatures["serving_default"]["defaults"]


def test_metadata_without_recorded_shapes(tf_client: FlaskClient) -> None:
    sig = tf_client.get("/v1/models/half_plus_three/metadata").get_json()[
        "metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["inputs"] == {"x": {"dtype": "DT_FLOAT", "name": "x:0"}}


def test_metadata_version_and_label(tf_client: FlaskClient) -> None:
    stable = tf_client.get("/v1/models/versioned/labels/stable/metadata").get_json()
    assert stable["model_spec"] == {"name": "versioned", "signature_name": "", "version": "1"}
    latest = tf_client.get("/v1/models/versioned/metadata").get_json()
    assert latest["model_spec"]["version"] == "2"


def test_sklearn_metadata_derived_from_model(tf_client: FlaskClient) -> None:
    sig = tf_client.get("/v1/models/iris/metadata").get_json()[
        "metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["inputs"]["inputs"]["dtype"] == "DT_DOUBLE"
    assert sig["inputs"]["inputs"]["tensor_shape"]["dim"] == [
        {"size": "-1", "name": ""}, {"size": "4", "name": ""}]
    assert sig["outputs"]["predict_proba"]["tensor_shape"]["dim"][1]["size"] == "3"
    assert sig["method_name"] == "tensorflow/serving/predict"


def test_xgboost_metadata_feature_count(tf_client: FlaskClient) -> None:
    sig = tf_client.get("/v1/models/xgb/metadata").get_json()[
        "metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["inputs"]["inputs"]["dtype"] == "DT_FLOAT"
    assert sig["inputs"]["inputs"]["tensor_shape"]["dim"][1]["size"] == "4"


# --- scikit-learn and XGBoost ---------------------------------------------------------------

IRIS_ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]


def test_sklearn_predict_rows_name_outputs(tf_client: FlaskClient) -> None:
    predictions = tf_client.post("/v1/models/iris:predict",
                                 json={"instances": IRIS_ROWS}).get_json()["predictions"]
    assert [p["predict"] for p in predictions] == [0, 2]
    for p in predictions:
        assert math.isclose(sum(p["predict_proba"]), 1.0)


def test_number_matrix_fast_path_answers_as_the_json_path(tf_client: FlaskClient) -> None:
    rows = [[5.1, 3.5, 1.4, 0.2], [6, 3, 5, 2]]
    for model in ("iris", "xgb", "half_plus_two"):
        fast = tf_client.post(f"/v1/models/{model}:predict", json={"instances": rows})
        slow = tf_client.post(f"/v1/models/{model}:predict",
                              json={"instances": rows, "signature_name": ""})
        assert fast.status_code == 200 and fast.data == slow.data


def test_sklearn_predict_columnar(tf_client: FlaskClient) -> None:
    outputs = tf_client.post("/v1/models/iris:predict",
                             json={"inputs": IRIS_ROWS}).get_json()["outputs"]
    assert outputs["predict"] == [0, 2]
    assert np.asarray(outputs["predict_proba"]).shape == (2, 3)


def test_sklearn_classify_labels_with_scores(tf_client: FlaskClient) -> None:
    results = tf_client.post("/v1/models/iris:classify", json={
        "examples": [{"features": row} for row in IRIS_ROWS]}).get_json()["results"]
    assert [[label for label, _ in r] for r in results] == [["0", "1", "2"]] * 2
    best = [max(r, key=lambda pair: pair[1])[0] for r in results]
    assert best == ["0", "2"]


def test_sklearn_classify_context_supplies_the_row(tf_client: FlaskClient) -> None:
    results = tf_client.post("/v1/models/iris:classify", json={
        "context": {"features": IRIS_ROWS[1]}, "examples": [{}]}).get_json()["results"]
    assert max(results[0], key=lambda pair: pair[1])[0] == "2"


def test_xgboost_predict_null_is_missing(tf_client: FlaskClient) -> None:
    missing, zero = tf_client.post("/v1/models/xgb:predict", data=json.dumps(
        {"instances": [[None, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]]})).get_json()["predictions"]
    assert missing > 0.9 and zero < 0.1


def test_xgboost_regress(tf_client: FlaskClient) -> None:
    results = tf_client.post("/v1/models/xgb:regress", json={
        "examples": [{"row": [0.0, 1.0, 2.0, 3.0]}]}).get_json()["results"]
    direct = tf_client.post("/v1/models/xgb:predict", json={
        "instances": [[0.0, 1.0, 2.0, 3.0]]}).get_json()["predictions"]
    assert results == pytest.approx(direct)


# --- counter (stateful TF1 export with ref-typed outputs) ------------------------------------

def test_counter_columnar_scalar(make_app: Any, tfserving_models: Path) -> None:
    app = make_app({"counter": {"base_path": str(tfserving_models / "saved_model_counter")}},
                   protocols=["tfserving"])
    client = app.test_client()
    body = {"signature_name": "incr_counter_by", "inputs": 3.0}
    assert client.post("/v1/models/counter:predict", json=body).get_json() == {"outputs": 3.0}
    assert client.post("/v1/models/counter:predict", json=body).get_json() == {"outputs": 6.0}


# --- TF Serving's model config file ---------------------------------------------------------

def test_tf_serving_model_config_file(make_app: Any, tmp_path: Path,
                                      tfserving_models: Path) -> None:
    config = tmp_path / "models.config"
    config.write_text(f"""
model_config_list {{
  config {{
    name: "half_plus_two"
    base_path: "{tfserving_models / 'saved_model_half_plus_two_cpu'}"
    model_platform: "tensorflow"
    model_version_policy {{ specific {{ versions: 123 }} }}
    version_labels {{ key: "stable" value: 123 }}
  }}
}}
""")
    app = make_app(None, model_config_file=str(config), protocols=["tfserving"])
    got = app.test_client().post("/v1/models/half_plus_two/labels/stable:predict",
                                 json={"instances": [1.0]})
    assert got.get_json() == {"predictions": [2.5]}


# --- pure functions -------------------------------------------------------------------------

SIGNATURE = Signature(inputs=(TensorSpec("a", "FP32", (-1,)), TensorSpec("b", "BYTES", (-1,))),
                      outputs=(TensorSpec("y", "FP32", (-1,)),))


def test_decode_rows_named() -> None:
    inputs, rows = wire.decode_predict(
        {"instances": [{"a": 1, "b": "x"}, {"a": 2.5, "b": {"b64": "AP8="}}]}, SIGNATURE, "s")
    assert rows
    assert inputs["a"].dtype == np.float32 and inputs["a"].tolist() == [1.0, 2.5]
    assert inputs["b"].tolist() == [b"x", b"\x00\xff"]


def test_decode_features_kinds() -> None:
    features = wire.decode_features({"f": 1.5, "i": [1, True], "s": "t", "b": {"b64": "AP8="}})
    assert features["f"].dtype == np.float32
    assert features["i"].dtype == np.int64 and features["i"].tolist() == [1, 1]
    assert features["s"].tolist() == [b"t"] and features["b"].tolist() == [b"\x00\xff"]


def test_decode_features_int64_overflow() -> None:
    with pytest.raises(InvalidInput, match="Only int64_t is supported"):
        wire.decode_features({"i": 2**63})


def test_encode_predict_inconsistent_batch() -> None:
    with pytest.raises(InvalidInput, match="inconsistent batch size"):
        wire.encode_predict({"a": np.zeros(2), "b": np.zeros(3)}, row_format=True)


def test_encode_predict_scalar_in_rows() -> None:
    with pytest.raises(InvalidInput, match="has no shape information"):
        wire.encode_predict({"a": np.float32(1.0) * np.ones(())}, row_format=True)


def test_encode_classify_defaults() -> None:
    only_classes = Classification(classes=np.array([[b"a", b"b"]], dtype=object), scores=None)
    assert wire.encode_classify(only_classes, 1) == {"results": [[["a", 0.0], ["b", 0.0]]]}


def test_named_features_map_examples_to_rows(make_app: Any, tmp_path: Path) -> None:
    import xgboost as xgb

    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3))
    booster = xgb.train({"objective": "reg:squarederror", "nthread": 1},
                        xgb.DMatrix(x, label=x[:, 0] * 10, feature_names=["a", "b", "c"]),
                        num_boost_round=20)
    (tmp_path / "named" / "1").mkdir(parents=True)
    booster.save_model(tmp_path / "named" / "1" / "model.json")
    client = make_app({"named": {"base_path": str(tmp_path / "named")}},
                      protocols=["tfserving"]).test_client()
    rows = [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [float("nan"), 0.0, 0.0]]
    expected = booster.inplace_predict(np.asarray(rows, np.float32)).tolist()
    got = client.post("/v1/models/named:regress", json={
        "context": {"b": 0.0, "c": 0.0},
        "examples": [{"a": 1.0}, {"a": -1.0}, {}]}).get_json()
    assert got["results"] == pytest.approx(expected)  # a missing feature is NaN
    assert expected[0] > expected[1]
    unknown = client.post("/v1/models/named:regress", json={"examples": [{"z": 1.0}]})
    assert unknown.status_code == 400 and "unknown feature(s) ['z']" in unknown.get_json()["error"]
