"""``flask-predict predict``: one prediction in process, as ``gcloud ai-platform local
predict`` runs one, for each kind of model, compared with the model's own answer."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest

from flask_predict.cli import main
from flask_predict.cli.local import instances, model_name
from flask_predict.models.demo import export_half_plus_two, train_iris, train_xgboost_missing
from tests.routines import (IRIS_ROWS, aiplatform_answers, make_tutorial, make_vertex,
                            vertex_answers)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(["predict", *argv])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return status, out, err


def lines(path: Path, rows: list[Any]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    train_iris(root / "iris")
    train_xgboost_missing(root / "loans")
    make_tutorial(root / "routine" / "1")
    return root


def test_scikit_learn_base_path_and_version_folder(models: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    own = joblib.load(models / "iris" / "1" / "model.joblib").predict(IRIS_ROWS).tolist()
    file = lines(tmp_path / "rows.json", IRIS_ROWS)
    for where in ("iris", "iris/1"):
        status, out, _ = run(capsys, str(models / where), "--json-instances", file)
        assert status == 0 and json.loads(out) == {"predictions": own}
    status, out, _ = run(capsys, "--model-dir", str(models / "iris"), "--json-instances",
                         file, "--framework", "scikit-learn")
    assert status == 0 and json.loads(out) == {"predictions": own}


def test_xgboost_with_missing_values(models: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    import xgboost

    rows = [[None, 0.1, 0.2, 0.3], [0.0, 0.1, 0.2, 0.3]]
    booster = xgboost.Booster(model_file=str(models / "loans" / "1" / "model.json"))
    own = booster.predict(xgboost.DMatrix(np.array(rows, dtype=float))).tolist()
    status, out, _ = run(capsys, str(models / "loans"), "--json-instances",
                         lines(tmp_path / "rows.json", rows))
    assert status == 0
    np.testing.assert_allclose(json.loads(out)["predictions"], own, rtol=1e-6)


def test_tensorflow_saved_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export_half_plus_two(tmp_path / "half")
    status, out, _ = run(capsys, str(tmp_path / "half" / "1"), "--json-instances",
                         lines(tmp_path / "x.json", [1.0, 3.0]), "--framework", "tensorflow")
    assert status == 0 and json.loads(out) == {"predictions": [2.5, 3.5]}


def test_googles_tutorial_routine(models: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """gcloud cannot run a custom routine locally; this runs it as it is served."""
    folder = models / "routine" / "1"
    labels, probabilities = aiplatform_answers(folder, "predictor.MyPredictor", [
        (IRIS_ROWS, {}), (IRIS_ROWS, {"probabilities": True})])
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"instances": IRIS_ROWS, "probabilities": True}))
    status, out, _ = run(capsys, str(folder), "--json-request", str(request))
    assert status == 0 and json.loads(out) == {"predictions": probabilities}
    status, out, _ = run(capsys, str(folder), "--json-instances",
                         lines(tmp_path / "rows.json", IRIS_ROWS),
                         "--option", "class=predictor.MyPredictor")
    assert status == 0 and json.loads(out) == {"predictions": labels}


def test_a_vertex_routine_prints_its_whole_answer(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A Vertex AI routine gets the whole request and its answer is printed as it is, as
    Vertex AI's CPR model server answers."""
    folder = tmp_path / "cpr" / "1"
    make_vertex([(folder, False, False)])
    body = {"instances": IRIS_ROWS, "parameters": {"scale": 1.5}}
    [(code, expected)], = vertex_answers([(folder, "CprPredictor", [body])])
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    status, out, _ = run(capsys, str(folder), "--json-request", str(request))
    assert code == 200 and status == 0 and json.loads(out) == expected


def test_text_instances_from_standard_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "predictor.py").write_text(
        "class Upper:\n"
        "    @classmethod\n"
        "    def from_path(cls, model_dir):\n"
        "        return cls()\n"
        "    def predict(self, instances, **kwargs):\n"
        "        return [text.upper() for text in instances]\n")
    stdin = io.TextIOWrapper(io.BytesIO("107,4.9\nhello world\n".encode()))
    monkeypatch.setattr("sys.stdin", stdin)
    status, out, _ = run(capsys, str(tmp_path), "--text-instances", "-")
    assert status == 0 and json.loads(out) == {"predictions": ["107,4.9", "HELLO WORLD"]}


def test_the_model_refusing_is_status_1_with_its_error(models: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    file = lines(tmp_path / "rows.json", [[1.0, 2.0]])
    status, out, err = run(capsys, str(models / "iris"), "--json-instances", file)
    assert status == 1 and out == "" and "error" in json.loads(err)
    status, _, err = run(capsys, str(models / "iris"), "--json-instances", file,
                         "--framework", "xgboost")
    assert status == 1 and "failed to load" in err


@pytest.mark.parametrize("content, message", [
    ("[1]\n\n[2]\n", "line 2 is empty"),
    ("[1]\n{nope\n", "line 2 is not JSON"),
    ("", "holds no instance"),
])
def test_bad_instance_files_are_status_2(models: Path, tmp_path: Path, content: str,
                                         message: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rows.json").write_text(content)
    status, _, err = run(capsys, str(models / "iris"), "--json-instances",
                         str(tmp_path / "rows.json"))
    assert status == 2 and message in err


def test_usage_errors_are_status_2(models: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "request.json").write_text('{"rows": []}')
    iris = str(models / "iris")
    cases = [
        ([iris, "--json-request", str(tmp_path / "request.json")], '"instances" list'),
        ([iris, "--json-instances", str(tmp_path / "absent.json")], "cannot read"),
        ([str(tmp_path / "nowhere"), "--json-instances", "-"], "not a directory"),
        ([iris, "--model-dir", iris, "--json-instances", "-"], "not both"),
        ([iris], "one of the arguments"),
    ]
    for argv, message in cases:
        status, _, err = run(capsys, *argv)
        assert status == 2 and message in err, argv


def test_instances_and_names() -> None:
    assert instances(b'\xef\xbb\xbf{"a": 1}\r\n[2]\n', as_json=True) == [{"a": 1}, [2]]
    assert model_name("/m/iris/3") == "iris" and model_name("/m/iris") == "iris"


def test_the_documented_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """docs/models.md and docs/cli.md: the demo's iris model, two instances."""
    command = "flask-predict predict demo/models/iris --json-instances instances.json"
    rows = "printf '[5.1, 3.5, 1.4, 0.2]\\n[6.7, 3.0, 5.2, 2.3]\\n' > instances.json"
    answer = '{"predictions":[0,2]}'
    for page in ("models.md", "cli.md"):
        text = (Path(__file__).parents[3] / "docs" / page).read_text()
        assert command in text and rows in text and answer in text, page
    train_iris(tmp_path / "demo" / "models" / "iris")
    (tmp_path / "instances.json").write_text("[5.1, 3.5, 1.4, 0.2]\n[6.7, 3.0, 5.2, 2.3]\n")
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(capsys, *command.split()[2:])
    assert status == 0 and out.strip() == answer
