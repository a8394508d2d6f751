"""Every HTTP example in the README and docs/ runs, with curl, against the demo models served
by real gunicorn, and answers what the docs say it answers."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from flask_predict.cli.serve import DEFAULT_REST_PORT
from flask_predict.demo import write_demo
from tests.docs.examples import LOCAL_URL, ROOT, Example, examples, matches, parse, same_output
from tests.e2e.server import GunicornServer

pytestmark = pytest.mark.e2e

FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXAMPLES = [example for path in FILES for example in examples(path)]


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GunicornServer]:
    models = tmp_path_factory.mktemp("demo") / "models"
    write_demo(models)
    env = {"FLASK_PREDICT_MODEL_CONFIG_FILE": str(models / "models.json")}
    with GunicornServer(workers=2, env=env) as server:
        yield server


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.where for e in EXAMPLES])
def test_example_answers_as_documented(demo_server: GunicornServer, example: Example) -> None:
    argv = example.argv(f"127.0.0.1:{demo_server.port}")
    assert argv[0] == "curl"
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"{example.command}\n{run.stderr}"
    assert same_output(example, run.stdout), (
        f"{example.where}: {example.command}\nthe docs say:\n{example.output}\n"
        f"the server answers:\n{run.stdout}")


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
    # every digit counts: a page shows the text the server prints
    assert not matches(parse("[0.9752805]"), parse("[0.975280523]"))
    assert not matches(parse("[0.5]"), parse("[0.5000000000000001]"))
    assert not matches(parse("[1e-05]"), parse("[0.00001]"))
    assert not matches(parse("[1]"), parse("[1.0]"))  # integer labels stay integers
    assert not matches(parse('["0.5"]'), parse("[0.5]"))  # a string is not a number
    assert not matches(parse('{"a": 1}'), parse('{"a": 1, "b": 2}'))
    assert matches(parse('{"version": "..."}'), parse('{"version": "0.1.0"}'))


def test_a_curl_block_needs_its_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```sh\ncurl -s localhost:8501/v2\n```\n\ntext\n")
    with pytest.raises(ValueError, match="needs a json or text block"):
        examples(page)
