"""SageMaker's container contract, started as SageMaker starts the image (``docker run IMAGE
serve``): the entry point with ``serve``, SageMaker's variables, nginx in front of gunicorn,
and an MLflow model saved straight into the folder standing for ``/opt/ml/model``."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.server import ROOT, free_port, request
from tests.protocols.mlflow.models import IRIS_COLUMNS, IRIS_ROWS, iris_frame, save

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("nginx")]

START = ROOT / "deploy" / "container" / "start"


def flat_mlflow_model(folder: Path) -> Path:
    """iris's LogisticRegression saved by ``mlflow.sklearn.save_model`` into *folder* itself,
    as SageMaker unpacks ``model.tar.gz``: no version folder."""
    pytest.importorskip("mlflow", reason="mlflow-skinny (requirements-test.txt) saves it")
    from sklearn.linear_model import LogisticRegression

    frame, target = iris_frame()
    save(LogisticRegression(max_iter=500).fit(frame, target), folder, frame)
    return folder


def test_serve_listens_on_sagemakers_port_with_its_workers(tmp_path: Path, nginx: str) -> None:
    model = flat_mlflow_model(tmp_path / "opt-ml-model")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLASK_PREDICT_", "MODEL_"))}
    env.update({"SAGEMAKER_BIND_TO_PORT": str(port), "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
                "SAGEMAKER_MODEL_SERVER_TIMEOUT": "30", "SM_MODEL_DIR": str(model),
                "HOST": "127.0.0.1", "PROXY_RUN_DIR": str(tmp_path / "run"),
                "PROXY_USER": _user(), "PYTHONUNBUFFERED": "1",
                "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                         str(Path(nginx).parent), os.environ["PATH"]])})
    log = tmp_path / "log"
    with open(log, "wb") as out:
        process = subprocess.Popen([str(START), "serve"], cwd=ROOT, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while request("GET", url + "/ping", timeout=2)[0] != 200:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
        status, headers, body = request("GET", url + "/ping")
        assert (status, body) == (200, b"\n")
        csv = (",".join(IRIS_COLUMNS) + "\n" + "\n".join(",".join(map(str, row))
                                                         for row in IRIS_ROWS)).encode()
        assert post(port, csv, {"Content-Type": "text/csv", "Accept": "text/csv",
                                "X-Amzn-SageMaker-Custom-Attributes": "trace=1"}) == (
            200, "text/csv", b"0\n2\n1\n")
        status, _, body = request("POST", url + "/invocations", body={"instances": [
            dict(zip(IRIS_COLUMNS, row)) for row in IRIS_ROWS]})
        assert (status, json.loads(body)) == (200, {"predictions": [0, 2, 1]})
        status, _, body = request("GET", url + "/execution-parameters")
        assert json.loads(body) == {"MaxConcurrentTransforms": 2,
                                    "BatchStrategy": "MULTI_RECORD", "MaxPayloadInMB": 64}
        text = log.read_text()
        assert "serving ['model'] with 2 worker(s)" in text, text[-3000:]
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    assert process.returncode == 0, log.read_text()[-3000:]


def test_a_bad_variable_stops_serve_naming_it(tmp_path: Path) -> None:
    env = {**os.environ, "SAGEMAKER_MODEL_SERVER_WORKERS": "none",
           "PROXY_RUN_DIR": str(tmp_path / "run"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run([str(START), "serve"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2
    assert "SAGEMAKER_MODEL_SERVER_WORKERS must be a whole number (at least 1), got 'none'" \
        in run.stderr


def post(port: int, data: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
    """POST /invocations with exactly *headers*; (status, media type, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", "/invocations", body=data, headers=headers)
        answer = connection.getresponse()
        return (answer.status, answer.getheader("Content-Type", "").split(";")[0],
                answer.read())
    finally:
        connection.close()


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
