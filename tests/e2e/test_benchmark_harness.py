"""The benchmark harness's mechanics against the real floors under gunicorn and real ``wrk``
(tables, rounds, a server that fails to start). Speed is measured in benchmarks/, never here."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.e2e.server import load_benchmark

pytestmark = pytest.mark.e2e

harness = load_benchmark("harness")
floors = load_benchmark("floors")


def test_tables_are_ratios_of_medians() -> None:
    Result = harness.Result
    results = [Result("ours", "1 row", r, rps, 1.0, 2.0, 0, cpu)
               for r, rps, cpu in ((1, 300.0, 2.0), (2, 100.0, 1.0), (3, 200.0, 4.0))]
    results += [Result("base", "1 row", r, 100.0, 1.0, 2.0, 0, 4.0) for r in (1, 2, 3)]
    table = harness.ratio_table(results, "base", ["ours", "base"])
    assert "| 1 row | 2.00x | 100 |" in table
    cpu = harness.ratio_table(results, "base", ["ours", "base"], "requests_per_cpu_s")
    assert "| 1 row | 2.00x | 250 |" in cpu  # median 500 per CPU second against 250
    assert "| ours | 1 row | 200.0 | 100.0-300.0 | 2.000 | 3 | 0 |" in harness.raw_table(results)


@pytest.mark.skipif(shutil.which("wrk") is None, reason="needs wrk (apt-get install wrk)")
@pytest.mark.parametrize("app", ["bare", "flask_app"])
def test_floor_under_wrk(tmp_path: Path, app: str) -> None:
    """The harness's mechanics: it starts the server, runs wrk in rounds and reads what wrk
    measured. How fast the floor is belongs to benchmarks/, not here: no rate is asserted."""
    body = tmp_path / "body.json"
    body.write_text('{"instances": [[1.0, 2.0]]}')
    server = harness.Server(app, floors.gunicorn_command(app), path="/any/{model}:predict")
    scenario = harness.Scenario("tiny", "m", body, connections=4)
    results = harness.run_rounds([server], [scenario], rounds=2, seconds=1, log_dir=tmp_path)
    assert [(r.server, r.scenario, r.round) for r in results] == [
        (app, "tiny", 1), (app, "tiny", 2)]
    for result in results:
        assert result.errors == 0
        assert result.requests_per_s > 0  # wrk's count was read, whatever it is
        assert result.latency_ms_p99 >= result.latency_ms_mean
        assert result.cpu_ms_per_request >= 0


def test_a_server_that_does_not_start_is_reported(tmp_path: Path) -> None:
    server = harness.Server("broken", [sys.executable, "-c", "raise SystemExit(3)"], path="/")
    with pytest.raises(RuntimeError, match="exited with 3"):
        with harness.started(server, timeout=10, log_dir=tmp_path):
            pass
