"""How a version folder's modules import (flask_predict_custom.modules) and how its routine
class is found without running it (flask_predict_custom.discovery)."""

from __future__ import annotations

import logging
import sys
import textwrap
from pathlib import Path

import pytest

from flask_predict.errors import ConfigError
from flask_predict_custom import CustomPredictor
from flask_predict_custom.discovery import routine_classes
from flask_predict_custom.manifest import detect
from flask_predict_custom.modules import Router, VersionModules, shipped_names


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))
    return folder


def test_shipped_names(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "", "pkg/__init__.py": "", "plain/data.txt": "", "2x.py": "",
                     "class.py": "", "model.joblib": ""})
    assert shipped_names(str(tmp_path)) == {"a", "pkg"}


def test_a_name_the_environment_has_stays_the_folders_for_its_own_code(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """colorsys is in the standard library: the folder's own code gets the folder's module,
    everyone else the standard library's, and no router replaces it."""
    write(tmp_path, {"colorsys.py": "MINE = True\n", "predictor.py": '''
        import colorsys

        class Shadow:
            @classmethod
            def from_path(cls, model_dir):
                return cls()

            def predict(self, instances, **kwargs):
                return [colorsys.MINE for _ in instances]
        '''})
    with caplog.at_level(logging.WARNING, "flask_predict_custom.modules"):
        predictor = CustomPredictor.from_path(str(tmp_path))
    try:
        assert predictor.predict([0]) == [True]
        assert "a name the environment already has" in caplog.text
        import colorsys
        assert not isinstance(sys.modules["colorsys"], Router)
        assert not hasattr(colorsys, "MINE")
    finally:
        predictor.close()


def test_relative_imports_and_streams(tmp_path: Path) -> None:
    """``from . import x`` works as before; a generator's body runs with its version
    active, however late it is iterated."""
    write(tmp_path, {"features.py": "WORD = 'relative'\n", "words.py": "WORD = 'by name'\n",
                     "predictor.py": '''
        import importlib

        from . import features

        class Streaming:
            @classmethod
            def from_path(cls, model_dir):
                return cls()

            def predict(self, instances, **kwargs):
                for _ in instances:
                    yield [features.WORD, importlib.import_module("words").WORD]
        '''})
    predictor = CustomPredictor.from_path(str(tmp_path))
    try:
        stream = predictor.predict([1, 2])
        assert list(stream) == [["relative", "by name"]] * 2
    finally:
        predictor.close()


def test_closing_twice_and_an_empty_folder(tmp_path: Path) -> None:
    modules = VersionModules(str(tmp_path))
    assert modules.names == frozenset() and modules.package in sys.modules
    modules.close()
    modules.close()
    assert modules.package not in sys.modules


ROUTINES = {
    "aiplatform.py": '''
        class Mine:
            @classmethod
            def from_path(cls, model_dir): ...
            def predict(self, instances, **kwargs): ...
        class Helper:
            def predict(self, x): ...
        ''',
    "vertex_methods.py": '''
        class Cpr:
            def load(self, artifacts_uri): ...
            def postprocess(self, results): ...
        ''',
    "vertex_base.py": '''
        from google.cloud.aiplatform.prediction.sklearn.predictor import SklearnPredictor
        from google.cloud.aiplatform.prediction import predictor as p
        class Inherits(SklearnPredictor):
            pass
        class Qualified(p.Predictor):
            pass
        ''',
    "broken.py": "class (:\n",
}


def test_routine_classes_are_read_not_run(tmp_path: Path) -> None:
    write(tmp_path, ROUTINES)
    assert routine_classes(str(tmp_path)) == [
        "aiplatform.Mine", "vertex_base.Inherits", "vertex_base.Qualified",
        "vertex_methods.Cpr"]


def test_several_classes_need_a_class_setting(tmp_path: Path) -> None:
    write(tmp_path, {name: ROUTINES[name] for name in ("aiplatform.py", "vertex_methods.py")})
    with pytest.raises(ConfigError, match="several prediction classes"):
        detect(str(tmp_path), {})
    assert detect(str(tmp_path), {"class": "aiplatform.Mine"}) == 1.0
    with pytest.raises(TypeError, match="needs 'class'.*several classes could be it"):
        CustomPredictor.from_path(str(tmp_path))


def test_no_routine_no_claim(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": "print('training')\n"})
    assert detect(str(tmp_path), {}) == 0.0
