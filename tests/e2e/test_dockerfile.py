"""What the Dockerfile relies on, checked without building it (tests/e2e/test_image.py builds
and runs it where podman is installed): every path it copies or mounts exists once
``make dist`` has run, its install line installs exactly the wheels ``make dist`` builds, its
base image is a build argument, and it starts the front and the ``flask-predict`` command."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import zipfile
from pathlib import Path

import pytest

from tests.dist import built_dist

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) for each instruction, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def sources() -> list[str]:
    """Every build-context path the Dockerfile reads: COPY sources and bind-mount sources."""
    paths = []
    for word, rest in instructions():
        args = shlex.split(rest)
        if word == "COPY" and not any(a.startswith("--from") for a in args):
            paths += [a for a in args[:-1] if not a.startswith("--")]
        if word == "RUN":
            paths += re.findall(r"--mount=type=bind,source=([^,\s]+)", rest)
    return paths


def ignored(path: str) -> bool:
    """Whether .dockerignore leaves *path* out of the build context (the last matching rule
    wins, ``!`` keeps)."""
    result = False
    for rule in (ROOT / ".dockerignore").read_text().splitlines():
        rule = rule.strip()
        if not rule or rule.startswith("#"):
            continue
        keep = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
            result = not keep
    return result


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """What ``make dist`` builds (with this test run's virtualenv, which is installed), copied
    out of ``dist/`` while no other test process rebuilds it."""
    kept = tmp_path_factory.mktemp("dist")
    with built_dist() as dist:
        for wheel in dist.glob("*.whl"):
            shutil.copy2(wheel, kept / wheel.name)
    return sorted(kept.glob("*.whl"))


def test_every_copied_path_exists(wheels: list[Path]) -> None:
    assert sources(), "no COPY found"
    for path in sources():
        assert (ROOT / path).exists(), path
        files = [p for p in (ROOT / path).rglob("*") if p.is_file()] or [ROOT / path]
        kept = [p for p in files if not ignored(str(p.relative_to(ROOT)))]
        assert kept, f"{path} is left out of the build context by .dockerignore"


OPTIONAL = ("flask_predict_catboost-", "flask_predict_lightgbm-", "flask_predict_onnx-",
            "flask_predict_mlflow-")
"""Plugins ``make dist`` builds that the image leaves to a ``FROM`` image of its own (their
frameworks would add hundreds of MB to every user's image)."""


def test_the_install_line_installs_the_wheels_make_dist_builds(wheels: list[Path]) -> None:
    served = [w for w in wheels if not w.name.startswith(OPTIONAL)]
    assert len(served) == 5 and len(wheels) == 5 + len(OPTIONAL), wheels
    install = next(rest for word, rest in instructions()
                   if word == "RUN" and "--mount=type=bind,source=dist,target=/dist" in rest)
    patterns = re.findall(r"/dist/(\S+\.whl)", install)
    matched = [[w.name for w in wheels if fnmatch.fnmatch(w.name, p)] for p in patterns]
    assert all(len(m) == 1 for m in matched), dict(zip(patterns, matched))
    assert sorted(m[0] for m in matched) == [w.name for w in served]
    assert '"$core[grpc,otel,gcs,s3]"' in install and "core=$(ls /dist/flask_predict-*.whl)" in install


def test_it_starts_the_front_with_the_servers_command() -> None:
    """The entry point is the front's start script, which runs the command it is given."""
    steps = instructions()
    entrypoint = json.loads(next(rest for word, rest in steps if word == "ENTRYPOINT"))
    copied = {shlex.split(rest)[-1]: shlex.split(rest)[0] for word, rest in steps
              if word == "COPY" and len(shlex.split(rest)) == 2}
    assert copied[f"/usr/local/bin/{entrypoint[0]}"] == "deploy/container/start"
    assert entrypoint == [entrypoint[0]]
    assert json.loads(next(rest for word, rest in steps if word == "CMD")) == [
        "flask-predict", "serve"]
    assert next(rest for word, rest in steps if word == "USER") == "10001"


def test_the_command_is_the_one_the_wheel_installs(wheels: list[Path]) -> None:
    """``flask-predict serve`` is the wheel's console script; tests/e2e/test_front_nginx.py
    starts it through the same entry point."""
    core = next(w for w in wheels if w.name.startswith("flask_predict-"))
    with zipfile.ZipFile(core) as archive:
        entry_points = next((archive.read(n).decode() for n in archive.namelist()
                             if n.endswith(".dist-info/entry_points.txt")), "")
    assert re.search(r"^flask-predict\s*=", entry_points, re.M), entry_points


def test_the_base_image_is_a_build_argument() -> None:
    """``--build-arg BASE_IMAGE=...`` picks the base (a Debian bookworm image: Python and nginx
    come from its packages); Debian's own slim image unless given."""
    steps = instructions()
    assert steps[0] == ("ARG", "BASE_IMAGE=debian:bookworm-slim")
    assert [rest for word, rest in steps if word == "FROM"] == ["${BASE_IMAGE}"]
