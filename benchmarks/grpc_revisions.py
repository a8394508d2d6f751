"""gRPC's per-request cost in two source trees, side by side in one run: V2 ``ModelInfer``
(raw contents of 1, 100 and 10,000 rows; typed contents of 1 row) and grps ``Predict``
(``gtensors`` of 1 and 100 rows), for ``revisions.py``'s 20-feature LogisticRegression.

Each tree serves gRPC from one process of its own (the app and its gRPC server in
process, no gunicorn, set up as a server's worker is: ``PREDICT_MANAGE_PROCESS`` sizes the
thread pools, fixes the heap thresholds and freezes the heap); a client in another process
sends one pre-encoded message after another for a few seconds, and the server's CPU time
over that stretch (every thread of its process) gives its requests per CPU second. Rounds
alternate the trees; medians are compared as ratios to the first tree, as in
``revisions.py``. ``--instructions N`` then also runs each tree's server once under
callgrind and counts the instructions its process executes per call over N calls of each
case (``grpc_floor.py``'s way: repeatable, user space only):

    .venv/bin/python benchmarks/grpc_revisions.py /tmp/before . [--rounds 5] [--seconds 2]
        [--instructions 300]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from grpc_floor import SEND, serve  # noqa: E402
from revisions import report, train, tree_env  # noqa: E402

SERVER = r'''
import subprocess, sys, time
from flask import Flask
sys.path.insert(0, sys.argv[1])
from flask_predict import FlaskPredict
try:
    from flask_predict.process.worker_hooks import start_grpc
except ImportError:  # trees before the worker's hooks had a module of their own
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
for line in client.stdout:  # "<case>": the client is warm and waits for the go
    case = line.strip().replace(" ", "-")
    print("warm", case, flush=True)
    sys.stdin.readline()  # the parent zeroes its counters, where it counts
    spent = time.process_time()
    client.stdin.write("go\n")
    client.stdin.flush()
    done = int(client.stdout.readline())
    print("done", case, done, (time.process_time() - spent) / done, flush=True)
    sys.stdin.readline()  # the parent dumps its counters, where it counts
client.wait()
'''

CLIENT = SEND + r'''
import grpc
import numpy as np
from flask_predict.grpc.messages import grps, v2
port, calls = sys.argv[1], sys.argv[2]  # seconds, or "n<calls>"
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
        send(channel.unary_unary(path), body, calls, case)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", help="source trees; the first is the baseline")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--instructions", type=int, default=0,
                        help="also count instructions over this many calls a case (callgrind)")
    args = parser.parse_args()
    roots = {tree: str(Path(tree).resolve()) for tree in args.trees}
    results: dict[str, list[dict[str, float]]] = {tree: [] for tree in args.trees}
    counts: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as models:
        train(Path(models))
        for _ in range(args.rounds):
            for tree, root in roots.items():
                served = serve(["-c", SERVER, root, models, str(args.seconds), CLIENT],
                               env=tree_env(root))
                results[tree].append({case: 1 / one.cpu_seconds
                                      for case, one in served.items()})
        for tree, root in roots.items() if args.instructions else ():
            served = serve(["-c", SERVER, root, models, f"n{args.instructions}", CLIENT],
                           os.path.join(models, f"callgrind-{len(counts)}"), tree_env(root))
            counts[tree] = {case: float(one.instructions or 0) for case, one in served.items()}
    report(results, "req/CPU s")
    if counts:
        print()
        base = args.trees[0]
        print(f"| case | {base} instructions a call | "
              + " | ".join(f"{base} / {tree}" for tree in args.trees[1:]) + " |")
        print("|---|---|" + "---|" * (len(args.trees) - 1))
        for case, count in counts[base].items():
            ratios = " | ".join(f"{count / counts[tree][case]:.2f}x" for tree in args.trees[1:])
            print(f"| {case} | {count / 1000:.1f}k | {ratios} |")


if __name__ == "__main__":
    main()
