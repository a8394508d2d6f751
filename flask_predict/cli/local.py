"""``flask-predict predict MODEL_DIR``: one prediction in this process, as ``gcloud
ai-platform local predict`` runs one, for every kind of model the plugins serve (Google's
custom prediction routines included, which gcloud cannot run locally).

Nothing here loads or predicts by itself: the model is loaded by the Python API
(:class:`flask_predict.api.Model`: the plugins, detection, options and warm-up a server uses)
and asked the AI Platform predict request, so the answer printed is the body a server's
``projects.predict`` route would send.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import IO, Any

from .. import codecs
from ..api import Model
from ..api import model_name as model_name
from ..errors import HTTP_STATUS, PredictError
from ..storage.uri import is_remote
from ..models.check import parse_options

FRAMEWORKS = {"tensorflow": "tensorflow", "scikit-learn": "sklearn", "xgboost": "xgboost"}
"""gcloud's ``--framework`` values -> the plugin that serves each."""


class InputError(Exception):
    """An instances or request file that cannot be sent; the message says why."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``predict``'s flags: gcloud's, and ``check``'s plugin flags."""
    parser.add_argument("model_dir", metavar="MODEL_DIR", nargs="?",
                        help="a version folder, or a model's base path (its default "
                             "version answers)")
    parser.add_argument("--model-dir", dest="model_dir_flag", metavar="MODEL_DIR",
                        help="the same, as gcloud spells it")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--json-instances", metavar="FILE",
                        help="newline-delimited JSON instances ('-': standard input)")
    source.add_argument("--json-request", metavar="FILE",
                        help="the JSON body of a predict request ('-': standard input)")
    source.add_argument("--text-instances", metavar="FILE",
                        help="newline-delimited text instances ('-': standard input)")
    parser.add_argument("--framework", choices=sorted(FRAMEWORKS),
                        help="the framework's plugin (default: detected from the files)")
    parser.add_argument("--predictor", metavar="NAME",
                        help="the plugin to use, by name (default: detected from the files)")
    parser.add_argument("--option", action="append", metavar="KEY=VALUE",
                        help="an option for the plugin's from_path, as in the model config "
                             "(e.g. class=predictor.MyPredictor); repeatable")
    parser.add_argument("--signature-name", metavar="NAME",
                        help="the signature to call (the request's signature_name)")


def run(args: argparse.Namespace, stdin: IO[bytes]) -> tuple[int, str]:
    """Predict as *args* say: the HTTP status and the answer's text.

    :raises ValueError: flags that do not go together.
    :raises InputError: an input file that cannot be read or sent.
    """
    model_dir = _model_dir(args)
    if args.framework and args.predictor:
        raise ValueError("give --framework or --predictor, not both")
    predictor = FRAMEWORKS[args.framework] if args.framework else args.predictor
    body = request_body(args, stdin)
    return predict(model_dir, body, predictor, parse_options(args.option))


def _model_dir(args: argparse.Namespace) -> str:
    if args.model_dir and args.model_dir_flag:
        raise ValueError("give MODEL_DIR or --model-dir, not both")
    model_dir: str | None = args.model_dir or args.model_dir_flag
    if not model_dir:
        raise ValueError("MODEL_DIR is required")
    if not is_remote(model_dir) and not os.path.isdir(model_dir):
        raise ValueError(f"{model_dir!r} is not a directory")
    return model_dir


def request_body(args: argparse.Namespace, stdin: IO[bytes]) -> bytes:
    """The predict request the input flag describes, as JSON text: a request file as it is;
    instances (one per line, no empty line) as ``{"instances": [...]}``, as gcloud reads
    them."""
    path = args.json_request or args.json_instances or args.text_instances
    data = _read(path, stdin)
    if args.json_request:
        body: Any = _json(data, "the request")
        if not isinstance(body, dict) or not isinstance(body.get("instances"), list):
            raise InputError('the request must be a JSON object with an "instances" list')
    else:
        body = {"instances": instances(data, as_json=bool(args.json_instances))}
    if args.signature_name:
        body["signature_name"] = args.signature_name
    return json.dumps(body).encode()


def _read(path: str, stdin: IO[bytes]) -> bytes:
    if path == "-":
        return stdin.read()
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise InputError(f"cannot read {path!r}: {exc.strerror}")


def instances(data: bytes, as_json: bool) -> list[Any]:
    """One instance per line: JSON values, or the lines' text."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("the instances file is not UTF-8 text")
    found: list[Any] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            raise InputError(f"line {number} is empty: the instances file may not have "
                             "empty lines")
        found.append(_json(line, f"line {number}") if as_json else line)
    if not found:
        raise InputError("the instances file holds no instance")
    return found


def _json(text: bytes | str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputError(f"{what} is not JSON: {exc}")


def predict(model_dir: str, body: bytes, predictor: str | None,
            options: dict[str, Any]) -> tuple[int, str]:
    """Load *model_dir* as a server would, ask it the AI Platform predict request *body* and
    return the status and the answer a server would send (``{"error": ...}`` when refused).

    :raises flask_predict.errors.ConfigError: the model cannot be loaded (as a server would
        refuse to start).
    """
    with Model.load(model_dir, predictor=predictor, options=options) as model:
        try:
            answer = model.predict_request(json.loads(body))
        except PredictError as exc:
            return HTTP_STATUS[exc.code], codecs.dumps({"error": exc.message}).decode()
    return 200, codecs.dumps(answer).decode()
