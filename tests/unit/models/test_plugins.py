"""plugins: entry-point discovery in the group flask_predict.predictors."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

import pytest

from flask_predict.models import plugins
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


# --- a recognised artifact without its plugin names the package to install ----------------

def test_a_bundled_plugin_that_is_missing_names_its_extra(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setattr(plugins, "entry_points",
                        fake_entry_points(("doubler", f"{__name__}:Doubler")))
    with pytest.raises(PredictorNotFound) as caught:
        plugins.load_predictor_class("xgboost")
    assert caught.value.message.endswith(
        '; install it: pip install "flask-predict[xgboost]"')
    with pytest.raises(PredictorNotFound) as caught:
        plugins.load_predictor_class("torchscript")  # not one of ours: no extra to name
    assert "pip install" not in caught.value.message


def detecting(*names: str) -> dict[str, plugins.Manifest]:
    """Manifests of installed plugins *names* that recognise nothing here."""
    return {name: plugins.Manifest(detect=lambda folder, options: 0.0) for name in names}


@pytest.mark.parametrize("files, plugin", [
    ({"saved_model.pb": b"\x08\x01"}, "tensorflow"),
    ({"saved_model.pbtxt": b"saved_model_schema_version: 1"}, "tensorflow"),
    ({"model.json": b"{}"}, "xgboost"),
    ({"model.ubj": b"{"}, "xgboost"),
    ({"model.bst": b"binf"}, "xgboost"),
    ({"model.pkl": b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x07sklearn\x94."},
     "sklearn"),
])
def test_a_recognised_artifact_names_the_plugin_to_install(
        tmp_path: Any, files: dict[str, bytes], plugin: str) -> None:
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    others = detecting(*(p for p in plugins.BUNDLED if p != plugin))
    with pytest.raises(ConfigError) as caught:
        plugins.detect_predictor(str(tmp_path), {}, others)
    assert caught.value.message == (
        f"{str(tmp_path)!r} holds {next(iter(files))}, which the {plugin!r} plugin loads, and "
        f'it is not installed; install it: pip install "flask-predict[{plugin}]"')
    # installed, it is simply asked (here it declines: the usual message)
    with pytest.raises(ConfigError, match="no installed plugin recognises"):
        plugins.detect_predictor(str(tmp_path), {}, detecting(*plugins.BUNDLED))


def test_a_pickled_xgboost_model_names_xgboost(tmp_path: Any) -> None:
    import pickle

    import xgboost

    (tmp_path / "model.joblib").write_bytes(pickle.dumps(xgboost.XGBClassifier()))
    with pytest.raises(ConfigError, match=r'pip install "flask-predict\[xgboost\]"'):
        plugins.detect_predictor(str(tmp_path), {}, detecting("sklearn"))
