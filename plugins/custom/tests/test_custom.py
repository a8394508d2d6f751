"""The custom plugin: AI Platform prediction routines loaded from the version folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flask_predict_custom import CustomPredictor
from tests.models import make_custom

STRICT = '''
class Strict:
    @classmethod
    def from_path(cls, model_dir):
        return cls()

    def predict(self, instances, probabilities=False):
        return [{"p": probabilities, "x": x} for x in instances]
'''


def test_loads_the_class_shipped_in_the_version_folder(tmp_path: Path) -> None:
    base = make_custom(tmp_path / "echo", scale=3)
    predictor = CustomPredictor.from_path(str(base / "1"), **{"class": "predictor.EchoPredictor"})
    (answer,) = predictor.predict([2], flag=True)
    assert answer == {"instance": 2, "scaled": 6, "kwargs": {"flag": True}}


def test_each_version_gets_its_own_module(tmp_path: Path) -> None:
    base = make_custom(tmp_path / "echo", version=1, scale=2)
    make_custom(base, version=2, scale=10)
    (base / "2" / "predictor.py").write_text(
        (base / "2" / "predictor.py").read_text().replace('"scaled"', '"scaled_v2"'))
    one = CustomPredictor.from_path(str(base / "1"), **{"class": "predictor:EchoPredictor"})
    two = CustomPredictor.from_path(str(base / "2"), **{"class": "predictor:EchoPredictor"})
    assert "scaled" in one.predict([1])[0] and "scaled_v2" in two.predict([1])[0]


def test_kwargs_a_class_does_not_take_are_dropped(tmp_path: Path) -> None:
    (tmp_path / "strict.py").write_text(STRICT)
    predictor = CustomPredictor.from_path(str(tmp_path), **{"class": "strict.Strict"})
    assert predictor.predict([1], probabilities=True, other=3) == [{"p": True, "x": 1}]


def test_tensor_door_is_derived(tmp_path: Path) -> None:
    base = make_custom(tmp_path / "echo")
    predictor = CustomPredictor.from_path(str(base / "1"), **{"class": "predictor.EchoPredictor"})
    out = predictor.predict_tensors({"x": np.array([1.5, 2.0])})
    assert out["predictions"].dtype == object and len(out["predictions"]) == 2


@pytest.mark.parametrize("name, message", [
    ("predictor.Nope", "has no class 'Nope'"),
    ("nomodule_at_all.Cls", "No module named"),
    ("Plain", "must be written"),
])
def test_bad_class_names(tmp_path: Path, name: str, message: str) -> None:
    base = make_custom(tmp_path / "echo")
    with pytest.raises((TypeError, ImportError), match=message):
        CustomPredictor.from_path(str(base / "1"), **{"class": name})


def test_class_is_required(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="needs 'class'"):
        CustomPredictor.from_path(str(tmp_path))


def test_shared_is_the_servers_option(tmp_path: Path) -> None:
    """``"shared": true`` tells the server to load the class once per machine: the manifest
    reads it, ``from_path`` takes it and passes nothing on to the user's class."""
    from flask_predict_custom.manifest import MANIFEST

    base = make_custom(tmp_path / "m")
    predictor = CustomPredictor.from_path(str(base / "1"), **{
        "class": "predictor.EchoPredictor", "shared": True})
    assert predictor.predict([1])[0]["scaled"] == 2.0
    assert MANIFEST.shares({"class": "predictor.EchoPredictor", "shared": True})
    assert not MANIFEST.shares({"class": "predictor.EchoPredictor"})
    assert not MANIFEST.shares({"class": "predictor.EchoPredictor", "shared": "yes"})
