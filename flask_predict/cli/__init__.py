"""The ``flask-predict`` command: ``serve``, ``check DIR``, ``demo DIR``.

``serve`` starts gunicorn with the packaged settings (see :mod:`.serve`); ``check`` loads a
version folder the way a worker would and reports on it (see :mod:`.check`); ``demo`` writes
the demo models (see :mod:`flask_predict.demo`). An app that embeds the extension gets the
same commands under ``flask predict`` (see :mod:`.group`).
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Mapping, Sequence

from . import check, serve


def build_parser(environ: Mapping[str, str] = os.environ) -> argparse.ArgumentParser:
    """The parser; *environ* gives the defaults that come from the environment."""
    parser = argparse.ArgumentParser(
        prog="flask-predict", allow_abbrev=False,
        description="Serve machine-learning models over AI Platform, TF Serving, "
                    "Open Inference Protocol V2 and grps.")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {version('flask-predict')}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serving = commands.add_parser(
        "serve", allow_abbrev=False, help="serve models with gunicorn",
        description="Serve models with gunicorn (sync workers, models loaded in each worker "
                    "after the fork). Flags follow tensorflow_model_server's.")
    serve.add_arguments(serving, environ)

    checking = commands.add_parser(
        "check", allow_abbrev=False, help="load a model version folder and describe it",
        description="Say which plugin takes a version folder, whether it loads, and its "
                    "metadata, without starting a server. DIR may be a model's base path: "
                    "every numbered version under it is checked.")
    checking.add_argument("dir", metavar="DIR")
    checking.add_argument("--predictor", metavar="NAME",
                          help="the plugin to use (default: detected from the files)")
    checking.add_argument("--option", action="append", metavar="KEY=VALUE",
                          help="an option for the plugin's from_path, as in the model "
                               "config (e.g. class=predictor.MyPredictor); repeatable")
    checking.add_argument("--json", action="store_true", help="print JSON")

    demo = commands.add_parser(
        "demo", allow_abbrev=False, help="write the demo models",
        description="Write one demo model per installed framework and their models.json.")
    demo.add_argument("dir", metavar="DIR", nargs="?", default="demo/models",
                      help="output folder (default: %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line *argv* (default: ``sys.argv[1:]``); returns the exit status."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.exit(2, f"flask-predict {args.command}: error: "
                       f"{serve.unknown_flags_message(unknown, args.command)}\n")
    if args.command == "serve":
        try:
            command, env = serve.server_command(args, os.environ)
        except serve.UsageError as exc:
            parser.exit(2, f"flask-predict serve: error: {exc}\n")
        serve.exec_server(command, env)
    if args.command == "check":
        try:
            options = check.parse_options(args.option)
        except ValueError as exc:
            parser.exit(2, f"flask-predict check: error: {exc}\n")
        results = check.check_path(args.dir, args.predictor, options)
        print(check.as_json(results) if args.json else check.render(results))
        return 0 if all(result.loaded for result in results) else 1
    from ..demo import write_demo

    write_demo(Path(args.dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
