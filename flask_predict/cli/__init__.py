"""The ``flask-predict`` command: ``serve``, ``check DIR``, ``predict DIR``, ``batch DIR``,
``demo DIR``.

``serve`` starts gunicorn with the packaged settings (see :mod:`.serve`); ``check`` loads a
version folder the way a worker would and reports on it (see :mod:`.check`); ``predict``
runs one prediction in process (see :mod:`.local`); ``batch`` runs a batch prediction job
(see :mod:`.batch`); ``demo`` writes the demo models (see
:mod:`flask_predict.models.demo`). An app that embeds the extension gets ``check`` and ``demo``
under ``flask predict`` (see :mod:`.group`).
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Mapping, Sequence

from . import batch, local, serve
from ..models import check
from ..errors import ConfigError


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
        "check", allow_abbrev=False, help="load models as serve would and describe them",
        description="Load a model as `flask-predict serve` would, with its rules, and say "
                    "which plugin takes each version, whether it loads, its metadata, and "
                    "whether serve would start, without starting a server. PATH is a "
                    "model's base path (its numbered version folders beneath, as "
                    "--model_base_path) or a model config file (as --model_config_file).")
    checking.add_argument("path", metavar="PATH", nargs="?")
    checking.add_argument("--model_config_file", metavar="FILE",
                          help="a model config file, as serve's (instead of PATH)")
    checking.add_argument("--model_name", metavar="NAME",
                          help="the model's name (default: the folder's name)")
    checking.add_argument("--predictor", metavar="NAME",
                          help="the plugin to use (default: detected from the files)")
    checking.add_argument("--option", action="append", metavar="KEY=VALUE",
                          help="a setting of the model, as in the model config "
                               "(e.g. class=predictor.MyPredictor); repeatable")
    checking.add_argument("--json", action="store_true", help="print JSON")

    predicting = commands.add_parser(
        "predict", allow_abbrev=False, help="run one prediction in this process",
        description="Load a model folder as a server would and print the answer of one "
                    "AI Platform predict request, as gcloud ai-platform local predict does.")
    local.add_arguments(predicting)

    batching = commands.add_parser(
        "batch", allow_abbrev=False, help="run a batch prediction job",
        description="Load a model folder as a server would and predict every instance of "
                    "the input files (JSON lines, CSV, Parquet) into one JSON lines file, as "
                    "Vertex AI batch prediction does: one line per instance, its prediction "
                    "or its error.")
    batch.add_arguments(batching)

    demo = commands.add_parser(
        "demo", allow_abbrev=False, help="write the demo models",
        description="Write one demo model per installed framework and their models.json.")
    demo.add_argument("dir", metavar="DIR", nargs="?", default="demo/models",
                      help="output folder (default: %(default)s)")
    return parser


def flags_of(parser: argparse.ArgumentParser, command: str) -> list[str]:
    """The long flags *command* takes, without their dashes."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            sub = action.choices[command]
            return [flag[2:] for each in sub._actions for flag in each.option_strings
                    if flag.startswith("--")]
    return []


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line *argv* (default: ``sys.argv[1:]``); returns the exit status."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        said = serve.unknown_flags_message(unknown, args.command, flags_of(parser, args.command))
        parser.exit(2, f"flask-predict {args.command}: error: {said}\n")
    if args.command == "serve":
        try:
            command, env = serve.server_command(args, os.environ)
        except serve.UsageError as exc:
            parser.exit(2, f"flask-predict serve: error: {exc}\n")
        serve.exec_server(command, env)
    if args.command == "check":
        path = args.model_config_file or args.path
        try:
            options = check.parse_options(args.option)
            if (args.model_config_file is None) == (args.path is None):
                raise ValueError("give PATH or --model_config_file (one of them)")
        except ValueError as exc:
            parser.exit(2, f"flask-predict check: error: {exc}\n")
        report = check.check(path, args.predictor, options, args.model_name)
        print(check.as_json(report) if args.json else check.render(report))
        return 0 if report.ok else 1
    if args.command == "predict":
        return predict(parser, args)
    if args.command == "batch":
        return batch.main(parser, args)
    from ..models.demo import write_demo

    write_demo(Path(args.dir))
    return 0


def predict(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``predict``: the answer on standard output (0), or the error on standard error: 1
    when the model refuses or fails, 2 for flags or input files that cannot be used."""
    try:
        status, answer = local.run(args, sys.stdin.buffer)
    except (ValueError, local.InputError) as exc:
        parser.exit(2, f"flask-predict predict: error: {exc}\n")
    except ConfigError as exc:
        print(f"flask-predict predict: {exc.message}", file=sys.stderr)
        return 1
    if status != 200:
        print(answer, file=sys.stderr)
        return 1
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
