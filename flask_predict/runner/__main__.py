"""``python -m flask_predict.runner --socket PATH [--state FILE] [--parent PID]``: one runner
process, started by the gunicorn master (:mod:`flask_predict.process.runners`) by exec, never
forked from a process that imported a framework. ``TERM`` drains: the calls running finish,
then it exits."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from types import FrameType

from ..runtime import resources as runtime
from ..observability.logs import use_json
from ..settings.app import read_settings
from ..settings.config import Settings
from ..settings.environ import server_config
from .batched import Batching
from .host import Runner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flask_predict.runner")
    parser.add_argument("--socket", required=True, help="the Unix socket to answer on")
    parser.add_argument("--state", help="the file listing what is loaded (reloaded at start)")
    parser.add_argument("--parent", type=int, help="stop when this process is gone")
    parser.add_argument("--label", default="", help="a name for the log lines")
    args = parser.parse_args(argv)
    # the server's log: gunicorn's text format, or PREDICT_LOG_FORMAT's JSON lines
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO").upper(), stream=sys.stderr,
                        format="[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s",
                        datefmt="%Y-%m-%d %H:%M:%S %z")
    label = f" {args.label}" if args.label else ""
    runner = Runner(args.socket, args.state, parent=args.parent, label=label)
    try:
        settings: Settings | None = read_settings(server_config())
    except Exception as exc:  # the master checked them; a worker reports what is wrong
        logging.getLogger(__name__).error("flask_predict runner%s: settings not read, no "
                                          "batching: %s", label, exc)
        settings = None
    if settings is not None:
        if os.environ.get("FLASK_PREDICT_THREADS"):  # set: TF Serving's *_parallelism flags
            runtime.limit_threads(settings.process.threads)
        if settings.observability.log_format == "json":
            use_json(logging.getLogger().handlers)
        runner.batching = batching(runner, settings)

    def stop(signum: int, frame: FrameType | None) -> None:
        runner.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the master's HUP is for its workers
    runner.listen()
    threading.Thread(target=runner.restore, name="runner-restore", daemon=True).start()
    runner.serve()
    logging.getLogger(__name__).info("flask_predict runner%s: stopped", label)
    return 0


def batching(runner: Runner, settings: Settings) -> Batching | None:
    """The batching the server's settings ask for (the master's environment, read as every
    worker reads it); ``None``: no model batches."""
    wanted = settings.batching
    if not (wanted.enabled or wanted.per_model or any(s.batching for s in settings.models)):
        return None
    return Batching(wanted, settings.models, lambda handle: runner.entries.get(handle))


if __name__ == "__main__":
    sys.exit(main())
