"""plugins: entry-point discovery in the group flask_predict.predictors."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

import pytest

from flask_predict import plugins
from flask_predict.errors import ConfigError, PredictorNotFound
from flask_predict.predictor import Predictor


class Doubler(Predictor):
    @classmethod
    def from_path(cls, model_dir: str, **options: Any) -> Doubler:
        return cls()

    def predict(self, instances: list[Any], **kwargs: Any) -> list[Any]:
        return [2 * i for i in instances]


NotAPredictor = dict


def fake_entry_points(*points: tuple[str, str]) -> Any:
    found = [EntryPoint(name, value, plugins.GROUP) for name, value in points]
    return lambda group: [ep for ep in found if ep.group == group]


def test_installed_plugins_are_found() -> None:
    assert {"sklearn", "xgboost", "custom"} <= set(plugins.installed_names())
    cls = plugins.load_predictor_class("sklearn")
    assert issubclass(cls, Predictor) and cls.__module__ == "flask_predict_sklearn.predictor"


def test_third_party_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "entry_points",
                        fake_entry_points(("doubler", f"{__name__}:Doubler")))
    assert plugins.load_predictor_class("doubler") is Doubler


def test_missing_plugin_lists_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "entry_points",
                        fake_entry_points(("doubler", f"{__name__}:Doubler")))
    with pytest.raises(PredictorNotFound, match=r"no predictor 'onnx'; installed: \['doubler'\]"):
        plugins.load_predictor_class("onnx")


def test_two_distributions_claiming_one_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "entry_points", fake_entry_points(
        ("doubler", f"{__name__}:Doubler"), ("doubler", "elsewhere:Doubler")))
    with pytest.raises(ConfigError, match="claimed by"):
        plugins.load_predictor_class("doubler")


@pytest.mark.parametrize("value, message", [
    (f"{__name__}:NotAPredictor", "not a concrete Predictor"),
    ("no_such_module_here:Thing", "cannot be imported"),
])
def test_bad_plugins(monkeypatch: pytest.MonkeyPatch, value: str, message: str) -> None:
    monkeypatch.setattr(plugins, "entry_points", fake_entry_points(("bad", value)))
    with pytest.raises(ConfigError, match=message):
        plugins.load_predictor_class("bad")


def test_predictor_must_override_a_door() -> None:
    with pytest.raises(TypeError, match="must override predict or predict_tensors"):
        class Empty(Predictor):  # noqa: F841 - defining it is the test
            @classmethod
            def from_path(cls, model_dir: str, **options: Any) -> Empty:
                return cls()
