"""How close the TF Serving route can come to the AI Platform route on the same request.

For the same `lr` rows the AI Platform route answers the model's labels, while TF Serving's
row format answers every output of the signature for every row: a label and two
probabilities, in an object per row, the probabilities printed by TF Serving's
``WriteDecimal``. This measures, in one process (thread CPU time, best of 5 batches, as
``profile_requests.py``):

* both routes through the deployment app;
* the least work each answer needs, with nothing of ours around it: the model's arithmetic
  and an orjson print of the answer (the labels; the row objects with the probabilities at
  their shortest text; the same with TF Serving's digits, as our encoder prints them).

The *ceiling* is the AI Platform route's time over itself plus what TF Serving's answer
needs beyond the labels: how fast the TF Serving route would run against the AI Platform
route if all it did beyond it cost nothing but that answer.

    .venv/bin/python benchmarks/same_work.py [--rows 1 100] [--calls 2000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import models  # noqa: E402
import profile_requests  # noqa: E402
from run import ROUTES  # noqa: E402


def answers(model: Any, values: np.ndarray) -> dict[str, Callable[[], bytes]]:
    """The least work of each answer: the linear model's arithmetic and one print."""
    from flask_predict import codecs
    from flask_predict.protocols.tfserving import wire

    coef, intercept, classes = model.coef_.T, model.intercept_, model.classes_

    def labels() -> bytes:
        scores = values @ coef + intercept
        return orjson.dumps({"predictions": classes.take((scores[:, 0] > 0).astype(np.intp))
                             .tolist()})

    def both() -> tuple[np.ndarray, np.ndarray]:
        scores = values @ coef + intercept
        positive = 1.0 / (1.0 + np.exp(-scores[:, 0]))
        return (classes.take((scores[:, 0] > 0).astype(np.intp)),
                np.stack([1.0 - positive, positive], axis=1))

    def rows_shortest() -> bytes:
        label, proba = both()
        return orjson.dumps({"predictions": [
            {"predict": one, "predict_proba": two}
            for one, two in zip(label.tolist(), proba.tolist())]})

    def rows_tfserving() -> bytes:
        label, proba = both()
        return codecs.dumps_tfserving(wire.encode_predict(
            {"predict": label, "predict_proba": proba}, True, True), True)

    return {"labels": labels, "rows, shortest": rows_shortest,
            "rows, TF Serving's digits": rows_tfserving}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[1, 100])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    import joblib

    with tempfile.TemporaryDirectory(prefix="flask-predict-same-work-") as tmp:
        root = models.train(Path(tmp) / "models")
        app = profile_requests.make_app(root)
        model = joblib.load(root / "lr" / "1" / "model.joblib")
        print("| rows | AI Platform route (us) | TF Serving route (us) | route / route "
              "| labels (us) | rows, shortest (us) | rows, TF Serving's digits (us) "
              "| ceiling, shortest | ceiling, TF Serving's digits |")
        print("|---" * 9 + "|")
        for count in args.rows:
            values = models.rows(count)
            body = models.instances(values)
            spent = {route: profile_requests.cpu_us(profile_requests.wsgi_call(
                app, ROUTES[route][0].replace("{model}", "lr"), body), args.calls)
                for route in ("AI Platform", "TF Serving")}
            least = {name: profile_requests.cpu_us(call, args.calls)
                     for name, call in answers(model, values).items()}
            aip = spent["AI Platform"]
            ceilings = [aip / (aip + least[name] - least["labels"])
                        for name in ("rows, shortest", "rows, TF Serving's digits")]
            print(f"| {count} | {aip:.1f} | {spent['TF Serving']:.1f} | "
                  f"{aip / spent['TF Serving']:.2f}x | "
                  + " | ".join(f"{value:.1f}" for value in least.values())
                  + " | " + " | ".join(f"{value:.2f}x" for value in ceilings) + " |")


if __name__ == "__main__":
    main()
