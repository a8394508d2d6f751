"""TF Serving's REST API under real gunicorn with 2 sync workers serving TensorFlow models
from a TF Serving text-format model config file, beside a custom predictor from
``FLASK_PREDICT_MODELS``."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import GunicornServer, request, runners, worker_pids

pytest.importorskip("flask_predict_tensorflow")

pytestmark = [pytest.mark.e2e, pytest.mark.tensorflow]

CONFIG = """
model_config_list {{
  config {{
    name: "half_plus_two"
    base_path: "{half_plus_two}"
    model_platform: "tensorflow"
    version_labels {{ key: "stable" value: 123 }}
  }}
  config {{
    name: "half_plus_three"
    base_path: "{half_plus_three}"
    model_platform: "tensorflow"
  }}
}}
"""


def call(server: GunicornServer, method: str, path: str, body: Any = None,
         data: bytes | None = None) -> tuple[int, Any]:
    status, _, answer = request(method, server.url + path, body=body, data=data)
    return status, json.loads(answer)


def tf_worker_pids(server: GunicornServer, want: int) -> set[int]:
    return worker_pids(server, want, path="/v1/models/echo:predict")


def loaded_tensorflow(pid: int) -> bool:
    """Whether process *pid* has TensorFlow's native library mapped."""
    with open(f"/proc/{pid}/maps") as maps:
        return "_pywrap_tensorflow" in maps.read()


@pytest.fixture(scope="module")
def server(model_root: Path, tmp_path_factory: pytest.TempPathFactory,
           tfserving_models: Path) -> Any:
    folder = tmp_path_factory.mktemp("tfserving_e2e")
    config = folder / "models.config"
    config.write_text(CONFIG.format(
        half_plus_two=tfserving_models / "saved_model_half_plus_two_cpu",
        half_plus_three=tfserving_models / "saved_model_half_plus_three"))
    # TF Serving's status route is per worker: load before serving (a worker accepts
    # connections once its models are in), the mode for servers probed that way
    env = {"FLASK_PREDICT_MODEL_CONFIG_FILE": str(config),
           "FLASK_PREDICT_PROTOCOLS": "tfserving", "FLASK_PREDICT_GPUS": "0,1",
           "FLASK_PREDICT_LOAD_IN_BACKGROUND": "false"}
    echo = {"echo": {"base_path": str(model_root / "echo"), "predictor": "custom",
                     "class": "predictor.EchoPredictor"}}
    with GunicornServer(echo, workers=2, env=env, ready_path="/v1/models/half_plus_two",
                        timeout=180,
                        log_path=folder / "log") as running:
        yield running


def test_both_workers_serve_tensorflow(server: GunicornServer) -> None:
    pids = tf_worker_pids(server, want=2)
    assert len(pids) == 2, "both workers answered"
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: call(server, "POST", "/v1/models/half_plus_two:predict",
                                               {"instances": [1.0, 2.0, 5.0]}), range(40)))
    assert answers == [(200, {"predictions": [2.5, 3.0, 4.5]})] * 40
    # TensorFlow runs in the runners (one per GPU of PREDICT_GPUS), never in a worker
    assert server.process is not None
    assert not any(loaded_tensorflow(pid) for pid in pids)
    hosts = runners(server.process.pid)
    assert len(hosts) == 2 and all(loaded_tensorflow(pid) for pid in hosts)


def test_models_are_not_loaded_in_the_master(server: GunicornServer) -> None:
    assert server.process is not None
    assert not loaded_tensorflow(server.process.pid)


def test_routes_under_gunicorn(server: GunicornServer) -> None:
    assert call(server, "POST", "/v1/models/half_plus_three:predict",
                {"instances": [1.0, 2.0, 5.0]}) == (200, {"predictions": [3.5, 4.0, 5.5]})
    assert call(server, "POST", "/v1/models/half_plus_three:regress", {
        "signature_name": "tensorflow/serving/regress",
        "examples": [{"x": 1.0}, {"x": 2.0}]}) == (200, {"results": [3.5, 4.0]})
    assert call(server, "POST", "/v1/models/half_plus_two/labels/stable:classify", {
        "signature_name": "classify_x_to_y",
        "examples": [{"x": 2.0}]}) == (200, {"results": [[["", 3.0]]]})
    status, body = call(server, "GET", "/v1/models/half_plus_two/metadata")
    assert status == 200 and body["model_spec"]["version"] == "123"
    status, raw_headers, raw = request("POST", server.url + "/v1/models/half_plus_two:predict",
                                       data=b'{"instances": [0.1]}')
    assert (status, raw) == (200, b'{"predictions":[2.05]}')


def test_bad_input_leaves_workers_alive(server: GunicornServer) -> None:
    pids = tf_worker_pids(server, want=2)
    for _ in range(6):
        assert call(server, "POST", "/v1/models/half_plus_two:predict",
                    data=b'{"instances": [1.0')[0] == 400
        assert call(server, "POST", "/v1/models/half_plus_two:predict",
                    {"instances": ["a"]})[0] == 400
        assert call(server, "POST", "/v1/models/half_plus_two:regress",
                    {"signature_name": "regress_x_to_y", "examples": [{"x": 1}]})[0] == 400
        assert call(server, "POST", "/v1/models/echo:predict",
                    {"instances": [1], "fail": True})[0] == 500
    assert call(server, "GET", "/v1/models/nope")[0] == 404
    assert tf_worker_pids(server, want=2) == pids, "no worker died"

