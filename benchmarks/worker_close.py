"""The packaged sync worker (``flask_predict.process.sync_worker.SyncWorker``: a connection whose
request was read whole is closed at once) against gunicorn's own ``sync`` worker (it waits
for each client to close first), for flask-predict's AI Platform route and for the Flask
floor view, 2 workers each, issue 14's one-row and 100-row scenarios.

    .venv/bin/python benchmarks/worker_close.py [--rounds 3] [--seconds 5] [--no-readme]
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Sequence

import floors
import front
import harness  # the script's own folder is on sys.path (tests load it by name first)
from harness import Server

STOCK = "sync"


def stock(server: Server, name: str) -> Server:
    """*server* with gunicorn's own sync worker: ``-k sync`` last, so it wins over the
    settings file and over an earlier ``--worker-class``."""
    return dataclasses.replace(server, name=name,
                               command=[*server.command, "--worker-class", STOCK])


def main(argv: Sequence[str] | None = None) -> None:
    import run  # the answer check and scenarios

    args = front.options(__doc__.splitlines()[0], argv)
    with tempfile.TemporaryDirectory(prefix="flask-predict-close-") as tmp:
        work = Path(tmp)
        bodies, models = front.prepare(work)
        ours = front.direct(models, "/v1/projects/bench/models/{model}:predict",
                            ready_path="/v2/health/ready", ready_status=200,
                            check=run.check_rows)
        floor = Server("floor", floors.gunicorn_command("flask_app"), path="/")
        servers = [dataclasses.replace(ours, name="flask-predict"),
                   stock(ours, "flask-predict -k sync"), floor, stock(floor, "floor -k sync")]
        scenarios = run.scenarios(bodies, ["1 row, 1 conn", "1 row, 16 conns",
                                           "100 rows, 16 conns"])
        results = harness.run_rounds(servers, scenarios, args.rounds, args.seconds,
                                     log_dir=work)
    names = [server.name for server in servers]
    front.publish(args, "worker-close", results, [
        front.measured(args, "wrk, 2 workers; flask-predict's AI Platform route"),
        "Requests/s, the packaged worker against gunicorn's `sync` worker:\n\n"
        + harness.ratio_table(results, "flask-predict -k sync", names[:2]) + "\n\n"
        + harness.ratio_table(results, "floor -k sync", names[2:]),
        "Requests per CPU second of the server's processes:\n\n"
        + harness.ratio_table(results, "flask-predict -k sync", names[:2],
                              "requests_per_cpu_s") + "\n\n"
        + harness.ratio_table(results, "floor -k sync", names[2:], "requests_per_cpu_s")])


if __name__ == "__main__":
    main()
