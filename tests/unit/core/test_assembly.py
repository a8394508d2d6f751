"""assembly: one Flask-free core. A core assembled from settings serves gRPC with no Flask
app at all (in a process where Flask cannot be imported), and answers as the Flask app built
on the same settings does."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient

from flask_predict.core.assembly import assemble
from flask_predict.settings.app import read_settings
from tests import models
from tests.grpc_app import serving

SERVE_WITHOUT_FLASK = '''
import json, sys
for blocked in ("flask", "werkzeug"):
    sys.modules[blocked] = None  # importing either raises ImportError
from flask_predict.core.assembly import assemble
from flask_predict.settings.app import read_settings
from flask_predict.grpc.server import GrpcServer
import tritonclient.grpc as grpcclient
import numpy as np

settings = read_settings({"PREDICT_MODELS": {"iris": {"base_path": sys.argv[1]}},
                          "PREDICT_POLL_SECONDS": 0, "PREDICT_GRPC_PORT": 0,
                          "PREDICT_GRPC_HOST": "127.0.0.1"})
state = assemble(settings)
server = GrpcServer(state)
port = server.start()
client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
rows = np.array([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]])
request = grpcclient.InferInput("input-0", list(rows.shape), "FP64")
request.set_data_from_numpy(rows)
answer = client.infer("iris", [request])
print(json.dumps({"predict": answer.as_numpy("predict").tolist(),
                  "ready": client.is_model_ready("iris"),
                  "flask": "flask" in sys.modules and sys.modules["flask"] is not None}))
server.stop(0)
state.close()
'''


def test_an_assembled_core_serves_grpc_without_flask(tmp_path: Path) -> None:
    base = models.train_iris(tmp_path / "iris")
    script = tmp_path / "serve.py"
    script.write_text(textwrap.dedent(SERVE_WITHOUT_FLASK))
    done = subprocess.run([sys.executable, str(script), str(base)], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"predict": [0, 2], "ready": True, "flask": False}
    # the same answer as the Flask app's own gRPC server on the same settings
    for _app, port in serving({"iris": {"base_path": str(base)}}):
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        rows = np.array([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]])
        request = grpcclient.InferInput("input-0", list(rows.shape), "FP64")
        request.set_data_from_numpy(rows)
        assert client.infer("iris", [request]).as_numpy("predict").tolist() == [0, 2]


def test_assemble_loads_at_once_and_applies_the_start_up_rule(tmp_path: Path) -> None:
    base = models.train_iris(tmp_path / "iris")
    state = assemble(read_settings({"PREDICT_MODELS": {"iris": {"base_path": str(base)}},
                                    "PREDICT_POLL_SECONDS": 0}))
    try:
        assert state.service.ready and state.scopes.state is state
        assert state.service.control.watcher is None  # no polling asked for
    finally:
        state.close()
