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
        # an unloaded (or evicted) model's series leave this process with it (under
        # gunicorn they stay in the shared files: tests/e2e/test_many_models_gunicorn.py)
        assert client.post("/v2/repository/models/m2/unload").status_code == 200
        text = client.get("/metrics").get_data(as_text=True)
        labelled = [line for line in text.splitlines() if not line.startswith("#")]
        for name in ("m1", "m3"):
            assert any(f'model="{name}"' in line for line in labelled)
            assert any(f'model_name="{name}"' in line for line in labelled)
        assert not any('"m2"' in line for line in labelled)
        assert client.post("/v2/repository/models/m2/load").status_code == 200
        assert client.post("/v2/models/m2/infer", json=INFER).status_code == 200
        text = client.get("/metrics").get_data(as_text=True)
        again = [line for line in text.splitlines()
                 if line.startswith('flask_predict_requests_total{code="200",model="m2"')]
        assert [float(line.rsplit(" ", 1)[1]) for line in again] == [1.0]  # counted anew
    finally:
        close_app(app)
