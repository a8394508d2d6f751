"""Where a one-row call's time goes through the runner, against the same call in-process.

No HTTP: a worker's proxy predictor (:class:`~flask_predict.models.runner_client.RunnerPredictor`)
calls a real runner process (``python -m flask_predict.runner``) serving ``runner.py``'s
SavedModel MLP (20 -> 512 -> 512 -> 1), and, for comparison, a child process loads the same
version with the TensorFlow plugin and calls it directly (the in-worker path). Reported per
call: the median wall time, and the CPU time of each process (the caller's thread, the whole
runner from ``/proc/<pid>/stat``), which moves much less than wall time on a busy machine.
``--profile`` also runs the runner's connection thread under cProfile and prints where its
time goes; ``--strace`` counts each side's system calls per call.

    .venv/bin/python benchmarks/runner_call.py [--calls 3000] [--batching] [--profile] [--strace]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import runner as runner_bench  # noqa: E402

ROW = np.random.default_rng(1).normal(size=(1, runner_bench.WIDTH)).astype(np.float32)
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of every thread of *pid* so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def timed(call: Callable[[], Any], calls: int, pid: int | None = None) -> dict[str, float]:
    """Median wall ms of *calls* calls, the caller process's CPU ms a call (all its threads:
    TensorFlow's pools too, in-process), and *pid*'s."""
    for _ in range(200):
        call()
    times = []
    peer = cpu_seconds(pid) if pid else 0.0
    own = time.process_time()
    for _ in range(calls):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    found = {"wall_ms": statistics.median(times) * 1000,
             "caller_cpu_ms": (time.process_time() - own) / calls * 1000}
    if pid:
        found["runner_cpu_ms"] = (cpu_seconds(pid) - peer) / calls * 1000
    return found


def in_worker(model_dir: str, calls: int) -> None:
    """Child: the TensorFlow plugin in this process, as a worker without a runner has it."""
    from flask_predict_tensorflow import TensorFlowPredictor

    predictor = TensorFlowPredictor.from_path(model_dir)
    print(json.dumps(timed(lambda: predictor.predict_tensors({"x": ROW}), calls)))


def profiled_runner(socket_path: str, out: str) -> None:
    """Child: a runner whose connection threads run under cProfile (stats written at TERM)."""
    import cProfile
    import pstats

    from flask_predict.runner import __main__ as runner_main
    from flask_predict.runner.host import Runner

    profiles: list[cProfile.Profile] = []
    serve = Runner._serve_connection

    def serve_profiled(self: Runner, conn: Any) -> None:
        if not profiles:  # the first connection loads the version: not profiled
            profiles.append(cProfile.Profile())
            return serve(self, conn)
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()
        try:
            serve(self, conn)
        finally:
            profile.disable()

    Runner._serve_connection = serve_profiled  # type: ignore[method-assign]

    def dump(signum: int, frame: Any) -> None:
        for profile in profiles:
            profile.disable()
        with open(out, "w") as file:
            if len(profiles) > 1:
                stats = pstats.Stats(*profiles[1:], stream=file)
                stats.sort_stats("tottime").print_stats(30)
        os._exit(0)

    signal.signal(signal.SIGUSR1, dump)
    runner_main.main(["--socket", socket_path])


def start_runner(folder: Path, env: dict[str, str], profile: str | None) -> subprocess.Popen[bytes]:
    socket_path = str(folder / "runner.sock")
    command = ([sys.executable, __file__, "--runner-profile", socket_path, profile] if profile
               else [sys.executable, "-m", "flask_predict.runner", "--socket", socket_path])
    process = subprocess.Popen(command, env={**os.environ, **env}, cwd=HERE.parent,
                               stdout=subprocess.DEVNULL, stderr=open(folder / "runner.log", "wb"))
    for _ in range(600):
        if os.path.exists(socket_path):
            break
        time.sleep(0.1)
    return process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--batching", action="store_true",
                        help="the runner batches (max_batch_size 32, batch_timeout_micros 1000)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--strace", action="store_true")
    parser.add_argument("--in-worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--runner-profile", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.in_worker:
        return in_worker(args.in_worker[0], int(args.in_worker[1]))
    if args.runner_profile:
        return profiled_runner(*args.runner_profile)

    from flask_predict.models.runner_client import RunnerClient, RunnerPredictor

    folder = Path(tempfile.mkdtemp(prefix="runner-call-"))
    runner_bench.export_mlp(folder / "mlp")
    model_dir = str(folder / "mlp" / "1")
    env = {"TF_CPP_MIN_LOG_LEVEL": "2", "LOG_LEVEL": "WARNING",
           "FLASK_PREDICT_MODELS": json.dumps({"mlp": {"base_path": str(folder / "mlp")}})}
    if args.batching:
        params = folder / "batching.txt"
        params.write_text("max_batch_size { value: 32 }\nbatch_timeout_micros { value: 1000 }\n"
                          "max_enqueued_batches { value: 100 }\nnum_batch_threads { value: 2 }\n")
        env.update(FLASK_PREDICT_BATCHING="true",
                   FLASK_PREDICT_BATCHING_PARAMETERS_FILE=str(params))
    profile_out = str(folder / "runner.prof.txt") if args.profile else None
    process = start_runner(folder, env, profile_out)
    try:
        client = RunnerClient(str(folder / "runner.sock"))
        proxy = type("Runner_tensorflow", (RunnerPredictor,),
                     {"plugin": "tensorflow", "client": client})
        predictor = proxy.from_path(model_dir)
        print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
        measured: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: measured.update(measure(client, predictor,
                                                                          process.pid, args)))
        worker.start()  # a connection of its own: the runner profiles it apart from the load
        worker.join()
        call = measured["call"]
        if args.strace:
            _strace(process.pid, lambda: predictor.predict_tensors({"x": ROW}), folder)
        done = subprocess.run([sys.executable, __file__, "--in-worker", model_dir,
                               str(args.calls)], capture_output=True, cwd=HERE.parent,
                              env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        if done.returncode:
            raise RuntimeError(done.stderr.decode()[-3000:])
        alone = json.loads(done.stdout.decode().splitlines()[-1])
        print("in-worker, one-row call: ", _show(alone), flush=True)
        print(f"runner / in-worker: wall {call['wall_ms'] / alone['wall_ms']:.2f}x, CPU "
              f"{(call['caller_cpu_ms'] + call['runner_cpu_ms']) / alone['caller_cpu_ms']:.2f}x"
              f"; load average {os.getloadavg()[0]:.1f}")
    finally:
        if profile_out:
            process.send_signal(signal.SIGUSR1)
            process.wait(30)
            print(Path(profile_out).read_text())
        process.terminate()
        process.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


def measure(client: Any, predictor: Any, pid: int, args: argparse.Namespace
            ) -> dict[str, Any]:
    """The round trips timed on this thread (its own connection to the runner)."""
    from flask_predict.models import runner_wire as wire
    from flask_predict.request.record import RequestRecord, current_request

    record = RequestRecord("tfserving", "predict", "bench", False, 0)
    record.model, record.version = "mlp", "1"  # what a request names (batching keys on it)
    current_request.set(record)
    hello = timed(lambda: client.request({"op": "hello"}), args.calls, pid)
    print("runner, empty round trip:", _show(hello), flush=True)
    call = timed(lambda: predictor.predict_tensors({"x": ROW}), args.calls, pid)
    print("runner, one-row call:    ", _show(call), flush=True)
    print("wire alone: encode      ", _show(timed(lambda: wire.encode_arrays({"x": ROW}),
                                                  args.calls)), flush=True)
    return {"hello": hello, "call": call}


def _show(found: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in found.items())


def _strace(pid: int, call: Callable[[], Any], folder: Path, calls: int = 500) -> None:
    """System calls per call: the runner's (all its threads) and this process's."""
    tracers = []
    for name, traced in (("runner", pid), ("caller", os.getpid())):
        out = folder / f"strace.{name}"
        tracers.append((name, out, subprocess.Popen(
            ["strace", "-c", "-f", "-o", str(out), "-p", str(traced)],
            stderr=subprocess.DEVNULL)))
    time.sleep(1.0)
    for _ in range(calls):
        call()
    for name, out, tracer in tracers:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(30)
        print(f"{name} system calls over {calls} calls:\n{out.read_text()}")


if __name__ == "__main__":
    main()
