"""Issue 4's speed benchmark: Open Inference Protocol V2 against MLServer.

Trains the same two models as ``run.py`` (a 20-feature LogisticRegression ``lr`` and a
100-tree XGBoost Booster ``xgb``) and sends V2 ``/infer`` requests of 1 and 10,000 rows at
16 connections, asking for the ``predict`` output:

* ``flask-predict``: ``gunicorn -c gunicorn.conf.py wsgi:app``, 2 sync workers, JSON bodies
  and binary ones (the binary tensor data extension, inputs and outputs binary);
* ``mlserver``: MLServer with mlserver-sklearn/mlserver-xgboost serving the same files, in
  its own venv ``benchmarks/.venv-mlserver`` (created from ``requirements-mlserver.txt`` on
  first use), JSON bodies only: its REST server has no binary extension.

Targets: flask-predict at least 2x MLServer on JSON at both sizes; the binary 10,000-row
request at least 3x flask-predict's JSON one. Medians go to ``README.md`` as ratios.

    .venv/bin/python benchmarks/kserve_v2.py [--rounds 3] [--seconds 5] [--mlserver-workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import floors  # noqa: E402
import harness  # noqa: E402
import run  # noqa: E402
from harness import Scenario, Server  # noqa: E402

ROOT = HERE.parent
MLSERVER_VENV = HERE / ".venv-mlserver"
ROW_COUNTS = (1, 10_000)
HEADER = "Inference-Header-Content-Length"
V2_SIZES = {"FP32": "f4", "FP64": "f8", "INT32": "i4", "INT64": "i8"}


def rows_of(count: int) -> np.ndarray:
    return np.random.default_rng(count).normal(size=(count, run.FEATURES))


def write_json_body(path: Path, count: int) -> Path:
    """A V2 JSON body with flat ``data`` printed with 6 decimals, as a client would."""
    values = ",".join(f"{v:.6f}" for v in rows_of(count).ravel())
    path.write_text('{"inputs":[{"name":"input-0","datatype":"FP64","shape":[%d,%d],'
                    '"data":[%s]}],"outputs":[{"name":"predict"}]}'
                    % (count, run.FEATURES, values))
    return path


def write_binary_body(path: Path, count: int) -> tuple[Path, dict[str, str]]:
    """A V2 binary body (what tritonclient sends by default) and its header."""
    raw = rows_of(count).astype("<f8").tobytes()
    header = json.dumps({
        "inputs": [{"name": "input-0", "datatype": "FP64", "shape": [count, run.FEATURES],
                    "parameters": {"binary_data_size": len(raw)}}],
        "outputs": [{"name": "predict", "parameters": {"binary_data": True}}]}).encode()
    path.write_bytes(header + raw)
    return path, {HEADER: str(len(header)), "Content-Type": "application/octet-stream"}


def scenarios(work: Path) -> list[Scenario]:
    found = []
    for count in ROW_COUNTS:
        label = f"{count:,} row{'s' if count > 1 else ''}"
        json_body = write_json_body(work / f"v2-{count}.json", count)
        binary_body, headers = write_binary_body(work / f"v2-{count}.bin", count)
        for model in ("lr", "xgb"):
            found.append(Scenario(f"{model} {label} json", model, json_body, rows=count))
            found.append(Scenario(f"{model} {label} binary", model, binary_body, rows=count,
                                  headers=headers))
    return found


def check_outputs(scenario: Scenario, answer: bytes) -> None:
    """The answer holds ``predict`` with one value per row (JSON or binary)."""
    head, end = json.JSONDecoder().raw_decode(answer.decode("latin-1"))
    (output,) = head["outputs"]
    if output["name"] != "predict" or output["shape"][0] != scenario.rows:
        raise AssertionError(f"{scenario.name}: unexpected output {output}")
    size = output.get("parameters", {}).get("binary_data_size")
    width = np.dtype(V2_SIZES.get(output["datatype"], "f8")).itemsize
    values = len(output["data"]) if size is None else (len(answer) - end) // width
    if values != scenario.rows or (size is not None and size != len(answer) - end):
        raise AssertionError(f"{scenario.name}: {values} values for {scenario.rows} rows")


def ensure_mlserver_venv() -> Path:
    """The MLServer venv's ``mlserver`` command, created on first use."""
    command = MLSERVER_VENV / "bin" / "mlserver"
    if not command.exists():
        print(f"creating {MLSERVER_VENV} for MLServer (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(MLSERVER_VENV)], check=True)
        subprocess.run([str(MLSERVER_VENV / "bin" / "python"), "-m", "pip", "install",
                        "--quiet", "-r", str(HERE / "requirements-mlserver.txt")], check=True)
    return command


def mlserver_repository(models: Path, workers: int) -> Path:
    """An MLServer model repository over the same model files, both outputs declared."""
    repo = models.parent / "mlserver"
    implementations = {"lr": ("mlserver_sklearn.SKLearnModel", "model.joblib"),
                       "xgb": ("mlserver_xgboost.XGBoostModel", "model.json")}
    for name, (implementation, file) in implementations.items():
        folder = repo / name
        folder.mkdir(parents=True)
        (folder / "model-settings.json").write_text(json.dumps({
            "name": name, "implementation": implementation,
            "parameters": {"uri": str(models / name / "1" / file), "version": "1"}}))
    (repo / "settings.json").write_text(json.dumps({
        "parallel_workers": workers, "metrics_endpoint": None, "debug": False,
        "grpc_port": harness.free_port(), "metrics_port": harness.free_port()}))
    return repo


def servers(models: Path, mlserver_workers: int) -> list[Server]:
    config = {name: {"base_path": str(models / name)} for name in ("lr", "xgb")}
    return [
        Server("flask-predict",
               [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"],
               path="/v2/models/{model}/infer", cwd=ROOT, ready_path="/v2/health/ready",
               ready_status=200,
               env={"PORT": "{port}", "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2",
                    "FLASK_PREDICT_MODELS": json.dumps(config)},
               check=check_outputs),
        JsonOnlyServer("mlserver",
                       [str(ensure_mlserver_venv()), "start",
                        str(mlserver_repository(models, mlserver_workers))],
                       # its /v2/health/ready is true before any model is registered;
                       # lr is the first scenario's model, xgb loads meanwhile
                       path="/v2/models/{model}/infer", ready_path="/v2/models/lr/ready",
                       ready_status=200,
                       env={"MLSERVER_HTTP_PORT": "{port}", "MLSERVER_HOST": "127.0.0.1"},
                       check=check_outputs),
        # drains the body and answers a constant: the most any server here can do
        Server("bare-wsgi", floors.gunicorn_command("bare"), path="/"),
    ]


class JsonOnlyServer(Server):
    """A server without the binary tensor data extension: JSON scenarios only."""

    def serves(self, scenario: Scenario) -> bool:
        return not scenario.headers


METRICS = {"requests_per_s": "Requests/s",
           "requests_per_cpu_s": "Requests per CPU second of the server's processes (what "
                                 "other load on the machine hardly moves)"}


def ratio_table(results: list[harness.Result], metric: str) -> str:
    """flask-predict against MLServer, binary against JSON, and against the bare floor."""
    med = harness.medians(results, metric)
    lines = ["| model, rows | flask-predict JSON / MLServer JSON | flask-predict binary / "
             "MLServer JSON | flask-predict binary / flask-predict JSON | flask-predict "
             "JSON / bare floor | flask-predict binary / bare floor |",
             "|---|---|---|---|---|---|"]

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}x" if a and b else "n/a"

    for model in ("lr", "xgb"):
        for count in ROW_COUNTS:
            label = f"{model} {count:,} row{'s' if count > 1 else ''}"
            ours_json = med.get(("flask-predict", f"{label} json"))
            ours_binary = med.get(("flask-predict", f"{label} binary"))
            theirs = med.get(("mlserver", f"{label} json"))
            floor_json = med.get(("bare-wsgi", f"{label} json"))
            floor_binary = med.get(("bare-wsgi", f"{label} binary"))
            lines.append(f"| {label.replace(' ', ', ', 1)} | {ratio(ours_json, theirs)} | "
                         f"{ratio(ours_binary, theirs)} | {ratio(ours_binary, ours_json)} | "
                         f"{ratio(ours_json, floor_json)} | "
                         f"{ratio(ours_binary, floor_binary)} |")
    return "\n".join(lines)


def report(results: list[harness.Result], rounds: int, seconds: float,
           mlserver_workers: int) -> str:
    sections = [f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores, {rounds} "
                f"rounds of {seconds:g} s per scenario, medians; 16 connections; "
                "flask-predict and the bare floor with 2 gunicorn workers, MLServer with "
                f"parallel_workers={mlserver_workers}."]
    sections += [f"{title}:\n\n{ratio_table(results, metric)}"
                 for metric, title in METRICS.items()]
    sections.append("Per round:\n\n" + harness.raw_table(results))
    return "\n\n".join(sections)



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--mlserver-workers", type=int, default=2,
                        help="MLServer parallel_workers (0: inference in its main process)")
    parser.add_argument("--no-readme", action="store_true", help="don't rewrite README.md")
    args = parser.parse_args()

    harness.require_wrk()
    for name in run.THREAD_VARIABLES:
        os.environ.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="flask-predict-v2-bench-") as tmp:
        work = Path(tmp)
        run.train_models(work / "models")
        results = harness.run_rounds(servers(work / "models", args.mlserver_workers),
                                     scenarios(work), args.rounds, args.seconds, log_dir=work)
    text = report(results, args.rounds, args.seconds, args.mlserver_workers)
    print("\n" + text)
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    (results_dir / time.strftime("v2-%Y%m%d-%H%M%S.md")).write_text(text + "\n")
    if not args.no_readme:
        harness.update_readme("kserve_v2", text)


if __name__ == "__main__":
    main()
