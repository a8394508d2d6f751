"""Issue 13's speed benchmark: V2 ``ModelInfer`` over gRPC against our own REST V2.

One flask-predict server (``gunicorn -c gunicorn.conf.py wsgi:app``, 2 sync workers, gRPC
on ``FLASK_PREDICT_GRPC_PORT``) serves ``models.py``'s 20-feature LogisticRegression ``lr``.
The same requests of 1, 100 and 10,000 rows, asking for the ``predict`` output, go three
ways at 16 concurrent streams (16 connections for REST, 16 channels for gRPC):

* ``rest-json``: ``POST /v2/models/lr/infer`` with a JSON body (the baseline);
* ``rest-binary``: the same with the binary tensor data extension (inputs and outputs);
* ``grpc-raw``: ``ModelInfer`` with ``raw_input_contents`` (what tritonclient.grpc sends).

The load generator is the same for all three: Python client processes (4 of them, 4
streams each) sending a pre-encoded request and reading the raw answer, so neither side
pays a client-side codec. Besides requests/s it reports the server's CPU time per request
(all gunicorn processes, from ``/proc``), which other load on the machine hardly moves.
Target: gRPC raw at 10,000 rows at least 2x REST V2 JSON. KServe's and MLServer's gRPC
servers are not run here (see README.md).

    .venv/bin/python benchmarks/grpc_v2.py [--rounds 1] [--seconds 5]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402
import models  # noqa: E402
from harness import Result, Server  # noqa: E402

ROOT = HERE.parent
ROW_COUNTS = (1, 100, 10_000)
STREAMS = 16
PROCESSES = 4
HEADER = "Inference-Header-Content-Length"
MODEL = "lr"


def rows_of(count: int) -> np.ndarray:
    return np.random.default_rng(count).normal(size=(count, models.FEATURES))


def requests_for(count: int) -> dict[str, tuple[bytes, dict[str, str]]]:
    """The pre-encoded request of each transport: body and HTTP headers."""
    from flask_predict.grpc.messages import v2

    rows = rows_of(count)
    values = ",".join(f"{v:.6f}" for v in rows.ravel())
    json_body = ('{"inputs":[{"name":"input-0","datatype":"FP64","shape":[%d,%d],'
                 '"data":[%s]}],"outputs":[{"name":"predict"}]}'
                 % (count, models.FEATURES, values)).encode()
    raw = rows.astype("<f8").tobytes()
    head = json.dumps({
        "inputs": [{"name": "input-0", "datatype": "FP64", "shape": [count, models.FEATURES],
                    "parameters": {"binary_data_size": len(raw)}}],
        "outputs": [{"name": "predict", "parameters": {"binary_data": True}}]}).encode()
    message = v2.ModelInferRequest(model_name=MODEL, raw_input_contents=[raw])
    message.inputs.add(name="input-0", datatype="FP64", shape=[count, models.FEATURES])
    message.outputs.add(name="predict")
    return {"rest-json": (json_body, {}),
            "rest-binary": (head + raw, {HEADER: str(len(head)),
                                         "Content-Type": "application/octet-stream"}),
            "grpc-raw": (message.SerializeToString(), {})}


def check(kind: str, answer: bytes, count: int) -> None:
    """The answer holds ``predict`` with one value per row."""
    if kind == "grpc-raw":
        from flask_predict.grpc.messages import v2

        response = v2.ModelInferResponse.FromString(answer)
        shape = list(response.outputs[0].shape)
        size = len(response.raw_output_contents[0]) // 8
    else:
        head, end = json.JSONDecoder().raw_decode(answer.decode("latin-1"))
        output = head["outputs"][0]
        shape = output["shape"]
        size = len(output["data"]) if "data" in output else (len(answer) - end) // 8
    if shape != [count] or size != count:
        raise AssertionError(f"{kind} {count} rows: unexpected answer {answer[:200]!r}")


def stream(kind: str, ports: tuple[int, int], body: bytes, headers: dict[str, str],
           until: float, counts: list[int], errors: list[int]) -> None:
    """Send *body* again and again on one connection until *until*."""
    done = failed = 0
    if kind == "grpc-raw":
        import grpc

        with grpc.insecure_channel(f"127.0.0.1:{ports[1]}",
                                   options=[("grpc.use_local_subchannel_pool", 1),
                                            ("grpc.max_receive_message_length", -1)]) as chan:
            call = chan.unary_unary("/inference.GRPCInferenceService/ModelInfer")
            while time.monotonic() < until:
                try:
                    call(body, timeout=60)
                    done += 1
                except grpc.RpcError:
                    failed += 1
    else:
        conn = http.client.HTTPConnection("127.0.0.1", ports[0], timeout=60)
        while time.monotonic() < until:
            conn.request("POST", f"/v2/models/{MODEL}/infer", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status == 200:
                done += 1
            else:
                failed += 1
            if response.will_close:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", ports[0], timeout=60)
        conn.close()
    counts.append(done)
    errors.append(failed)


def client_process(kind: str, ports: tuple[int, int], body: bytes, headers: dict[str, str],
                   start: float, seconds: float, threads: int) -> tuple[int, int]:
    time.sleep(max(0.0, start - time.time()))
    until = time.monotonic() + seconds
    counts: list[int] = []
    errors: list[int] = []
    workers = [threading.Thread(target=stream, args=(kind, ports, body, headers, until,
                                                     counts, errors)) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts), sum(errors)


def one_answer(kind: str, ports: tuple[int, int], body: bytes, headers: dict[str, str]
               ) -> bytes:
    if kind == "grpc-raw":
        import grpc

        with grpc.insecure_channel(f"127.0.0.1:{ports[1]}") as chan:
            answer: bytes = chan.unary_unary("/inference.GRPCInferenceService/ModelInfer")(
                body, timeout=60, wait_for_ready=True)
            return answer
    conn = http.client.HTTPConnection("127.0.0.1", ports[0], timeout=60)
    conn.request("POST", f"/v2/models/{MODEL}/infer", body=body, headers=headers)
    data = conn.getresponse().read()
    conn.close()
    return data


def measure(pool: Any, running: harness.Running, grpc_port: int, kind: str, count: int,
            body: bytes, headers: dict[str, str], seconds: float, round_: int) -> Result:
    ports = (running.port, grpc_port)
    check(kind, one_answer(kind, ports, body, headers), count)
    start = time.time() + 1.0
    cpu_before = running.cpu_seconds()
    jobs = [pool.apply_async(client_process, (kind, ports, body, headers, start, seconds,
                                              STREAMS // PROCESSES))
            for _ in range(PROCESSES)]
    done = failed = 0
    for job in jobs:
        d, f = job.get()
        done, failed = done + d, failed + f
    cpu = running.cpu_seconds() - cpu_before
    label = f"{count:,} row{'s' if count > 1 else ''} x {STREAMS} streams"
    return Result(kind, label, round_, done / seconds, 0.0, 0.0, failed,
                  1000 * cpu / done if done else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-readme", action="store_true", help="print only")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-grpc-"))
    models.train(work / "models")
    grpc_port = harness.free_port()
    server = Server(
        "flask-predict", [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"],
        path="/v2/models/{model}/infer", cwd=ROOT, ready_path="/v2/health/ready",
        ready_status=200,
        env={"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
             "FLASK_PREDICT_GRPC_PORT": str(grpc_port), "FLASK_PREDICT_GRPC_HOST": "127.0.0.1",
             "FLASK_PREDICT_POLL_SECONDS": "0",
             "FLASK_PREDICT_MODELS": json.dumps({MODEL: {"base_path": str(work / "models" /
                                                                          MODEL)}})})
    bodies = {count: requests_for(count) for count in ROW_COUNTS}
    results: list[Result] = []
    context = multiprocessing.get_context("spawn")
    with harness.started(server, log_dir=work) as running, context.Pool(PROCESSES) as pool:
        time.sleep(3)  # the second worker loads its model after the first answers
        for round_ in range(args.rounds):
            for count in ROW_COUNTS:
                for kind, (body, headers) in bodies[count].items():
                    result = measure(pool, running, grpc_port, kind, count, body, headers,
                                     args.seconds, round_)
                    print(f"{result.scenario:>24} {kind:>12}: {result.requests_per_s:8.1f} "
                          f"req/s, {result.cpu_ms_per_request:.3f} CPU ms/request, "
                          f"{result.errors} errors", flush=True)
                    results.append(result)
    names = ["rest-json", "rest-binary", "grpc-raw"]
    report = "\n\n".join([
        "Requests/s, as ratios of REST V2 JSON:",
        harness.ratio_table(results, "rest-json", names),
        "Server CPU time per request, as requests per CPU second, ratios of REST V2 JSON:",
        harness.ratio_table(results, "rest-json", names, metric="requests_per_cpu_s"),
        harness.raw_table(results)])
    print(report)
    if not args.no_readme:
        harness.update_readme("grpc-v2", report)


if __name__ == "__main__":
    main()
