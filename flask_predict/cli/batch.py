"""``flask-predict batch MODEL_DIR --input ... --output FILE``: a batch prediction job, as
Vertex AI batch prediction runs one, on this machine (see :mod:`flask_predict.batch`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .. import batch
from ..api import Model
from ..runtime import resources as runtime
from ..errors import ConfigError
from ..models.check import parse_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", metavar="MODEL_DIR",
                        help="a model's base path (its highest version) or a version folder")
    parser.add_argument("--input", action="append", required=True, metavar="PATH",
                        help="a file, a folder (its files) or a glob; repeatable")
    parser.add_argument("--output", required=True, metavar="FILE",
                        help="the JSON lines written, one per instance, in input order: "
                             "a local file, or gs://BUCKET/KEY, s3://BUCKET/KEY")
    parser.add_argument("--format", choices=batch.sources.FORMAT_NAMES,
                        help="the inputs' format (default: from each file's suffix)")
    parser.add_argument("--instance-type", choices=[batch.ARRAY, batch.OBJECT],
                        help="send each instance as an array or an object (default: a JSON "
                             "line as it is, a CSV or Parquet row as an array)")
    parser.add_argument("--key-field", metavar="NAME",
                        help="the field that names each record: left out of the instance, "
                             "and written as the output line's \"key\" in place of "
                             "\"instance\"")
    parser.add_argument("--included-fields", type=_names, default=(), metavar="A,B,...",
                        help="send only these fields (in this order, as an array)")
    parser.add_argument("--excluded-fields", type=_names, default=(), metavar="A,B,...",
                        help="send every field but these")
    parser.add_argument("--explain", action="store_true",
                        help="write each prediction's explanation beside it (Vertex AI's "
                             "generateExplanation)")
    parser.add_argument("--parameters", metavar="JSON",
                        help="the predict request's other keys, as a JSON object (e.g. "
                             '\'{"signature_name": "scores"}\')')
    parser.add_argument("--processes", type=int, default=1, metavar="N",
                        help="scoring processes sharing one model copy (default: 1)")
    parser.add_argument("--chunk-size", type=int, default=1000, metavar="N",
                        help="instances predicted together (default: 1000)")
    parser.add_argument("--predictor", metavar="NAME",
                        help="the plugin to use (default: detected from the files)")
    parser.add_argument("--option", action="append", metavar="KEY=VALUE",
                        help="an option for the plugin's from_path; repeatable")


def run(args: argparse.Namespace) -> batch.Summary:
    """Run the job *args* describe; the summary.

    :raises ValueError: flags that cannot be used.
    :raises ConfigError: the model does not load or an input cannot be read.
    """
    if args.processes < 1 or args.chunk_size < 1:
        raise ValueError("--processes and --chunk-size must be at least 1")
    parameters = _parameters(args.parameters)
    config = batch.InstanceConfig(args.instance_type, args.key_field, args.included_fields,
                                  args.excluded_fields)
    sources = batch.expand(args.input, args.format)
    batch.output.OutputFile(args.output)  # an output that cannot be is refused before loading
    runtime.passive_waits()  # the job parses and prints between two predictions
    forked = args.processes > 1
    if forked:  # no native pool may start before the fork (each worker sizes its own)
        runtime.limit_threads(1)
    with Model.load(args.model_dir, predictor=args.predictor,
                    options=parse_options(args.option), warm=not forked) as model:
        return batch.run(model, sources, args.output, processes=args.processes,
                         chunk_size=args.chunk_size, config=config, explain=args.explain,
                         parameters=parameters,
                         stream=sys.stderr)


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated list of field names."""
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"{text!r}: an empty field name")
    return names


def _parameters(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"--parameters is not JSON: {exc}")
    if not isinstance(value, dict) or "instances" in value:
        raise ValueError("--parameters must be a JSON object without 'instances'")
    return value


def main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``batch``: 0 with the summary on standard error, 1 when the model or an input
    cannot be used, 2 for flags."""
    try:
        summary = run(args)
    except ValueError as exc:
        parser.exit(2, f"flask-predict batch: error: {exc}\n")
    except ConfigError as exc:
        print(f"flask-predict batch: {exc.message}", file=sys.stderr)
        return 1
    print(f"flask-predict batch: {summary}", file=sys.stderr)
    return 0
