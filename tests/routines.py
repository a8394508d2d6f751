"""Google's custom prediction routines, written into version folders as Google's tutorials
lay them out, their artifacts saved by the frameworks' own APIs in a separate Python process
(as a user's training script would), and each routine's own answer computed the way Google's
runtime runs it: the folder's modules top-level on ``sys.path``, in a process of their own."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

TUTORIAL_PREPROCESS = '''
import numpy as np


class ZeroCenterer:
    """Centres each column on the mean it saw first (the training data)."""

    def __init__(self):
        self._means = None

    def preprocess(self, data):
        if self._means is None:
            self._means = np.mean(data, axis=0)
        return data - self._means
'''

TUTORIAL_PREDICTOR = '''
import os
import pickle

import joblib
import numpy as np
from sklearn.datasets import load_iris


class MyPredictor:
    """AI Platform's Predictor interface: from_path, then predict per request."""

    def __init__(self, model, preprocessor):
        self._model = model
        self._preprocessor = preprocessor
        self._class_names = load_iris().target_names

    def predict(self, instances, **kwargs):
        inputs = self._preprocessor.preprocess(np.asarray(instances))
        if kwargs.get("probabilities"):
            return self._model.predict_proba(inputs).tolist()
        return [self._class_names[number] for number in self._model.predict(inputs)]

    @classmethod
    def from_path(cls, model_dir):
        model = joblib.load(os.path.join(model_dir, "model.joblib"))
        with open(os.path.join(model_dir, "preprocessor.pkl"), "rb") as f:
            preprocessor = pickle.load(f)
        return cls(model, preprocessor)
'''

TUTORIAL_TRAINING = '''
import pickle
import sys

import joblib
from sklearn.datasets import load_iris
from sklearn.ensemble import RandomForestClassifier

from preprocess import ZeroCenterer

out = sys.argv[1]
iris = load_iris()
preprocessor = ZeroCenterer()
classifier = RandomForestClassifier(n_estimators=10, random_state=0)
classifier.fit(preprocessor.preprocess(iris.data), iris.target)
joblib.dump(classifier, out + "/model.joblib")
with open(out + "/preprocessor.pkl", "wb") as f:
    pickle.dump(preprocessor, f)
'''

IRIS_ROWS = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3], [5.9, 3.0, 4.2, 1.5]]


def python(script: str, *args: str, cwd: Path | None = None) -> str:
    """Run *script* in a fresh interpreter; its standard output."""
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], cwd=cwd,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def make_tutorial(folder: Path) -> Path:
    """AI Platform's scikit-learn routine tutorial: ``predictor.py`` and ``preprocess.py``,
    ``model.joblib`` and ``preprocessor.pkl`` (pickling ``preprocess.ZeroCenterer``), all in
    one version folder."""
    folder.mkdir(parents=True)
    (folder / "predictor.py").write_text(TUTORIAL_PREDICTOR)
    (folder / "preprocess.py").write_text(TUTORIAL_PREPROCESS)
    training = folder.parent / f"training-{folder.name}"
    training.mkdir()
    (training / "preprocess.py").write_text(TUTORIAL_PREPROCESS)
    python(TUTORIAL_TRAINING, str(folder), cwd=training)
    return folder


def aiplatform_answers(folder: Path, class_name: str,
                       calls: list[tuple[list[Any], dict[str, Any]]]) -> list[Any]:
    """What the routine answers in Google's runtime: its modules top-level, ``from_path``
    once, then ``predict(instances, **kwargs)`` for each call, as JSON."""
    module, _, name = class_name.rpartition(".")
    return list(json.loads(python(f'''
        import json, sys
        sys.path.insert(0, sys.argv[1])
        from {module} import {name}
        routine = {name}.from_path(sys.argv[1])
        print(json.dumps([routine.predict(instances, **kwargs)
                          for instances, kwargs in json.loads(sys.argv[2])], default=str))
        ''', str(folder), json.dumps(calls))))


def aiplatform_answer(folder: Path, class_name: str, instances: list[Any],
                      **kwargs: Any) -> Any:
    """:func:`aiplatform_answers` for one call."""
    return aiplatform_answers(folder, class_name, [(instances, kwargs)])[0]


VERSIONED_PREDICTOR = '''
import importlib
import os
import pickle
import threading

import helpers
from lib import extra


def label_seen_by_a_thread():
    """A thread this routine starts itself imports helpers too."""
    seen = []

    def work():
        import helpers
        seen.append(helpers.LABEL)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return seen[0]


class Routine:
    def __init__(self, scale, blob):
        self.scale = scale
        self.blob = blob

    @classmethod
    def from_path(cls, model_dir):
        with open(os.path.join(model_dir, "scale.pkl"), "rb") as f:
            blob = f.read()
        return cls(pickle.loads(blob), blob)

    def predict(self, instances, **kwargs):
        import helpers as imported_late
        by_name = importlib.import_module("helpers")
        nested = importlib.import_module("lib.extra")
        fresh = pickle.loads(self.blob)
        return [{"label": helpers.LABEL, "late": imported_late.LABEL, "by_name": by_name.LABEL,
                 "extra": extra.NAME, "nested": nested.NAME,
                 "thread": label_seen_by_a_thread(), "scaled": self.scale.apply(x),
                 "fresh": fresh.apply(x)} for x in instances]
'''

VERSIONED_HELPERS = '''
LABEL = {label!r}


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def apply(self, x):
        return {formula}
'''


def make_versioned(base: Path, version: int, label: str, formula: str) -> Path:
    """A routine whose version folders hold different code under the same module names:
    ``predictor.py`` (the same text), ``helpers.py`` and ``lib/extra.py`` (each version's
    own), and ``scale.pkl`` pickling that version's ``helpers.Scale``."""
    folder = base / str(version)
    (folder / "lib").mkdir(parents=True)
    (folder / "predictor.py").write_text(VERSIONED_PREDICTOR)
    (folder / "helpers.py").write_text(VERSIONED_HELPERS.format(label=label, formula=formula))
    (folder / "lib" / "__init__.py").write_text("")
    (folder / "lib" / "extra.py").write_text(f"NAME = {label + '-extra'!r}\n")
    python('''
        import pickle, sys
        sys.path.insert(0, sys.argv[1])
        import helpers
        with open(sys.argv[1] + "/scale.pkl", "wb") as f:
            pickle.dump(helpers.Scale(3), f)
        ''', str(folder))
    return folder


VERTEX_ROUTINE = '''
import os

import joblib
import numpy as np
{base_import}

import labels


class CprPredictor{base}:
    """Vertex AI's CPR contract: created with no arguments, load() once, then preprocess,
    predict and postprocess for each request."""

    def __init__(self):
        self._model = None

    def load(self, artifacts_uri):
        self._model = joblib.load(os.path.join(artifacts_uri, "model.joblib"))

    def preprocess(self, prediction_input):
        instances = prediction_input["instances"]
        scale = (prediction_input.get("parameters") or {{}}).get("scale", 1.0)
        return np.asarray(instances, dtype=float) * scale

    def predict(self, instances):
        return self._model.predict_proba(instances)

    def postprocess(self, prediction_results):
        names = labels.NAMES
        return {{"predictions": [
            {{"label": names[int(row.argmax())], "scores": row.tolist()}}
            for row in prediction_results]}}
'''

SDK_IMPORT = "from google.cloud.aiplatform.prediction.predictor import Predictor"

TRAIN_LOGISTIC = '''
import sys

import joblib
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

iris = load_iris()
for folder in sys.argv[1:]:
    model = LogisticRegression(max_iter=1000).fit(iris.data, iris.target)
    joblib.dump(model, folder + "/model.joblib")
'''


def make_vertex(folders: list[tuple[Path, bool, bool]]) -> None:
    """Vertex AI custom prediction routines, one per ``(folder, real_base, signature)``:
    ``predictor.py`` (subclassing Google's ``Predictor`` when *real_base*, else a plain
    class; declaring its inputs and outputs with *signature*), ``labels.py`` and
    ``model.joblib`` (all trained in one process)."""
    for folder, real_base, signature in folders:
        folder.mkdir(parents=True)
        source = VERTEX_ROUTINE.format(base_import=SDK_IMPORT if real_base else "",
                                       base="(Predictor)" if real_base else "")
        if signature:
            source += textwrap.indent(textwrap.dedent('''
                signature = {
                    "inputs": [{"name": "features", "datatype": "FP64", "shape": [-1, 4]}],
                    "outputs": [{"name": "label", "datatype": "BYTES", "shape": [-1]},
                                {"name": "scores", "datatype": "FP64", "shape": [-1, 3]}]}
                '''), "    ")
        (folder / "predictor.py").write_text(source)
        (folder / "labels.py").write_text('NAMES = ["setosa", "versicolor", "virginica"]\n')
    python(TRAIN_LOGISTIC, *[str(folder) for folder, _, _ in folders])


def vertex_answers(cases: list[tuple[Path, str, list[Any]]]) -> list[list[tuple[int, Any]]]:
    """What Vertex AI's own CPR model server (``CprModelServer`` with its default
    ``PredictionHandler``) answers, for each ``(folder, class name in predictor.py,
    bodies)``: one ``(status, JSON)`` per body. One process runs them all, one server per
    folder, with the folder's modules top-level as in Google's container."""
    out = cases[0][0].parent / "cpr-answers.json"
    python('''
        import json, os, sys
        from fastapi.testclient import TestClient
        from google.cloud.aiplatform.prediction.model_server import CprModelServer
        cases, answers = json.loads(sys.argv[2]), []
        for folder, class_name, bodies in cases:
            sys.path.insert(0, folder)
            for name in ("predictor", "labels"):
                sys.modules.pop(name, None)
            os.environ.update(
                HANDLER_MODULE="google.cloud.aiplatform.prediction.handler",
                HANDLER_CLASS="PredictionHandler", PREDICTOR_MODULE="predictor",
                PREDICTOR_CLASS=class_name, AIP_STORAGE_URI=folder, AIP_HTTP_PORT="8080",
                AIP_HEALTH_ROUTE="/health", AIP_PREDICT_ROUTE="/predict")
            client = TestClient(CprModelServer())
            replies = [client.post("/predict", json=body) for body in bodies]
            answers.append([[reply.status_code, reply.json()] for reply in replies])
            sys.path.remove(folder)
        with open(sys.argv[1], "w") as f:
            json.dump(answers, f)
        ''', str(out), json.dumps([[str(f), c, b] for f, c, b in cases]))
    return [[(status, body) for status, body in case] for case in json.loads(out.read_text())]


VERTEX_ECHO = '''
class Echo:
    """A Vertex AI routine that answers the body it was given, or misbehaves as the body's
    "parameters" ask ({"ask": ...}): the paths a server must survive."""

    def load(self, artifacts_uri):
        self.folder = artifacts_uri

    def preprocess(self, prediction_input):
        ask = None
        if isinstance(prediction_input, dict):
            ask = (prediction_input.get("parameters") or {}).get("ask")
        if ask == "raise":
            raise ValueError("preprocess cannot take this request")
        return prediction_input, ask

    def predict(self, instances):
        return instances

    def postprocess(self, prediction_results):
        body, ask = prediction_results
        if ask == "set":
            return {"predictions": [{1, 2}]}
        if ask == "circular":
            loop = []
            loop.append(loop)
            return {"predictions": loop}
        if ask == "bare":
            return [body]
        if ask == "metadata":
            return {"predictions": [body], "metadata": {"served_by": "echo"}, "other": 1}
        return {"predictions": [body]}
'''


def make_vertex_echo(folder: Path) -> Path:
    """:data:`VERTEX_ECHO` in ``predictor.py``, the only file of its version folder."""
    folder.mkdir(parents=True)
    (folder / "predictor.py").write_text(VERTEX_ECHO)
    return folder
