"""Issue 13's speed benchmark: V2 ``ModelInfer`` over gRPC against KServe, MLServer and REST V2.

Three servers serve ``models.py``'s 20-feature LogisticRegression ``lr``, each with 2
workers, from the same model files:

* flask-predict (``gunicorn -c gunicorn.conf.py wsgi:app``, 2 sync workers, gRPC on
  ``FLASK_PREDICT_GRPC_PORT``);
* KServe 0.21 (``kserve_server.py --grpc_port``, ``--workers 2``) and MLServer 1.7.1
  (``parallel_workers: 2``), from their own venvs (``peers.py``), their V2 gRPC servers on
  a port of their own (``grpc_peers.py``).

The same requests of 1, 100 and 10,000 rows go at 16 concurrent streams (16 connections
for REST, 16 channels for gRPC) to five targets:

* ``rest-json``: our ``POST /v2/models/lr/infer`` with a JSON body, ``outputs: [predict]``;
* ``rest-binary``: the same with the binary tensor data extension (inputs and outputs);
* ``grpc-raw``: our ``ModelInfer`` with ``raw_input_contents`` FP64 ``[n, 20]`` asking
  for ``predict`` (what ``tritonclient.grpc`` sends);
* ``kserve grpc-raw`` and ``mlserver grpc-raw``: the very same ``ModelInfer`` bytes to
  each peer (what each answers: ``grpc_peers.py``).

The load generator is the same for all (4 client processes x 4 streams, a pre-encoded
request, the raw answer read), so no side pays a client-side codec, and the targets take
turns in an order that rotates. Every answer is checked once (one value per row) before
it is measured. Besides requests/s it reports each server's CPU time per request (all of
its processes, from ``/proc``), which other load on the machine hardly moves, as ratios of
our gRPC raw against each peer's gRPC and against our REST V2. Aim: ahead of both peers at
every size; gRPC raw at 10,000 rows at least 2x REST V2 JSON.

    .venv/bin/python benchmarks/grpc_v2.py [--rounds 3] [--seconds 5] [--quick] [--no-peers]
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grpc_peers  # noqa: E402
import harness  # noqa: E402
import models  # noqa: E402
from harness import Result, Server  # noqa: E402

ROOT = HERE.parent
ROW_COUNTS = (1, 100, 10_000)
STREAMS = 16
PROCESSES = 4
HEADER = "Inference-Header-Content-Length"
MODEL = "lr"
OURS = "flask-predict"
TARGETS = {"grpc-raw": (OURS, "grpc"), "kserve grpc-raw": ("kserve", "grpc"),
           "mlserver grpc-raw": ("mlserver", "grpc"), "rest-json": (OURS, "rest"),
           "rest-binary": (OURS, "rest")}
"""Target name -> (the server it is sent to, transport)."""
Request = tuple[bytes, dict[str, str]]
"""A pre-encoded request: body (or serialized message) and HTTP headers."""


def requests_for(count: int) -> dict[str, Request]:
    """Each target's pre-encoded request of *count* rows (the same message on every gRPC
    target)."""
    rows = models.rows(count)
    raw = rows.astype("<f8").tobytes()
    head = json.dumps({
        "inputs": [{"name": "input-0", "datatype": "FP64", "shape": [count, models.FEATURES],
                    "parameters": {"binary_data_size": len(raw)}}],
        "outputs": [{"name": "predict", "parameters": {"binary_data": True}}]}).encode()
    message = grpc_peers.infer_request(MODEL, rows).SerializeToString()
    return {"rest-json": (models.v2_json(rows), {}),
            "rest-binary": (head + raw, {HEADER: str(len(head)),
                                         "Content-Type": "application/octet-stream"}),
            **{name: (message, {}) for name, (_, transport) in TARGETS.items()
               if transport == "grpc"}}


def check(target: str, answer: bytes, count: int) -> str:
    """Raise unless the answer holds one value per row; return what it held, in words."""
    if TARGETS[target][1] == "grpc":
        return grpc_peers.check_answer(answer, count)
    head, end = json.JSONDecoder().raw_decode(answer.decode("latin-1"))
    output = head["outputs"][0]
    size = len(output["data"]) if "data" in output else (len(answer) - end) // 8
    if output["shape"] != [count] or size != count:
        raise AssertionError(f"{target} {count} rows: unexpected answer {answer[:200]!r}")
    where = "JSON data" if "data" in output else "binary data"
    return f"`{output['name']}` {output['datatype']} {output['shape']}, {where}"


def stream(transport: str, port: int, request: Request, until: float, counts: list[int],
           errors: list[int]) -> None:
    """Send the request again and again on one connection or channel until *until*."""
    body, headers = request
    done = failed = 0
    if transport == "grpc":
        import grpc

        with grpc.insecure_channel(f"127.0.0.1:{port}",
                                   options=[("grpc.use_local_subchannel_pool", 1),
                                            ("grpc.max_receive_message_length", -1)]) as chan:
            call = chan.unary_unary(grpc_peers.MODEL_INFER)
            while time.monotonic() < until:
                try:
                    call(body, timeout=60)
                    done += 1
                except grpc.RpcError:
                    failed += 1
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
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
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.close()
    counts.append(done)
    errors.append(failed)


def client_process(transport: str, port: int, request: Request, start: float,
                   seconds: float, threads: int) -> tuple[int, int]:
    """One client process: *threads* streams from *start* for *seconds*; (done, failed)."""
    time.sleep(max(0.0, start - time.time()))
    until = time.monotonic() + seconds
    counts: list[int] = []
    errors: list[int] = []
    workers = [threading.Thread(target=stream, args=(transport, port, request, until,
                                                     counts, errors)) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts), sum(errors)


def one_answer(transport: str, port: int, request: Request) -> bytes:
    """The answer to one request (a gRPC call waits until the server listens)."""
    body, headers = request
    if transport == "grpc":
        return grpc_peers.call(port, body)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", f"/v2/models/{MODEL}/infer", body=body, headers=headers)
    data = conn.getresponse().read()
    conn.close()
    return data


def measure(pool: Any, running: harness.Running, port: int, target: str, count: int,
            request: Request, seconds: float, round_: int) -> Result:
    """Load *target* at ``STREAMS`` streams for *seconds*: requests/s and CPU ms/request."""
    transport = TARGETS[target][1]
    start = time.time() + 1.0
    cpu_before = running.cpu_seconds()
    jobs = [pool.apply_async(client_process, (transport, port, request, start, seconds,
                                              STREAMS // PROCESSES))
            for _ in range(PROCESSES)]
    done = failed = 0
    for job in jobs:
        d, f = job.get()
        done, failed = done + d, failed + f
    cpu = running.cpu_seconds() - cpu_before
    return Result(target, scenario_name(count), round_, done / seconds, 0.0, 0.0, failed,
                  1000 * cpu / done if done else 0.0)


def scenario_name(count: int) -> str:
    return f"{count:,} row{'s' if count > 1 else ''} x {STREAMS} streams"


def our_server(models_dir: Path, grpc_port: int) -> Server:
    """flask-predict as deployed: gunicorn, 2 sync workers, gRPC on *grpc_port*."""
    return Server(
        OURS, [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"],
        path="/v2/models/{model}/infer", cwd=ROOT, ready_path="/v2/health/ready",
        ready_status=200,
        env={"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
             "FLASK_PREDICT_GRPC_PORT": str(grpc_port), "FLASK_PREDICT_GRPC_HOST": "127.0.0.1",
             "FLASK_PREDICT_POLL_SECONDS": "0",
             "FLASK_PREDICT_MODELS": json.dumps({MODEL: {"base_path": str(models_dir / MODEL)}})})


def report(results: list[Result], answers: dict[str, str], rounds: int, seconds: float,
           load_before: str) -> str:
    """The run's tables: our gRPC raw against every other target, by requests/s and by CPU."""
    measured = list(dict.fromkeys(r.server for r in results))
    others = [name for name in TARGETS if name != "grpc-raw" and name in measured]
    largest = f"{ROW_COUNTS[-1]:,} rows"
    return "\n\n".join([
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores, {rounds} "
        f"round(s) of {seconds:g} s per cell, medians; {STREAMS} streams ({PROCESSES} client "
        f"processes x {STREAMS // PROCESSES}), 2 workers per server. Load average (1/5/15 "
        f"min) before: {load_before}; after: {harness.load_average()}.",
        "Requests/s of our gRPC raw contents against each other target:",
        harness.versus_table(results, "grpc-raw", others),
        "Requests per CPU second of each server's processes (all of them), our gRPC raw "
        "contents against each other target:",
        harness.versus_table(results, "grpc-raw", others, metric="requests_per_cpu_s"),
        f"What each target answered ({largest}):",
        "| target | output |\n|---|---|\n" + "\n".join(
            f"| {name} | {text} |" for name, text in answers.items()),
        harness.raw_table(results)])


def run(models_dir: Path, with_peers: bool, rounds: int, seconds: float, log_dir: Path
        ) -> tuple[list[Result], dict[str, str]]:
    """Start the servers, check each target's answer at every size, then measure every
    target at every size for *rounds* rounds, the targets taking turns in an order that
    rotates. Returns the results and what each target answered (in words)."""
    our_grpc = harness.free_port()
    servers = {OURS: (our_server(models_dir, our_grpc), our_grpc)}
    if with_peers:
        servers.update(grpc_peers.servers(models_dir))
    targets = [name for name, (server, _) in TARGETS.items() if server in servers]
    requests = {count: requests_for(count) for count in ROW_COUNTS}
    results: list[Result] = []
    answers: dict[str, str] = {}
    with ExitStack() as stack:
        running = {name: stack.enter_context(harness.started(server, log_dir=log_dir))
                   for name, (server, _) in servers.items()}
        pool = stack.enter_context(multiprocessing.get_context("spawn").Pool(PROCESSES))

        def port_of(target: str) -> int:
            server, transport = TARGETS[target]
            return servers[server][1] if transport == "grpc" else running[server].port

        for count in ROW_COUNTS:
            for target in targets:
                answer = one_answer(TARGETS[target][1], port_of(target), requests[count][target])
                answers[target] = check(target, answer, count)
        time.sleep(3)  # a second worker may load its model after the first answers
        turn = 0
        for round_ in range(1, rounds + 1):
            for count in ROW_COUNTS:
                turn += 1
                shift = turn % len(targets)
                for target in targets[shift:] + targets[:shift]:
                    result = measure(pool, running[TARGETS[target][0]], port_of(target),
                                     target, count, requests[count][target], seconds, round_)
                    print(f"{result.scenario:>24} {target:>18}: {result.requests_per_s:8.1f} "
                          f"req/s, {result.cpu_ms_per_request:.3f} CPU ms/request, "
                          f"{result.errors} errors", flush=True)
                    results.append(result)
    return results, answers


def main() -> None:
    args = harness.comparison_args(harness.comparison_parser(__doc__.splitlines()[0]))
    load_before = harness.load_average()
    with tempfile.TemporaryDirectory(prefix="bench-grpc-") as tmp:
        work = Path(tmp)
        results, answers = run(models.train(work / "models"), not args.no_peers, args.rounds,
                               args.seconds, work)
    text = report(results, answers, args.rounds, args.seconds, load_before)
    print(text)
    if not args.no_readme:
        harness.update_readme("grpc-v2", text)


if __name__ == "__main__":
    main()
