"""The lazy tier's series and its part of the status page, from an app over a root of real
models under a cap that holds two."""

from __future__ import annotations

from pathlib import Path

from flask_predict.extension import close_app
from flask_predict.models.lazy import files_bytes
from tests.conftest import AppFactory
from tests.lazy_models import train_linear

INFER = {"inputs": [{"name": "input-0", "datatype": "FP64", "shape": [1, 3],
                     "data": [1.0, 2.0, 3.0]}]}


def sample(text: str, name: str) -> float:
    """The sum of every sample of series *name* (each worker's, here one)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + " ") or line.startswith(name + "{"))


def test_metrics_and_status_page_show_the_tier(make_app: AppFactory, tmp_path: Path) -> None:
    for seed in (1, 2, 3):
        train_linear(tmp_path / f"m{seed}", seed)
    # twice one model's files: two fit once the first load's framework imports are paid
    cap = 2 * files_bytes(str(tmp_path / "m1" / "1")) + 64 * 2**20
    app = make_app({}, lazy_root=str(tmp_path), lazy_max_bytes=cap, metrics_path="/metrics",
                   status_path="/status")
    try:
        client = app.test_client()
        for name in ("m1", "m2", "m1", "m3", "m1"):
            assert client.post(f"/v2/models/{name}/infer", json=INFER).status_code == 200
        text = client.get("/metrics").get_data(as_text=True)
        assert sample(text, "flask_predict_lazy_misses_total") == 3
        assert sample(text, "flask_predict_lazy_hits_total") == 2  # one a request
        assert sample(text, "flask_predict_lazy_load_seconds_count") == 3
        held = sample(text, "flask_predict_lazy_bytes")
        assert 0 < held <= cap
        status = client.get("/status/status.json").get_json()["lazy"]
        assert status["root"] == str(tmp_path) and status["max_bytes"] == cap
        assert status["held_bytes"] == held
        states = {model["name"]: model["state"] for model in status["models"]}
        assert states["m1"] == "AVAILABLE" and set(states) == {"m1", "m2", "m3"}
        assert sample(text, "flask_predict_lazy_models") == sum(
            state == "AVAILABLE" for state in states.values())
        assert "Lazy tier" in client.get("/status/").get_data(as_text=True)
    finally:
        close_app(app)
