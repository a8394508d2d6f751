"""Every HTTP example in the README and docs/ runs, with curl, against the demo models served
by real gunicorn, and answers what the docs say it answers."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from flask_predict.cli.serve import DEFAULT_REST_PORT
from flask_predict.models.demo import DEMO_MODELS, write_demo
from tests.docs.examples import (LOCAL_URL, ROOT, Example, Number, examples, matches, parse,
                                 same_output)
from tests.e2e.server import GunicornServer

pytestmark = pytest.mark.e2e

FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXAMPLES = [example for path in FILES for example in examples(path)]
SECOND_LIBRARY = {"OPENBLAS_CORETYPE": "ARMV8" if platform.machine() == "aarch64" else "Prescott",
                  "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
"""Another maths library setting: OpenBLAS's kernels for the oldest CPU of this kind (no AVX,
no FMA) on one thread, where numpy's wheels pick the kernels of the CPU they run on."""


def floats(value: Any) -> bool:
    """Whether a parsed JSON value holds a number other than an integer."""
    if isinstance(value, dict):
        return any(floats(item) for item in value.values())
    if isinstance(value, list):
        return any(floats(item) for item in value)
    return type(value) is Number


BLAS_MODELS = [name for name, (_, framework, _) in DEMO_MODELS.items()
               if framework != "tensorflow"]
"""The demo models numpy's BLAS trains and runs (TensorFlow computes with kernels of its own)."""


def asks(example: Example, models: list[str]) -> bool:
    """Whether *example* asks one of *models* (by URL, or by grps's ``"model"`` key)."""
    return any(re.search(rf'models/{name}[:/]|"model": "{name}-', example.command)
               for name in models)


COMPUTED = [e for e in EXAMPLES if e.output_kind == "json" and floats(parse(e.output)) and
            asks(e, BLAS_MODELS)]
"""The examples whose answers numpy's BLAS computes."""


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GunicornServer]:
    models = tmp_path_factory.mktemp("demo") / "models"
    write_demo(models)
    env = {"FLASK_PREDICT_MODEL_CONFIG_FILE": str(models / "models.json")}
    with GunicornServer(workers=2, env=env) as server:
        yield server


TRAIN = """
import json, sys
from pathlib import Path
from flask_predict.models.demo import DEMO_MODELS
out, config = Path(sys.argv[1]), {}
for name in sys.argv[2:]:
    build, _, settings = DEMO_MODELS[name]
    build(out / name)
    config[name] = {"base_path": str(out / name), **settings}
(out / "models.json").write_text(json.dumps({"models": config}))
"""
"""Train the demo models named in ``argv[2:]`` into ``argv[1]``, with their config."""


def blas(env: dict[str, str]) -> dict[str, Any]:
    """What numpy's BLAS says of itself in a process started with *env* added."""
    script = ("import json, numpy, threadpoolctl; print(json.dumps("
              "[i for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas']))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, **env}, check=True, timeout=120)
    found: list[dict[str, Any]] = json.loads(run.stdout)
    return found[0] if found else {}


@pytest.fixture(scope="module")
def second_library_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GunicornServer]:
    """The BLAS's demo models trained, and served by one worker, under
    :data:`SECOND_LIBRARY`."""
    usual, second = blas({}), blas(SECOND_LIBRARY)
    if usual.get("internal_api") != "openblas":
        pytest.skip(f"numpy's BLAS here is {usual.get('internal_api')!r}, not OpenBLAS")
    assert second["architecture"] != usual["architecture"], (usual, second)
    assert second["num_threads"] == 1
    models = tmp_path_factory.mktemp("demo-second-library")
    subprocess.run([sys.executable, "-c", TRAIN, str(models), *BLAS_MODELS],
                   env={**os.environ, **SECOND_LIBRARY}, check=True, capture_output=True,
                   timeout=600)
    env = {**SECOND_LIBRARY, "FLASK_PREDICT_MODEL_CONFIG_FILE": str(models / "models.json")}
    with GunicornServer(workers=1, env=env) as server:
        yield server


def answer(server: GunicornServer, example: Example) -> str:
    """What *server* answers *example*'s curl command."""
    argv = example.argv(f"127.0.0.1:{server.port}")
    assert argv[0] == "curl"
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"{example.command}\n{run.stderr}"
    return run.stdout


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_example_answers_as_documented(demo_server: GunicornServer, example: Example) -> None:
    output = answer(demo_server, example)
    assert same_output(example, output), (
        f"{example.where}: {example.command}\nthe docs say:\n{example.output}\n"
        f"the server answers:\n{output}")


@pytest.mark.parametrize("example", COMPUTED, ids=[e.where for e in COMPUTED])
def test_example_answers_as_documented_on_another_maths_library(
        second_library_server: GunicornServer, example: Example) -> None:
    """The documented numbers hold where another BLAS kernel trained and serves the demo."""
    output = answer(second_library_server, example)
    assert same_output(example, output), (
        f"{example.where} under {SECOND_LIBRARY}: {example.command}\n"
        f"the docs say:\n{example.output}\nthe server answers:\n{output}")


def test_pages_with_examples() -> None:
    """The pages a reader tries first each carry examples."""
    pages = {example.where.split(":")[0] for example in EXAMPLES}
    assert {"README.md", "docs/index.md", "docs/protocols/aiplatform.md",
            "docs/protocols/tfserving.md", "docs/protocols/kserve_v2.md",
            "docs/protocols/grps.md"} <= pages


def test_examples_use_the_default_port() -> None:
    """One port story: every example asks the port `make serve`, `flask-predict serve`, the
    gunicorn settings and the container listen on by default."""
    for example in EXAMPLES:
        for url in LOCAL_URL.findall(example.command):
            assert url.endswith(f":{DEFAULT_REST_PORT}"), f"{example.where}: {url}"


def test_comparison() -> None:
    assert matches(parse('{"a": [1, 0.5, "x", NaN]}'), parse('{"a": [1, 0.5, "x", NaN]}'))
    # a float64 to 12 digits: another BLAS kernel's last digits (measured) pass, the 12th not
    assert matches(parse("[5.5983614876582324e-05]"), parse("[5.598361487658212e-05]"))
    assert matches(parse("[0.20519209197121149]"), parse("[0.20519209197121155]"))
    assert matches(parse("[0.5]"), parse("[0.5000000000000001]"))
    assert not matches(parse("[0.20519209197121149]"), parse("[0.20519209197221149]"))
    assert not matches(parse("[0.9815834948784272]"), parse("[0.98158349]"))
    # numbers written as short as a float32: to its 6 digits
    assert matches(parse("[1.4498667e-8]"), parse("[1.4498665e-8]"))
    assert not matches(parse("[0.9752805]"), parse("[0.9752905]"))
    # the form a writer chose is the same on every machine
    assert not matches(parse("[1e-05]"), parse("[0.00001]"))
    assert not matches(parse("[1.4498667348619737e-08]"), parse("[1.4498667348619737e-8]"))
    assert not matches(parse("[NaN]"), parse("[Infinity]"))
    assert not matches(parse("[-Infinity]"), parse("[Infinity]"))
    assert not matches(parse("[1]"), parse("[1.0]"))  # integer labels stay integers
    assert not matches(parse('["0.5"]'), parse("[0.5]"))  # a string is not a number
    assert not matches(parse('{"a": 1}'), parse('{"a": 1, "b": 2}'))
    assert matches(parse('{"version": "..."}'), parse('{"version": "0.1.0"}'))


def test_a_curl_block_needs_its_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```sh\ncurl -s localhost:8501/v2\n```\n\ntext\n")
    with pytest.raises(ValueError, match="needs a json or text block"):
        examples(page)
