"""The image, built and run: the repository's Dockerfile built with podman on a Debian bookworm
base made here with debootstrap (no registry of images is reachable: the ``BASE_IMAGE``
build argument names it), then started as its users start it, the demo models mounted at
``/models``, gRPC on. Every protocol predicts through the container's nginx front, and V2
over gRPC.

Needs root and Debian's podman, runc and debootstrap (``make system-deps``), else skips
saying so; CI runs it. Slow (minutes): the image installs the wheels' dependencies from PyPI,
TensorFlow among them."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests import programs
from tests.dist import built_dist
from tests.e2e.server import ROOT, free_port, request

pytestmark = pytest.mark.e2e

BASE = "localhost/flask-predict-test-base:bookworm"
"""The debootstrapped base, kept between runs as a pulled base image would be."""
IMAGE = "localhost/flask-predict-test:latest"
"""The image under test, built afresh and removed at the end."""
PODMAN = ["podman", "--runtime", "runc"]
"""runc: crun refuses some hosts' cgroup layouts, runc runs on them."""
LIMITS = [f"--ulimit={name}={value}:{value}" for name, value in (
    ("nofile", min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 8192)),
    ("nproc", min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 4096)))]
"""Limits within this host's: podman's defaults (a million open files) are above what some
hosts allow, and runc then refuses to start the container."""
ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]


def podman(*args: str, timeout: float = 600, check: bool = True
           ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, (args, done.stdout[-4000:], done.stderr[-4000:])
    return done


@pytest.fixture(scope="module")
def tools() -> None:
    for program, package in (("podman", "podman"), ("runc", "runc"),
                             ("debootstrap", "debootstrap")):
        programs.need(program, package)
    if os.geteuid() != 0:
        programs.unavailable("needs root: debootstrap and podman build the image as root")


def make_base(folder: Path) -> None:
    """Debian bookworm's minimal system, from Debian's packages, imported as :data:`BASE`.
    The machine's own extra certificate authorities come along, and pip in the image is told
    to trust Debian's bundle (which includes them), as a site's base image carries its
    trust anchors: where a proxy re-signs TLS, pip reaches PyPI only so."""
    rootfs = folder / "rootfs"
    done = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(rootfs)],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    anchors = rootfs / "usr" / "local" / "share" / "ca-certificates"
    anchors.mkdir(parents=True, exist_ok=True)
    for cert in Path("/usr/local/share/ca-certificates").glob("*.crt"):
        (anchors / cert.name).write_bytes(cert.read_bytes())
    (rootfs / "etc" / "pip.conf").write_text(
        "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")
    archive = folder / "rootfs.tar"
    subprocess.run(["tar", "-C", str(rootfs), "-cf", str(archive), "."], check=True,
                   timeout=600)
    podman("import", str(archive), BASE)


def build_context(folder: Path) -> Path:
    """What the checkout hands ``podman build``: the Dockerfile, its ``.dockerignore`` and
    the paths that file lets through (the wheels ``make dist`` builds, the front's files),
    copied out while no other test process rebuilds ``dist/``."""
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8")
    allowed = [line[1:].strip().rstrip("/") for line in ignore.splitlines()
               if line.startswith("!")]
    for name in ("Dockerfile", ".dockerignore"):
        shutil.copy2(ROOT / name, folder / name)
    with built_dist():
        for pattern in allowed:
            for path in ROOT.glob(pattern):
                target = folder / path.relative_to(ROOT)
                target.parent.mkdir(parents=True, exist_ok=True)
                if path.is_dir():
                    shutil.copytree(path, target)
                else:
                    shutil.copy2(path, target)
    assert list((folder / "dist").glob("*.whl")), "make dist built no wheel"
    return folder


def remove_interrupted_builds() -> None:
    """Removes the working containers of builds on ``BASE`` that were killed mid-way: each
    keeps its unpacked layers (a few GB) until removed, and a host that runs the suite
    again would otherwise fill its disk with them."""
    left = podman("ps", "--all", "--external", "--filter", f"ancestor={BASE}",
                  "--format", "{{.ID}}").stdout.split()
    if left:
        podman("rm", "--force", *left)


def storage_free() -> str:
    """The free space where podman keeps images and where a build stages its layers: the
    build needs about four times the image's size (its container, the staged layer, the
    committed layer)."""
    return ", ".join(f"{folder}: {shutil.disk_usage(folder).free / 2**30:.1f} GiB free"
                     for folder in ("/var/lib/containers", "/var/tmp") if Path(folder).exists())


@pytest.fixture(scope="module")
def image(tools: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The CPU image built from the repository's Dockerfile and the wheels ``make dist``
    builds."""
    if podman("image", "exists", BASE, check=False).returncode != 0:
        make_base(tmp_path_factory.mktemp("base"))
    remove_interrupted_builds()
    context = build_context(tmp_path_factory.mktemp("context"))
    built = podman("build", "--format", "docker", "--layers=false", "--pull=never",
                   "--build-arg", f"BASE_IMAGE={BASE}", "--tag", IMAGE, str(context),
                   timeout=2400, check=False)
    assert built.returncode == 0, (built.stderr[-4000:], storage_free())
    try:
        yield IMAGE
    finally:
        podman("rmi", "--force", IMAGE, check=False)


@pytest.fixture(scope="module")
def models(image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo models, written by the image's own ``flask-predict demo`` as its user."""
    folder = tmp_path_factory.mktemp("models")
    folder.chmod(0o777)
    podman("run", "--rm", *LIMITS, "--network", "host", "--volume", f"{folder}:/models",
           "--entrypoint", "flask-predict", image, "demo", "/models", timeout=600)
    return folder


class Container:
    """The image started with its own entry point (nginx in front of ``flask-predict
    serve``) on the host's loopback: REST on ``port``, gRPC on ``grpc_port``."""

    def __init__(self, image: str, models: Path) -> None:
        self.name = f"flask-predict-test-{os.getpid()}"
        self.port, self.grpc_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        podman("rm", "--force", self.name, check=False)
        podman("run", "--detach", "--name", self.name, *LIMITS, "--network", "host",
               "--volume", f"{models}:/models:ro",
               "--env", f"PORT={self.port}", "--env", "HOST=127.0.0.1",
               "--env", "FLASK_PREDICT_GRPC_HOST=127.0.0.1",
               "--env", "MODEL_CONFIG_FILE=/models/models.json",
               image, "--port", str(self.grpc_port))  # flags go to flask-predict serve

    def logs(self) -> str:
        done = podman("logs", self.name, check=False)
        return (done.stdout + done.stderr)[-6000:]

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = podman("inspect", "--format", "{{.State.Running}}", self.name,
                             check=False).stdout.strip()
            assert running == "true", f"the container stopped:\n{self.logs()}"
            if request("GET", self.url + "/v2/health/ready", timeout=5)[0] == 200:
                return
            time.sleep(1)
        raise AssertionError(f"not ready in {timeout} s:\n{self.logs()}")

    def stop(self) -> int:
        """Stop it as ``docker stop`` does (SIGTERM, SIGKILL after 60 s); its exit status."""
        podman("stop", "--time", "60", self.name, check=False)
        status = podman("inspect", "--format", "{{.State.ExitCode}}", self.name,
                        check=False).stdout.strip()
        return int(status) if status.isdigit() else -1

    def remove(self) -> None:
        podman("rm", "--force", self.name, check=False)


@pytest.fixture(scope="module")
def container(image: str, models: Path) -> Iterator[Container]:
    started = Container(image, models)
    try:
        started.wait_ready()
        yield started
    finally:
        started.remove()


def post(container: Container, path: str, body: Any = None, data: bytes | None = None) -> Any:
    status, _, answer = request("POST", container.url + path, body=body, data=data)
    assert status == 200, (path, answer[:2000])
    return json.loads(answer)


def test_the_demo_wrote_every_framework_s_model(models: Path) -> None:
    config = json.loads((models / "models.json").read_text())["models"]
    assert set(config) == {"iris", "loans", "iris_names", "half_plus_two", "churn"}


def test_every_protocol_through_the_front(container: Container) -> None:
    assert post(container, "/v1/projects/demo/models/iris:predict",
                {"instances": ROWS}) == {"predictions": [0, 2]}
    assert post(container, "/v1/projects/demo/models/iris_names:predict",
                {"instances": ROWS}) == {"predictions": ["setosa", "virginica"]}
    loans = post(container, "/v1/projects/demo/models/loans:predict",
                 data=b'{"instances": [[NaN, 0.3, 1.2, -0.5], [0.0, 0.3, 1.2, -0.5]]}')
    assert loans["predictions"][0] > 0.9 > 0.1 > loans["predictions"][1]
    assert post(container, "/v1/models/half_plus_two:predict",
                {"instances": [1.0, 2.0, 5.0]}) == {"predictions": [2.5, 3.0, 4.5]}
    assert post(container, "/v1/projects/demo/models/churn:predict", {"instances": [
        {"age": 31, "income": 40000, "city": "Paris"},
        {"age": 58, "income": 61000, "city": "Rome"}]}) == {"predictions": ["leaves", "stays"]}
    v2 = post(container, "/v2/models/iris/infer", {"inputs": [
        {"name": "x", "shape": [2, 4], "datatype": "FP64", "data": sum(ROWS, [])}]})
    assert {o["name"]: o["data"] for o in v2["outputs"]}["predict"] == [0, 2]
    grps = post(container, "/grps/v1/infer/predict", {"model": "iris-1", "gtensors": {
        "tensors": [{"name": "inputs", "dtype": "DT_FLOAT64", "shape": [2, 4],
                     "flat_float64": sum(ROWS, [])}]}})
    tensors = {t["name"]: t for t in grps["gtensors"]["tensors"]}
    assert tensors["predict"]["flat_int64"] == ["0", "2"]
    status, headers, answer = request("POST", container.url + "/v1/models/nope:predict",
                                      body={"instances": [1.0]})
    assert status == 404 and "nope" in json.loads(answer)["error"]


def test_grpc(container: Container) -> None:
    address = f"127.0.0.1:{container.grpc_port}"
    client = grpcclient.InferenceServerClient(address)
    try:
        assert client.is_server_ready() and client.is_model_ready("half_plus_two")
        x = grpcclient.InferInput("x", [3], "FP32")
        x.set_data_from_numpy(np.array([1.0, 2.0, 5.0], dtype=np.float32))
        answer = client.infer("half_plus_two", [x])
        assert answer.as_numpy("y").tolist() == [2.5, 3.0, 4.5]
    finally:
        client.close()
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_its_healthcheck_passes_once_ready(container: Container) -> None:
    """The Dockerfile's HEALTHCHECK, run by podman as docker would run it."""
    done = podman("healthcheck", "run", container.name, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_runs_as_its_user_with_the_front_s_files(image: str) -> None:
    done = podman("run", "--rm", *LIMITS, "--entrypoint", "sh", image, "-c",
                  "id -u; command -v nginx; ls /opt/flask-predict/nginx; flask-predict --help",
                  timeout=120)
    lines = done.stdout.splitlines()
    assert lines[0] == "10001"
    assert lines[1].endswith("/nginx")
    assert lines[2:4] == ["nginx.conf.template", "render.py"]
    assert "serve" in done.stdout


def mlflow_folder(folder: Path) -> tuple[Path, dict[str, Any], list[Any]]:
    """A DataFrame pipeline with a string column saved by ``mlflow.sklearn.save_model`` in
    MLflow 3's default serialization (skops), a ``dataframe_split`` body and its answer."""
    import mlflow
    from mlflow.models import infer_signature

    from tests.mlflow.models import ROWS as TABLE
    from tests.mlflow.models import frame, pinned, pipeline, training

    model, table = pipeline(), training()[0]
    with warnings.catch_warnings():  # MLflow's advice on input examples
        warnings.simplefilter("ignore")
        mlflow.sklearn.save_model(model, str(folder), serialization_format="skops",
                                  pip_requirements=pinned("scikit-learn", "skops"),
                                  signature=infer_signature(table, model.predict(table)))
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)  # readable by the image's user
    rows = frame(TABLE)
    body = {"dataframe_split": {"columns": list(rows.columns), "data": rows.values.tolist()}}
    return folder, body, model.predict(rows).tolist()


@pytest.mark.parametrize("kind", ["files", "mlflow"])
def test_sagemaker_serve(image: str, models: Path, tmp_path: Path, kind: str) -> None:
    """Started as SageMaker starts it, ``docker run IMAGE serve``: the demo's iris files, or
    an MLflow folder saved with skops, mounted flat at ``/opt/ml/model``, SageMaker's port
    and workers from its variables."""
    if kind == "files":
        folder, body, want = models / "iris" / "1", {"instances": ROWS}, [0, 2]
    else:
        folder, body, want = mlflow_folder(tmp_path / "model")
    name, port = f"flask-predict-test-sagemaker-{os.getpid()}", free_port()
    url = f"http://127.0.0.1:{port}"
    podman("rm", "--force", name, check=False)
    podman("run", "--detach", "--name", name, *LIMITS, "--network", "host",
           "--volume", f"{folder}:/opt/ml/model:ro",
           "--env", f"SAGEMAKER_BIND_TO_PORT={port}", "--env", "HOST=127.0.0.1",
           "--env", "SAGEMAKER_MODEL_SERVER_WORKERS=1", image, "serve")
    try:
        deadline = time.monotonic() + 300
        while request("GET", url + "/ping", timeout=5)[0] != 200:
            running = podman("inspect", "--format", "{{.State.Running}}", name,
                             check=False).stdout.strip()
            assert running == "true" and time.monotonic() < deadline, podman(
                "logs", name, check=False).stderr[-6000:]
            time.sleep(1)
        status, _, answer = request("POST", url + "/invocations", body=body)
        assert (status, json.loads(answer)) == (200, {"predictions": want}), answer
        status, _, answer = request("GET", url + "/execution-parameters")
        assert status == 200 and json.loads(answer)["MaxConcurrentTransforms"] == 1
    finally:
        podman("rm", "--force", name, check=False)


def test_sigterm_stops_it_cleanly(container: Container) -> None:
    """Last: ``docker stop`` drains nginx, stops gunicorn, and the container exits 0."""
    assert container.stop() == 0, container.logs()
    assert "Shutting down: Master" in container.logs()
