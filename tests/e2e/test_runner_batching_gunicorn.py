"""Batching in the runner under real gunicorn (4 workers): concurrent callers with different
signatures, output filters and row counts each get exactly their own rows and outputs, the
runner counts fewer executions than requests, and a request larger than a batch is refused
in TF Serving's words."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.e2e.server import GunicornServer, request
from tests.tf_models import export_multi

pytest.importorskip("flask_predict_tensorflow")
pytest.importorskip("tensorflow")

pytestmark = [pytest.mark.e2e, pytest.mark.tensorflow]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GunicornServer]:
    root = tmp_path_factory.mktemp("batching")
    params = root / "batching.txt"
    params.write_text("max_batch_size { value: 64 }\nbatch_timeout_micros { value: 20000 }\n"
                      "max_enqueued_batches { value: 1000 }\nnum_batch_threads { value: 2 }\n")
    models = {"multi": {"base_path": os.fspath(export_multi(root / "multi"))}}
    env = {"FLASK_PREDICT_BATCHING": "true", "FLASK_PREDICT_POLL_SECONDS": "0.5",
           "FLASK_PREDICT_BATCHING_PARAMETERS_FILE": os.fspath(params)}
    with GunicornServer(models, workers=4, env=env, timeout=240,
                        log_path=root / "server.log") as running:
        running.root = root  # type: ignore[attr-defined]
        yield running


def ask(server: GunicornServer, case: int) -> tuple[int, Any, Any]:
    """One caller: a signature, an output filter and a row count of its own; what it
    asked, and the answer."""
    rng = random.Random(case)
    rows = rng.randint(1, 6)
    xs = [round(rng.uniform(-50, 50), 2) for _ in range(rows)]
    kind = case % 3
    if kind == 1:
        body: dict[str, Any] = {"signature_name": "scale", "instances": xs}
        status, _, data = request("POST", server.url + "/v1/models/multi:predict", body=body,
                                  timeout=60)
        return status, {"predictions": [3 * x for x in xs]}, json.loads(data) if data else None
    # V2 with requested outputs: two of four, or one
    texts = [f"c{case}r{i}" for i in range(rows)]
    wanted = ["doubled", "upper"] if kind == 0 else ["rounded"]
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [rows], "data": xs},
                       {"name": "s", "datatype": "BYTES", "shape": [rows], "data": texts}],
            "outputs": [{"name": name} for name in wanted]}
    values = {"doubled": [2 * x for x in xs], "upper": [t.upper() for t in texts],
              "rounded": [round(x) for x in xs]}
    status, _, data = request("POST", server.url + "/v2/models/multi/infer", body=body,
                              timeout=60)
    answer = json.loads(data) if data else None
    if status == 200:
        answer = {out["name"]: out["data"] for out in answer["outputs"]}
    return status, {name: values[name] for name in wanted}, answer


def close(answer: Any, expected: Any) -> bool:
    """The answer, float32 results compared to float32's digits."""
    if isinstance(expected, dict):
        return answer.keys() == expected.keys() and all(close(answer[k], expected[k])
                                                        for k in expected)
    if isinstance(expected, list):
        return len(answer) == len(expected) and all(map(close, answer, expected))
    if isinstance(expected, float):
        return abs(answer - expected) <= 1e-5 * max(1.0, abs(expected))
    return bool(answer == expected)


def executions(server: GunicornServer) -> float:
    metrics = request("GET", server.url + "/metrics")[2].decode()
    return sum(float(line.split()[-1]) for line in metrics.splitlines()
               if line.startswith('flask_predict_model_executions_total{model="multi"'))


def test_each_caller_gets_its_own_rows(server: GunicornServer) -> None:
    before = executions(server)
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda case: ask(server, case), range(240)))
    for case, (status, expected, answer) in enumerate(answers):
        assert status == 200 and close(answer, expected), (case, answer, expected)
    ran = executions(server) - before
    assert 0 < ran < len(answers)  # callers shared batches


def test_a_request_larger_than_a_batch_is_refused(server: GunicornServer) -> None:
    status, _, data = request("POST", server.url + "/v1/models/multi:predict",
                              body={"signature_name": "scale", "instances": [1.0] * 65})
    assert status == 400
    assert json.loads(data) == {"error": "Task size 65 is larger than maximum batch size 64"}


def burst(server: GunicornServer, answers: list[tuple[int, Any, Any]],
          stop: threading.Event) -> list[threading.Thread]:
    def caller(first: int) -> None:
        case = first
        while not stop.is_set():
            answers.append(ask(server, case))
            case += 12

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    return threads


def test_a_version_swap_in_the_middle_of_a_burst(server: GunicornServer) -> None:
    """Version 2 rolls out while 12 callers send: every answer is right, none fails."""
    answers: list[tuple[int, Any, Any]] = []
    stop = threading.Event()
    threads = burst(server, answers, stop)
    try:
        while len(answers) < 40:
            time.sleep(0.05)
        root: Path = server.root  # type: ignore[attr-defined]
        export_multi(root / ".staging", 2)
        (root / ".staging" / "2").rename(root / "multi" / "2")

        def version_two() -> bool:
            status, _, data = request("POST", server.url + "/v2/models/multi/infer", body={
                "inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1.0]},
                           {"name": "s", "datatype": "BYTES", "shape": [1], "data": ["a"]}]})
            return status == 200 and json.loads(data)["model_version"] == "2"

        deadline = time.monotonic() + 240
        while not all(version_two() for _ in range(8)):
            assert time.monotonic() < deadline, "no version 2 in every worker"
            time.sleep(0.1)
        settled = len(answers)
        while len(answers) < settled + 40:
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    for status, expected, answer in answers:
        assert status == 200 and close(answer, expected), (answer, expected)


def test_term_with_batches_queued(server: GunicornServer) -> None:
    """TERM while callers keep the batches full: every request the server took is
    answered whole (the workers finish theirs, the runner runs what is queued), none fails."""
    answers: list[tuple[int, Any, Any]] = []
    stop = threading.Event()
    threads = burst(server, answers, stop)
    while len(answers) < 40:
        time.sleep(0.05)
    assert server.process is not None
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(120)
    stop.set()
    for thread in threads:
        thread.join()
    taken = [(status, expected, answer) for status, expected, answer in answers if status]
    assert len(taken) >= 40
    for status, expected, answer in taken:
        assert status == 200 and close(answer, expected), (answer, expected)
