"""gRPC's per-request cost in two source trees, side by side in one run: V2 ``ModelInfer``
(raw contents of 1, 100 and 10,000 rows; typed contents of 1 row) and grps ``Predict``
(``gtensors`` of 1 and 100 rows), for ``revisions.py``'s 20-feature LogisticRegression.

Each tree serves gRPC from one process of its own (the app and its gRPC server in
process, no gunicorn, set up as a server's worker is: ``PREDICT_MANAGE_PROCESS`` sizes the
thread pools, fixes the heap thresholds and freezes the heap); a client in another process
sends one pre-encoded message after another for a few seconds, and the server's CPU time
over that stretch (every thread of its process) gives its requests per CPU second. Rounds
alternate the trees; medians are compared as ratios to the first tree, as in
``revisions.py``:

    .venv/bin/python benchmarks/grpc_revisions.py /tmp/before . [--rounds 5] [--seconds 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from revisions import report, run_rounds  # noqa: E402

SERVER = r'''
import json, subprocess, sys, time
from flask import Flask
sys.path.insert(0, sys.argv[1])
from flask_predict import FlaskPredict
try:
    from flask_predict.process.server import start_grpc
except ImportError:  # trees before the modules were grouped into packages
    from flask_predict.server import start_grpc
from flask_predict_sklearn import SklearnPredictor
app = Flask("bench")
app.config.update(PREDICT_MODELS={"lr": {"base_path": sys.argv[2] + "/lr",
                                         "predictor": "sklearn"}},
                  PREDICT_POLL_SECONDS=0, PREDICT_GRPC_PORT=0, PREDICT_GRPC_HOST="127.0.0.1",
                  PREDICT_MANAGE_PROCESS=True)
predict = FlaskPredict()
predict.register_predictor("sklearn", SklearnPredictor)
predict.init_app(app)
server = start_grpc(app)
client = subprocess.Popen([sys.executable, "-c", sys.argv[4], str(server.port), sys.argv[3]],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
out = {}
for line in client.stdout:  # "<case>": the client is warm and waits for the go
    case = line.strip()
    spent = time.process_time()
    client.stdin.write("go\n")
    client.stdin.flush()
    done = int(client.stdout.readline())
    out[case] = done / (time.process_time() - spent)
client.wait()
print(json.dumps(out))
'''

CLIENT = r'''
import sys, time
import grpc
import numpy as np
from flask_predict.grpc.messages import grps, v2
port, seconds = sys.argv[1], float(sys.argv[2])
rng = np.random.default_rng(1)

def infer(rows, typed):
    request = v2.ModelInferRequest(model_name="lr")
    x = rng.normal(size=(rows, 20))
    tensor = request.inputs.add(name="x", datatype="FP64", shape=[rows, 20])
    if typed:
        tensor.contents.fp64_contents.extend(x.reshape(-1).tolist())
    else:
        request.raw_input_contents.append(x.astype("<f8").tobytes())
    request.outputs.add(name="predict")
    return "/inference.GRPCInferenceService/ModelInfer", request.SerializeToString()

def gtensors(rows):
    message = grps.GrpsMessage(model="lr")
    tensor = message.gtensors.tensors.add(dtype=8, shape=[rows, 20])
    tensor.flat_float64.extend(rng.normal(size=rows * 20).tolist())
    return "/grps.protos.v1.GrpsService/Predict", message.SerializeToString()

cases = {"v2 raw 1": infer(1, False), "v2 typed 1": infer(1, True),
         "v2 raw 100": infer(100, False), "v2 raw 10000": infer(10_000, False),
         "grps gtensors 1": gtensors(1), "grps gtensors 100": gtensors(100)}
with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
    for case, (path, body) in cases.items():
        call = channel.unary_unary(path, request_serializer=None, response_deserializer=None)
        for _ in range(20):
            call(body, timeout=30)
        print(case, flush=True)
        sys.stdin.readline()
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            call(body, timeout=30)
            done += 1
        print(done, flush=True)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", help="source trees; the first is the baseline")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    results = run_rounds(args.trees, args.rounds, lambda root, models: [
        "-c", SERVER, root, models, str(args.seconds), CLIENT])
    report(results, "req/CPU s")


if __name__ == "__main__":
    main()
