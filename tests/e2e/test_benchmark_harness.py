"""The benchmark harness's mechanics against the real floors under gunicorn and real ``wrk``
(tables, rounds, a server that fails to start). Speed is measured in benchmarks/, never here."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
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
    assert "| 1 row | 200 | 2.00x |" in harness.versus_table(results, "ours", ["base"])
    assert "| 1 row | 500 | 2.00x |" in harness.versus_table(results, "ours", ["base"],
                                                             "requests_per_cpu_s")


@pytest.mark.usefixtures("wrk")
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


@pytest.mark.usefixtures("wrk")
def test_routes_of_one_server_share_its_process(tmp_path: Path) -> None:
    """Two routes of one started server, each sent its own body format."""
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    small.write_text('{"instances": [[1.0]]}')
    large.write_text('{"instances": [' + ",".join(["[1.0]"] * 500) + "]}")
    command = floors.gunicorn_command("flask_app")
    servers = [harness.Server("route a", command, path="/a/{model}", process="floor"),
               harness.Server("route b", command, path="/b/{model}", process="floor",
                              body_format="large")]
    scenario = harness.Scenario("s", "m", small, connections=2, bodies={"large": large})
    assert servers[1].body(scenario) == large and servers[0].body(scenario) == small
    results = harness.run_rounds(servers, [scenario], rounds=1, seconds=1, log_dir=tmp_path)
    assert sorted(r.server for r in results) == ["route a", "route b"]
    assert (tmp_path / "route a.log").exists() and not (tmp_path / "route b.log").exists()


models = load_benchmark("models")
peers = load_benchmark("peers")
run = load_benchmark("run")


def test_route_table_is_against_the_fastest_peer() -> None:
    Result = harness.Result
    scenario = "lr 1 row, 1 conn"
    results = [Result(name, scenario, 1, rps, 1.0, 2.0, 0, 1.0) for name, rps in (
        ("AI Platform", 300.0), ("TF Serving", 150.0), ("kserve V1", 200.0),
        ("kserve V2", 100.0), ("mlserver V2", 50.0), ("flask-floor", 600.0))]
    table = run.route_table(results, ["1 row, 1 conn"], "peer")
    assert "| AI Platform | lr | 1.50x (kserve V1) |" in table
    assert "| TF Serving | lr | 0.75x (kserve V1) |" in table
    assert "| V2 JSON | lr | n/a |" in table  # not measured
    assert "| AI Platform | lr | 0.50x |" in run.route_table(results, ["1 row, 1 conn"],
                                                             "flask-floor")
    assert "| kserve V1 | lr | 0.33x |" in run.peers_and_floors_table(results,
                                                                      ["1 row, 1 conn"])


def test_answer_rows_reads_every_protocol() -> None:
    assert run.answer_rows(b'{"predictions": [1, 0]}') == 2
    assert run.answer_rows(b'{"outputs": [{"name": "predict", "shape": [3]}]}') == 3
    assert run.answer_rows(
        b'{"status": {}, "gtensors": {"tensors": [{"name": "p", "shape": [4, 2]}]}}') == 4


grpc_peers = load_benchmark("grpc_peers")


def test_grpc_answers_are_read_raw_or_typed() -> None:
    """One value per row, in raw or typed contents, whatever the output's name and shape."""
    from flask_predict.grpc.messages import v2

    raw = v2.ModelInferResponse(raw_output_contents=[np.arange(3, dtype="<i8").tobytes()])
    raw.outputs.add(name="output-0", datatype="INT64", shape=[3])
    assert grpc_peers.check_answer(raw.SerializeToString(), 3) == (
        "`output-0` INT64 [3], raw_output_contents")
    typed = v2.ModelInferResponse()
    typed.outputs.add(name="predict", datatype="INT64", shape=[3, 1]
                      ).contents.int64_contents.extend([0, 1, 0])
    assert grpc_peers.check_answer(typed.SerializeToString(), 3) == (
        "`predict` INT64 [3, 1], contents.int64_contents")
    for answer in (raw, typed):
        with pytest.raises(AssertionError):
            grpc_peers.check_answer(answer.SerializeToString(), 4)


def test_grpc_request_is_raw_fp64_asking_for_predict() -> None:
    from flask_predict.grpc.messages import v2

    rows = models.rows(2)
    request = v2.ModelInferRequest.FromString(
        grpc_peers.infer_request("lr", rows).SerializeToString())
    assert [(i.name, i.datatype, list(i.shape)) for i in request.inputs] == [
        ("input-0", "FP64", [2, models.FEATURES])]
    assert np.array_equal(np.frombuffer(request.raw_input_contents[0], "<f8").reshape(2, -1),
                          rows)
    assert [o.name for o in request.outputs] == ["predict"]
