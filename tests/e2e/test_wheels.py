"""The wheels ``make dist`` builds, installed into a fresh virtualenv outside the checkout by
the README's own install line, ``pip install --find-links dist "flask-predict[sklearn]"``:
the README's serving path runs there as written (the demo writes what the installed plugins
serve, ``check``, ``serve`` of one model and of the demo's config file, the README's iris
examples), and ``flask-predict serve`` answers all four protocols with two sync workers.

Only the scikit-learn extra is installed (XGBoost and TensorFlow would pull in hundreds of
megabytes); the other wheels and the extras are checked for their contents."""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.docs.examples import blocks, commands, examples, same_output
from tests.e2e.server import ROOT, CliServer, request

pytestmark = pytest.mark.e2e

DISTRIBUTIONS = {
    ".": ("flask_predict", None),
    "plugins/sklearn": ("flask_predict_sklearn", "sklearn = flask_predict_sklearn.predictor:"
                                                 "SklearnPredictor"),
    "plugins/xgboost": ("flask_predict_xgboost", "xgboost = flask_predict_xgboost.predictor:"
                                                 "XGBoostPredictor"),
    "plugins/custom": ("flask_predict_custom", "custom = flask_predict_custom:CustomPredictor"),
    "plugins/tensorflow": ("flask_predict_tensorflow", "tensorflow = flask_predict_tensorflow."
                                                       "predictor:TensorFlowPredictor"),
    "plugins/lightgbm": ("flask_predict_lightgbm", "lightgbm = flask_predict_lightgbm.predictor:"
                                                   "LightGBMPredictor"),
    "plugins/catboost": ("flask_predict_catboost", "catboost = flask_predict_catboost.predictor:"
                                                   "CatBoostPredictor"),
    "plugins/onnx": ("flask_predict_onnx", "onnx = flask_predict_onnx.predictor:ONNXPredictor"),
    "plugins/mlflow": ("flask_predict_mlflow", "mlflow = flask_predict_mlflow.predictor:"
                                               "PyfuncPredictor"),
}
"""Folder -> (package, its ``flask_predict.predictors`` entry point)."""
LOCAL_ONLY = (".git", ".venv*", ".*_cache", "build", "dist", "*.egg-info", "__pycache__",
              "demo/models", "benchmarks/results", "test-artifacts")
"""What a clean clone lacks, as paths under the checkout or names anywhere; the wheels are
built from a copy without it (a build also leaves its ``build/`` folder behind, which must
not reach a later wheel)."""


def local_only(folder: str, names: list[str]) -> set[str]:
    """``copytree``'s ignore: what :data:`LOCAL_ONLY` names in *folder*."""
    where = Path(folder).relative_to(ROOT)
    return {name for name in names for pattern in LOCAL_ONLY
            if fnmatch.fnmatch((where / name).as_posix() if "/" in pattern else name, pattern)}
EXTRAS = {"sklearn": "flask-predict-sklearn", "xgboost": "flask-predict-xgboost",
          "tensorflow": "flask-predict-tensorflow", "custom": "flask-predict-custom",
          "lightgbm": "flask-predict-lightgbm", "catboost": "flask-predict-catboost",
          "onnx": "flask-predict-onnx", "mlflow": "flask-predict-mlflow"}
"""The core's extras that install a bundled plugin -> its distribution."""


def readme_serving_path() -> list[str]:
    """The commands of the README's "Serving your own models" block, as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = [b.text for b in blocks(text)
                if b.info == "sh" and "flask-predict check" in b.text]
    return commands(block)


def readme_step(word: str) -> list[str]:
    """The words of the README's one serving command that starts with *word* (``pip
    install``...), its comment dropped."""
    found = [shlex.split(line, comments=True) for line in readme_serving_path()
             if line.startswith(word)]
    assert len(found) == 1, (word, found)
    return found[0]


def pip(python: str | Path, *args: str, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(python), "-m", "pip", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``make dist`` builds: one wheel per distribution (built here without build
    isolation, from this environment's setuptools, to stay quick)."""
    source = tmp_path_factory.mktemp("source") / "flask-predict"
    shutil.copytree(ROOT, source, ignore=local_only)
    folder = tmp_path_factory.mktemp("dist")
    pip(sys.executable, "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--wheel-dir", str(folder), *(str(source / path) for path in DISTRIBUTIONS),
        cwd=folder)
    return folder


@pytest.fixture(scope="module")
def workdir(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the README's commands run: a folder outside the checkout whose ``dist`` is what
    ``make dist`` builds (the README's first command)."""
    folder = tmp_path_factory.mktemp("readme")
    assert ROOT not in folder.parents
    (folder / "dist").symlink_to(dist)
    return folder


@pytest.fixture(scope="module")
def venv(workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv outside the checkout, with what the README's install line installs
    (the wheels, their dependencies from the package index)."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    step = readme_step("pip install")
    assert step == ["pip", "install", "--find-links", "dist", "flask-predict[sklearn]"], step
    pip(where / "bin" / "python", *step[1:], "--quiet", cwd=workdir)
    return where


def run(venv: Path, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A README command with the virtualenv's scripts first on ``PATH``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_readme_builds_the_wheels_first() -> None:
    assert readme_serving_path()[0].split("#")[0].split() == ["make", "dist"]


def test_one_wheel_per_distribution(dist: Path) -> None:
    wheels = {path.name.split("-")[0]: path for path in dist.glob("*.whl")}
    assert set(wheels) == {module for module, _ in DISTRIBUTIONS.values()}
    for module, entry_point in DISTRIBUTIONS.values():
        with zipfile.ZipFile(wheels[module]) as wheel:
            names = wheel.namelist()
            tops = {name.split("/")[0] for name in names}
            assert tops == {module, f"{module}-0.1.0.dist-info"}, tops  # no tests, no demo
            assert f"{module}/py.typed" in names
            points = wheel.read(f"{module}-0.1.0.dist-info/entry_points.txt").decode()
        if entry_point is None:
            assert "[console_scripts]\nflask-predict = flask_predict.cli:main" in points
            assert {"flask_predict/wsgi.py", "flask_predict/gunicorn_config.py"} <= set(names)
            with zipfile.ZipFile(wheels[module]) as wheel:
                metadata = wheel.read("flask_predict-0.1.0.dist-info/METADATA").decode()
            for extra, distribution in EXTRAS.items():
                # each extra pins its plugin to the core's own release
                assert (f"Requires-Dist: {distribution}==0.1.0; extra == \"{extra}\""
                        in metadata), extra
            assert ("Requires-Dist: flask-predict[catboost,custom,gcs,grpc,lightgbm,mlflow,onnx,"
                    "s3,sklearn,tensorflow,xgboost]; extra == \"all\"") in metadata
        else:
            plugin = entry_point.split(" ")[0]
            assert f"[flask_predict.manifests]\n{plugin} = {module}.manifest:MANIFEST" in points
            assert f"[flask_predict.predictors]\n{entry_point}" in points


def test_installed_command_serves_every_protocol(venv: Path, model_config: dict[str, object],
                                                 tmp_path: Path) -> None:
    python = venv / "bin" / "python"
    where = subprocess.run([str(python), "-c",
                            "import flask_predict; print(flask_predict.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True,
                           env={"PATH": os.environ["PATH"]}).stdout
    assert where.startswith(str(venv)), where  # the wheel, not the checkout
    config = tmp_path / "models.json"
    config.write_text(json.dumps({"iris": model_config["iris"]}))
    server = CliServer(str(venv / "bin" / "flask-predict"),
                       ["--model_config_file", str(config), "--bind", "127.0.0.1:{port}"],
                       tmp_path, workers=2, log_path=tmp_path / "log")
    server.env.pop("PYTHONPATH", None)
    rows = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]
    with server:
        status, _, body = request("POST", server.url + "/v1/projects/p/models/iris:predict",
                                  body={"instances": rows})
        assert (status, json.loads(body)) == (200, {"predictions": [0, 2]})
        status, _, body = request("POST", server.url + "/v1/models/iris:predict",
                                  body={"signature_name": "serving_default",
                                        "inputs": {"inputs": rows}})
        assert status == 200 and json.loads(body)["outputs"]["predict"] == [0, 2]
        status, _, body = request("POST", server.url + "/v2/models/iris/infer", body={
            "inputs": [{"name": "inputs", "datatype": "FP64", "shape": [2, 4],
                        "data": [v for row in rows for v in row]}],
            "outputs": [{"name": "predict"}]})
        assert status == 200 and json.loads(body)["outputs"][0]["data"] == [0, 2]
        status, _, body = request("POST", server.url + "/grps/v1/infer/predict", body={
            "model": "iris-1", "gtensors": {"tensors": [{
                "name": "inputs", "dtype": "DT_FLOAT64", "shape": [2, 4],
                "flat_float64": [v for row in rows for v in row]}]}})
        tensors = {t["name"]: t for t in json.loads(body)["gtensors"]["tensors"]}
        assert status == 200 and tensors["predict"]["flat_int64"] == ["0", "2"]
        log = server.log_text()
    assert "Using worker: flask_predict.process.sync_worker.SyncWorker" in log
    assert log.count("Booting worker with pid") == 2
    assert "configuration error" not in log


IRIS_EXAMPLES = [e for e in examples(ROOT / "README.md")
                 if any(f in e.command for f in ("/iris:", "/iris/", '"iris-1"'))]
"""The README's examples that ask the scikit-learn iris model alone."""


class ReadmeServer(CliServer):
    """A README ``flask-predict serve`` line, run by the shell as written in *cwd*, on a free
    port (``$PORT``) of the loopback (``$HOST``)."""

    def __init__(self, line: str, venv: Path, cwd: Path, log_path: Path) -> None:
        super().__init__("flask-predict", [], cwd, log_path=log_path, timeout=180)
        self.line = line
        self.env.pop("PYTHONPATH", None)
        self.env.update(PORT=str(self.port), HOST="127.0.0.1",
                        PATH=f"{venv / 'bin'}{os.pathsep}{self.env['PATH']}")

    def command(self) -> list[str]:
        return ["bash", "-c", f"exec {self.line}"]


def test_the_readme_serving_path_with_only_the_sklearn_extra(venv: Path, workdir: Path) -> None:
    """The path that stopped at the custom model with a plugin missing: the demo writes only
    what the installed plugins serve, and every serve line of the README starts on it."""
    demo = run(venv, readme_step("flask-predict demo"), workdir)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "iris: written (sklearn)" in demo.stdout
    for name, extra in (("loans", "xgboost"), ("iris_names", "custom"),
                        ("half_plus_two", "tensorflow")):
        assert (f"{name}: skipped (the {extra} plugin is not installed: "
                f"pip install 'flask-predict[{extra}]')") in demo.stdout
    check = run(venv, readme_step("flask-predict check"), workdir)
    assert check.returncode == 0 and "sklearn" in check.stdout, check.stdout + check.stderr
    assert IRIS_EXAMPLES, "the README shows no iris example"
    for flag in ("--model_base_path", "--model_config_file"):
        (line,) = [c for c in readme_serving_path()
                   if c.startswith("flask-predict serve") and flag in c]
        with ReadmeServer(line, venv, workdir, workdir / f"{flag}.log") as server:
            for example in IRIS_EXAMPLES:
                answer = subprocess.run(example.argv(f"127.0.0.1:{server.port}"),
                                        capture_output=True, text=True, timeout=60)
                assert same_output(example, answer.stdout), (flag, example.where,
                                                             answer.stdout)
