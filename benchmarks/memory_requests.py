"""Memory of one large request: how much a worker takes while it runs (as a multiple of the
body's size), and what it keeps afterwards with and without the ``post_request`` trim
(``flask_predict.runtime.memory``: glibc ``malloc_trim`` after requests of 4 MiB or more).

Serves a scikit-learn iris model with ``gunicorn -c gunicorn.conf.py wsgi:app`` (one sync
worker, so one process to watch) and sends, one at a time, bodies of about *--mib* MiB:
TF Serving rows (``{"instances": [[...4 floats], ...]}``), V2 JSON data and V2 binary data.
Before each request the worker's peak RSS is reset (``/proc/<pid>/clear_refs``, needs the
same user or root); after it, the peak and the settled RSS are read. The same runs again
with a configuration whose ``post_request`` hook is removed. Ratios only: peak growth over
the body size, and RSS kept with the trim over RSS kept without.

    .venv/bin/python benchmarks/memory_requests.py [--mib 50]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import harness  # noqa: E402

from flask_predict.models.demo import train_iris  # noqa: E402

ROOT = HERE.parent
NO_TRIM_CONF = """\
exec(open({conf!r}).read())
del post_request  # the same server without the trim after large requests
"""


def bodies(mib: float) -> dict[str, tuple[str, bytes, dict[str, str]]]:
    """Scenario -> (path, body, headers), each body about *mib* MiB."""
    rng = np.random.default_rng(0)
    rows = int(mib * 2**20 / 85)  # a row of 4 random floats prints as about 85 bytes
    x = rng.random((rows, 4)) * [4, 2, 4, 2] + [4, 2, 1, 0]
    flat = x.reshape(-1)
    v2_json = json.dumps({"inputs": [{"name": "x", "datatype": "FP64", "shape": list(x.shape),
                                      "data": flat.tolist()}]}).encode()
    head = json.dumps({"inputs": [{"name": "x", "datatype": "FP64", "shape": list(x.shape),
                                   "parameters": {"binary_data_size": flat.nbytes}}],
                       "outputs": [{"name": "predict"}]}).encode()
    return {
        "TF Serving rows": ("/v1/models/iris:predict",
                            json.dumps({"instances": x.tolist()}).encode(), {}),
        "V2 JSON data": ("/v2/models/iris/infer", v2_json, {}),
        "V2 binary data": ("/v2/models/iris/infer", head + flat.tobytes(),
                           {"Inference-Header-Content-Length": str(len(head))}),
    }


def status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as file:
        for line in file:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def worker(master: int) -> int:
    with open(f"/proc/{master}/task/{master}/children") as file:
        (pid,) = [int(p) for p in file.read().split()]
    return pid


def run(conf: Path, models: dict[str, object], scenarios: dict[str, tuple[str, bytes,
        dict[str, str]]], log_dir: Path) -> dict[str, dict[str, float]]:
    server = harness.Server(
        name=conf.stem, path="/", cwd=ROOT,
        command=[sys.executable, "-m", "gunicorn", "-c", str(conf), "--bind",
                 "127.0.0.1:{port}", "--timeout", "600", "wsgi:app"],
        env={"FLASK_PREDICT_MODELS": json.dumps(models), "WEB_CONCURRENCY": "1",
             "FLASK_PREDICT_POLL_SECONDS": "0", "FLASK_PREDICT_MAX_INSTANCES": "100000000",
             "FLASK_PREDICT_MAX_TENSOR_ELEMENTS": "100000000",
             "FLASK_PREDICT_PROTOCOLS": '["tfserving", "kserve_v2"]'},
        ready_path="/v2/health/ready", ready_status=200)
    results: dict[str, dict[str, float]] = {}
    with harness.started(server, timeout=300, log_dir=log_dir) as running:
        pid = worker(running.group)
        for name, (path, body, headers) in scenarios.items():
            harness.post(running.port, "/v1/models/iris:predict", b'{"instances": [[1,2,3,4]]}')
            time.sleep(1)
            before = status_kib(pid, "VmRSS")
            Path(f"/proc/{pid}/clear_refs").write_text("5")  # reset the peak (VmHWM)
            started = time.perf_counter()
            status, answer = harness.post(running.port, path, body, headers)
            seconds = time.perf_counter() - started
            assert status == 200, answer[:300]
            time.sleep(1)
            results[name] = {"body_mib": len(body) / 2**20, "seconds": seconds,
                             "peak_growth_mib": (status_kib(pid, "VmHWM") - before) / 1024,
                             "kept_mib": (status_kib(pid, "VmRSS") - before) / 1024}
            print(conf.stem, name, {k: round(v, 1) for k, v in results[name].items()},
                  flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=float, default=50)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memory-requests-"))
    try:
        train_iris(root / "iris")
        models = {"iris": {"base_path": str(root / "iris")}}
        scenarios = bodies(args.mib)
        no_trim = root / "no_trim.conf.py"
        no_trim.write_text(NO_TRIM_CONF.format(conf=str(ROOT / "gunicorn.conf.py")))
        trimmed = run(ROOT / "gunicorn.conf.py", models, scenarios, root)
        kept = run(no_trim, models, scenarios, root)
        print("\n| request | body MiB | peak growth / body | RSS kept, trim | RSS kept, "
              "no trim |")
        print("| --- | --- | --- | --- | --- |")
        for name, result in trimmed.items():
            print(f"| {name} | {result['body_mib']:.0f} | "
                  f"{result['peak_growth_mib'] / result['body_mib']:.1f}x | "
                  f"{result['kept_mib']:.0f} MiB | {kept[name]['kept_mib']:.0f} MiB |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
