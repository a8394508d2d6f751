"""Bodies that must not hurt a worker, on every protocol: compressed bodies (inflated within
bounds), the per-request limits, unknown routes and methods, odd names, empty bodies.
Each answer is in the protocol's own JSON format, never HTML, never a 5xx."""

from __future__ import annotations

import gzip
import json
import math
import textwrap
import zlib
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3], [5.9, 3.0, 4.2, 1.5], [6.0, 2.2, 5.0, 1.5]]

Request = tuple[str, Any]
"""(path, JSON body) of a request for the model iris."""


def tfserving(rows: Any) -> Request:
    return "/v1/models/iris:predict", {"instances": rows}


def aiplatform(rows: Any) -> Request:
    return "/v1/projects/p/models/iris:predict", {"instances": rows}


def kserve_v2(rows: Any) -> Request:
    array = np.asarray(rows, dtype=object)
    flat = array.reshape(-1).tolist() if array.ndim >= 2 else rows
    return "/v2/models/iris/infer", {"inputs": [{"name": "x", "datatype": "FP64",
                                                  "shape": list(array.shape), "data": flat}]}


def grps(rows: Any) -> Request:
    return "/grps/v1/infer/predict", {"model": "iris", "ndarray": rows}


PROTOCOLS: dict[str, Callable[[Any], Request]] = {
    "tfserving": tfserving, "aiplatform": aiplatform, "kserve_v2": kserve_v2, "grps": grps}


def post(client: FlaskClient, path: str, data: bytes, **headers: str) -> TestResponse:
    return client.post(path, data=data, headers={"Content-Type": "application/json", **headers})


def error_of(protocol: str, got: TestResponse) -> str:
    """The error message, checking the protocol's error format on the way."""
    assert got.content_type.startswith("application/json"), got.data
    body = got.get_json()
    if protocol == "grps":
        assert body["status"]["code"] == got.status_code
        assert body["status"]["status"] == "FAILURE"
        message: str = body["status"]["msg"]
    elif isinstance(body.get("error"), dict):  # AI Platform's routing errors: Google's envelope
        assert set(body["error"]) >= {"code", "message", "status"}
        assert body["error"]["code"] == got.status_code
        message = body["error"]["message"]
    else:
        assert set(body) == {"error"}
        message = body["error"]
    return message


@pytest.fixture(scope="module")
def limited(make_app: Any, model_config: dict[str, Any]) -> FlaskClient:
    return make_app(model_config, max_instances=3, max_json_depth=6, max_tensor_elements=10,
                    max_request_bytes=200_000, max_inflate_ratio=50,
                    kserve_v2_max_json_depth=3).test_client()


TOO_DEEP = {"kserve_v2": "JSON nesting depth exceeds maximum allowed limit"}
"""How a protocol says a body nests too deeply, where it is not "nested too deeply"
(V2: Triton's words, and its own limit, PREDICT_KSERVE_V2_MAX_JSON_DEPTH)."""


# --- compressed bodies ------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("encoding, compress", [("gzip", gzip.compress),
                                                ("deflate", zlib.compress)])
def test_compressed_bodies_are_accepted(client: FlaskClient, protocol: str, encoding: str,
                                        compress: Callable[[bytes], bytes]) -> None:
    path, body = PROTOCOLS[protocol](ROWS[:2])
    plain = post(client, path, json.dumps(body).encode())
    got = post(client, path, compress(json.dumps(body).encode()), **{
        "Content-Encoding": encoding})
    assert got.status_code == 200, got.data
    assert got.data == plain.data


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_inflating_past_the_ratio_is_refused(limited: FlaskClient, protocol: str) -> None:
    path, body = PROTOCOLS[protocol](ROWS[:2])
    padded = json.dumps(body).encode()[:-1] + b" " * 50_000 + b"}"
    got = post(limited, path, gzip.compress(padded), **{"Content-Encoding": "gzip"})
    assert got.status_code == 413
    assert "inflates to more than 50 times its size" in error_of(protocol, got)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_inflating_past_the_body_limit_is_refused(limited: FlaskClient, protocol: str) -> None:
    digits = np.random.default_rng(0).integers(48, 58, 250_000, np.uint8).tobytes()
    path, _ = PROTOCOLS[protocol](ROWS)
    got = post(limited, path, gzip.compress(b'{"x": "' + digits + b'"}'),
               **{"Content-Encoding": "gzip"})
    assert got.status_code == 413
    assert "inflates to more than 200000 bytes" in error_of(protocol, got)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("encoding, data, message", [
    pytest.param("gzip", b"not gzip", "request body is corrupt", id="gzip-corrupt"),
    pytest.param("gzip", gzip.compress(b'{"instances": [[1, 2]]}', mtime=0)[:-6],
                 "request body is truncated", id="gzip-truncated"),
    pytest.param("br", b"{}", "unsupported Content-Encoding 'br'", id="br-unsupported"),
])
def test_broken_compressed_bodies(client: FlaskClient, protocol: str, encoding: str,
                                  data: bytes, message: str) -> None:
    path, _ = PROTOCOLS[protocol](ROWS)
    got = post(client, path, data, **{"Content-Encoding": encoding})
    assert got.status_code == 400
    assert message in error_of(protocol, got)


def test_concatenated_gzip_members_are_one_body(client: FlaskClient) -> None:
    text = json.dumps({"instances": ROWS}).encode()
    got = post(client, "/v1/models/iris:predict",
               gzip.compress(text[:10]) + gzip.compress(text[10:]), **{"Content-Encoding": "gzip"})
    assert got.status_code == 200, got.data


# --- the gzip body that was cut short ---------------------------------------------------------

COUNTER = '''
import numpy as np


class Counter:
    """Counts and sums its input: a model for bodies of millions of values."""

    @classmethod
    def from_path(cls, model_dir):
        return cls()

    def predict(self, instances):
        return [len(instances)]

    def predict_tensors(self, inputs, outputs=None, signature=None):
        (array,) = inputs.values()
        return {"count": np.array([array.size]), "sum": np.array([int(array.sum())])}
'''

BIG = 2**24 + 5
"""One more value than simdjson counted (2**24 - 1) and then some."""


@pytest.fixture(scope="module")
def counter_config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("counter") / "1"
    folder.mkdir()
    (folder / "counter.py").write_text(textwrap.dedent(COUNTER))
    return {"counter": {"base_path": str(folder.parent), "predictor": "custom",
                        "class": "counter.Counter"}}


def big_gzip_body(shape: int) -> bytes:
    values = b"1," * (BIG - 1) + b"7"
    return gzip.compress(b'{"inputs":[{"name":"x","datatype":"INT64","shape":[%d],"data":[%s]}]}'
                         % (shape, values), 9)


def test_the_gzip_body_of_two_to_the_twenty_four_values(make_app: Any,
                                                        counter_config: dict[str, Any]) -> None:
    """About 33 KB of gzip inflating to 2**24 + 5 integers: every value is read, none cut
    off (the parser used to stop at 16,777,215, answer with wrong data for that shape and
    once abort the worker with ``free(): invalid size``)."""
    roomy = make_app(counter_config, max_inflate_ratio=2000, max_instances=2**25,
                     protocols=["kserve_v2"]).test_client()
    headers = {"Content-Encoding": "gzip"}
    cut = post(roomy, "/v2/models/counter/infer", big_gzip_body(2**24 - 1), **headers)
    assert cut.status_code == 400
    assert cut.get_json() == {"error": f"input 'x': shape [{2**24 - 1}] needs {2**24 - 1} "
                                       f"values, got {BIG}"}
    whole = post(roomy, "/v2/models/counter/infer", big_gzip_body(BIG), **headers)
    assert whole.status_code == 200, whole.data
    outputs = {o["name"]: o["data"] for o in whole.get_json()["outputs"]}
    assert outputs == {"count": [BIG], "sum": [BIG - 1 + 7]}
    default = make_app(counter_config, protocols=["kserve_v2"]).test_client()
    refused = post(default, "/v2/models/counter/infer", big_gzip_body(BIG), **headers)
    assert refused.status_code == 413 and "inflates to more than 200 times" in \
        refused.get_json()["error"]


# --- limits -----------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_too_many_instances(limited: FlaskClient, protocol: str) -> None:
    path, body = PROTOCOLS[protocol](ROWS)
    got = post(limited, path, json.dumps(body).encode())
    assert got.status_code == 413
    assert "the limit is 3" in error_of(protocol, got)
    path, body = PROTOCOLS[protocol](ROWS[:2])
    assert post(limited, path, json.dumps(body).encode()).status_code == 200


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p != "kserve_v2"])
def test_a_plain_matrix_meets_a_depth_limit_of_two(make_app: Any, model_config: dict[str, Any],
                                                   protocol: str) -> None:
    """The matrix bodies some routes read without JSON values nest three levels deep (V2's
    data is flat here, and its limit counts the levels of data: test_too_deep)."""
    shallow = make_app(model_config, max_json_depth=2).test_client()
    path, body = PROTOCOLS[protocol](ROWS[:2])
    got = post(shallow, path, json.dumps(body).encode())
    assert got.status_code == 400
    assert "nested too deeply" in error_of(protocol, got)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_too_deep(limited: FlaskClient, protocol: str) -> None:
    path, body = PROTOCOLS[protocol](ROWS[:2])
    deep = json.dumps(body).encode()[:-1] + b', "extra": [[[[[[[1]]]]]]]}'
    got = post(limited, path, deep)
    assert got.status_code == 400
    assert TOO_DEEP.get(protocol, "nested too deeply") in error_of(protocol, got)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_too_many_elements_in_a_tensor(limited: FlaskClient, protocol: str) -> None:
    path, body = PROTOCOLS[protocol]([[1.0] * 11])
    got = post(limited, path, json.dumps(body).encode())
    assert got.status_code == 413
    assert "the limit is 10" in error_of(protocol, got)


@pytest.mark.parametrize("shape", [[2**31], [2**16, 2**16], [2**63, 0]])
def test_v2_huge_shapes_are_refused_before_allocating(client: FlaskClient,
                                                      shape: list[int]) -> None:
    for datatype, extra in (("BYTES", {}), ("FP32", {"data": [1.0]})):
        body = {"inputs": [{"name": "x", "datatype": datatype, "shape": shape,
                            **(extra or {"parameters": {"binary_data_size": 4}})}]}
        header = json.dumps(body).encode()
        got = client.post("/v2/models/iris/infer", data=header + b"\0\0\0\0",
                          headers={"Inference-Header-Content-Length": str(len(header))})
        count = math.prod(shape)
        assert got.status_code in (400, 413), got.data
        if count > 2**25:
            assert got.status_code == 413 and "the limit is" in got.get_json()["error"]


def test_v2_binary_bytes_are_counted_before_they_are_cut(client: FlaskClient) -> None:
    chunk = b"\0\0\0\0" * 100_000  # 100,000 empty elements for a shape of 2
    header = json.dumps({"inputs": [{"name": "x", "datatype": "BYTES", "shape": [2],
                                     "parameters": {"binary_data_size": len(chunk)}}]}).encode()
    got = client.post("/v2/models/echo/infer", data=header + chunk,
                      headers={"Inference-Header-Content-Length": str(len(header))})
    assert got.status_code == 400
    assert got.get_json() == {"error": "input 'x': shape [2] needs 2 values, got more"}


# --- routes, methods, names, bodies -------------------------------------------------------

@pytest.mark.parametrize("method, path, status, protocol", [
    ("POST", "/v2", 404, "kserve_v2"),
    ("DELETE", "/v2/", 404, "kserve_v2"),
    ("GET", "/v2/models/iris/infer", 404, "kserve_v2"),
    ("PUT", "/v2/models/iris", 404, "kserve_v2"),
    ("GET", "/v2/nope/deeper", 404, "kserve_v2"),
    ("GET", "/grps/v1", 404, "grps"),
    ("GET", "/grps/v1/nope", 404, "grps"),
    ("GET", "/grps/v1/infer/predict", 405, "grps"),
    ("GET", "/grps/v1/metadata/model", 405, "grps"),
    ("DELETE", "/grps/v1/health/ready", 405, "grps"),
    ("GET", "/v1/nope", 400, "tfserving"),
    ("PATCH", "/v1/models/iris", 400, "tfserving"),
    ("GET", "/V1/models/iris:predict", 400, "tfserving"),
    ("GET", "/v1/projects/p/nope", 404, "aiplatform"),
    ("DELETE", "/v1/projects/p/models/iris:predict", 404, "aiplatform"),
])
def test_unknown_routes_and_methods_answer_in_the_protocols_format(
        client: FlaskClient, method: str, path: str, status: int, protocol: str) -> None:
    got = client.open(path, method=method)
    assert got.status_code == status
    assert error_of(protocol, got)


def test_ai_platform_routes_are_not_taken_by_tf_serving(client: FlaskClient) -> None:
    got = client.post("/v1/projects/p/models/iris:predict", json={"instances": ROWS[:1]})
    assert got.status_code == 200 and "predictions" in got.get_json()
    upper = client.post("/V1/MODELS/iris:predict", json={"instances": ROWS[:1]})
    assert upper.status_code == 200 and upper.get_json()["predictions"][0]["predict"] == 0


def test_head_and_options(client: FlaskClient) -> None:
    assert client.head("/v2/health/live").status_code == 200
    assert client.head("/grps/v1/health/live").status_code == 200
    head = client.head("/v1/models/iris")
    assert head.status_code == 400 and head.content_type == "application/json"
    options = client.options("/v1/models/iris:predict")
    assert options.status_code == 400
    assert options.get_json() == {"error": "Malformed request: OPTIONS /v1/models/iris:predict"}


@pytest.mark.parametrize("protocol, path, body, status", [
    ("tfserving", "/v1/models/ünï:predict", {"instances": [1]}, 404),
    ("tfserving", "/v1/models/%E2%82%AC/metadata", None, 404),
    ("kserve_v2", "/v2/models/ünï/infer", {"inputs": []}, 404),
    ("kserve_v2", "/v2/models/ünï", None, 404),
    ("grps", "/grps/v1/infer/predict", {"model": "ünï", "str_data": "x"}, 404),
    ("aiplatform", "/v1/projects/p/models/ünï:predict", {"instances": [1]}, 404),
])
def test_unicode_names(client: FlaskClient, protocol: str, path: str, body: Any,
                       status: int) -> None:
    got = (client.post(path, json=body) if body is not None else client.get(path))
    assert got.status_code == status
    assert error_of(protocol, got)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("data", [b"", b"   ", b"\n"])
def test_empty_bodies(client: FlaskClient, protocol: str, data: bytes) -> None:
    path, _ = PROTOCOLS[protocol](ROWS)
    got = post(client, path, data)
    assert got.status_code == 400
    assert error_of(protocol, got)


@pytest.mark.parametrize("protocol, path, body", [
    ("kserve_v2", "/v2/models/echo/infer",
     {"inputs": [{"name": "x", "datatype": "BYTES", "shape": [1], "data": [{"b64": "*"}]}]}),
    ("tfserving", "/v1/models/iris:regress", {"examples": [{"x": {"b64": "%%"}}]}),
    ("grps", "/grps/v1/infer/predict", {"model": "echo", "gmap": {"s_b": {"k": "!"}}}),
])
def test_bad_base64(client: FlaskClient, protocol: str, path: str, body: Any) -> None:
    got = client.post(path, json=body)
    assert got.status_code == 400
    assert "base64" in error_of(protocol, got)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_booleans_are_not_numbers(client: FlaskClient, protocol: str) -> None:
    path, body = PROTOCOLS[protocol]([[5.1, 3.5, True, 0.2]])
    got = post(client, path, json.dumps(body).encode())
    assert got.status_code == 400
    assert "true" in error_of(protocol, got).lower() or "boolean" in error_of(protocol, got)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_huge_integers(client: FlaskClient, protocol: str) -> None:
    path, body = PROTOCOLS[protocol](ROWS[:1])
    text = json.dumps(body).replace("5.1", "-" + "9" * 40).encode()
    got = post(client, path, text)
    assert got.status_code in (200, 400), got.data  # a double, as JSON parsers read it
    if got.status_code == 400:
        assert error_of(protocol, got)
