"""Requests the OpenAPI fuzzing (test_fuzz.py) found answered wrongly, kept as regressions."""

from __future__ import annotations

from flask.testing import FlaskClient

ROW = {"name": "inputs", "shape": [1, 4], "datatype": "FP32", "data": [5.1, 3.5, 1.4, 0.2]}


def test_v2_infer_with_a_nul_in_a_key(client: FlaskClient) -> None:
    """A key holding "\\u0000" (at the top or in an input) was a 500: simdjson's lookup."""
    for body in ('{"x\\u0000": 1, "inputs": [%s]}', '{"inputs": [%s]}'):
        tensor = '{"name": "inputs", "shape": [1, 4], "datatype": "FP32", ' \
                 '"data": [5.1, 3.5, 1.4, 0.2], "k\\u0000": 0}'
        answer = client.post("/v2/models/iris/infer", data=body % tensor)
        assert answer.status_code == 200, answer.get_data(as_text=True)
        assert answer.get_json()["outputs"][0]["data"] == [0]
