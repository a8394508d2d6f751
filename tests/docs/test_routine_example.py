"""The Vertex AI routine of docs/models.md, run as written: its ``predictor.py`` beside a
classifier trained here, asked with the page's request through ``flask-predict predict`` and
an endpoint's ``:predict``, answering what the page shows."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import joblib
import pytest
from flask import Flask
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

from flask_predict import FlaskPredict, close_app
from flask_predict.cli import main
from tests.docs.examples import ROOT, Block, blocks, commands, matches

FIRST_LINE = "# models/iris_cpr/1/predictor.py"


def section() -> list[Block]:
    """The blocks of the page's Vertex AI routine section."""
    page = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    start = page.index("### Vertex AI custom prediction routines")
    return blocks(page[start:page.index("\n## ", start)])


def test_the_documented_vertex_routine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    found = section()
    code, = [b.text for b in found if b.info == "python" and b.text.startswith(FIRST_LINE)]
    shell = next(i for i, b in enumerate(found) if b.info == "sh")
    (write, predict), printed, endpoint = (commands(found[shell].text), found[shell + 1],
                                           found[shell + 2])
    folder = tmp_path / "models" / "iris_cpr" / "1"
    folder.mkdir(parents=True)
    (folder / "predictor.py").write_text(code)
    joblib.dump(LogisticRegression(max_iter=1000).fit(*load_iris(return_X_y=True)),
                folder / "model.joblib")
    # the page's `echo '<body>' > request.json`
    echo, body, _, file = shlex.split(write)
    assert echo == "echo" and file == "request.json"
    (tmp_path / file).write_text(body)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(predict)
    assert argv[:2] == ["flask-predict", "predict"]
    assert main(argv[1:]) == 0
    assert matches(json.loads(printed.text), json.loads(capsys.readouterr().out))

    app = Flask(__name__)
    app.config.update(PREDICT_POLL_SECONDS=0, PREDICT_MODELS={
        "iris_cpr": {"base_path": str(folder.parent)}})
    FlaskPredict(app)
    try:
        answer = app.test_client().post(
            "/v1/projects/demo/locations/us-central1/endpoints/iris_cpr:predict",
            data=body, content_type="application/json")
        assert matches(json.loads(endpoint.text), answer.get_json())
    finally:
        close_app(app)
