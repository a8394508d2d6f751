"""KServe's Python model server with the benchmark's two models, as a KServe user runs them.

Runs in its own virtual environment (``benchmarks/.peers-venv/kserve``, requirements in
``requirements-kserve.txt``), never in the project's. The two models repeat KServe's own
``sklearnserver`` and ``xgbserver`` predict paths (``np.array(instances)`` then
``model.predict``; a ``DMatrix`` with ``nthread=1``, xgbserver's default)::

    .peers-venv/kserve/bin/python kserve_server.py --lr_dir LR --xgb_dir XGB --http_port 8080 --workers 2 [--grpc_port 8081]

``LR`` holds ``model.joblib`` (model ``lr``), ``XGB`` holds ``model.json`` (model ``xgb``).
gRPC is off unless ``--grpc_port`` is given: then KServe's V2 gRPC server listens there
(on every interface, ``[::]``, which KServe does not let a user change; one server in the
main process, whatever ``--workers`` says). Request logging is off: the uvicorn access log
and KServe's per-request latency line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

QUIET_LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"}},
    "loggers": {
        "kserve": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "kserve.trace": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "uvicorn.access": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
    },
}

# KServe reads its flags from sys.argv when it is imported, in this process and again in
# each worker process it spawns (they inherit this sys.argv): add the quiet settings first.
if "--log_config_file" not in sys.argv:
    _fd, _path = tempfile.mkstemp(suffix=".json", prefix="kserve-logging-")
    with os.fdopen(_fd, "w") as _file:
        json.dump(QUIET_LOGGING, _file)
    sys.argv += ["--log_config_file", _path, "--enable_latency_logging", "false"]
    if "--grpc_port" not in sys.argv:
        sys.argv += ["--enable_grpc", "false"]

import joblib  # noqa: E402
import kserve  # noqa: E402
import numpy as np  # noqa: E402
import xgboost as xgb  # noqa: E402
from kserve.utils.utils import get_predict_input, get_predict_response  # noqa: E402


class SKLearnModel(kserve.Model):
    """KServe's sklearnserver predict path."""

    def __init__(self, name: str, model_dir: str) -> None:
        super().__init__(name)
        self.model_dir = model_dir

    def load(self) -> bool:
        self._model = joblib.load(os.path.join(self.model_dir, "model.joblib"))
        self.ready = True
        return self.ready

    def predict(self, payload, headers=None):
        instances = get_predict_input(payload)
        return get_predict_response(payload, self._model.predict(instances), self.name)


class XGBoostModel(kserve.Model):
    """KServe's xgbserver predict path."""

    def __init__(self, name: str, model_dir: str, nthread: int = 1) -> None:
        super().__init__(name)
        self.model_dir = model_dir
        self.nthread = nthread

    def load(self) -> bool:
        self._booster = xgb.Booster(params={"nthread": self.nthread},
                                    model_file=os.path.join(self.model_dir, "model.json"))
        self.ready = True
        return self.ready

    def predict(self, payload, headers=None):
        instances = get_predict_input(payload)
        dmatrix = xgb.DMatrix(instances, nthread=self.nthread)
        return get_predict_response(payload, self._booster.predict(dmatrix), self.name)


def main() -> None:
    parser = argparse.ArgumentParser(parents=[kserve.model_server.parser])
    parser.add_argument("--lr_dir", required=True)
    parser.add_argument("--xgb_dir", required=True)
    args, _ = parser.parse_known_args()
    models = [SKLearnModel("lr", args.lr_dir), XGBoostModel("xgb", args.xgb_dir)]
    for model in models:
        model.load()
    kserve.ModelServer().start(models)


if __name__ == "__main__":
    main()
