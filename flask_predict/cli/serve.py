"""``flask-predict serve``: gunicorn with the packaged settings, configured by
``tensorflow_model_server``'s flags where one exists.

The command replaces itself with ``python -m gunicorn -c python:flask_predict.gunicorn_config
flask_predict.wsgi:app`` (sync workers, models loaded after the fork in each worker, the
configuration checked once in the master before any worker starts). Flags become the
environment the app reads (``FLASK_PREDICT_*``) and gunicorn's own options.

Ports follow TF Serving: ``--rest_api_port`` is the HTTP port every protocol's REST routes
answer on (8501 as in TF Serving's container, unless ``$PORT`` or Vertex AI's
``$AIP_HTTP_PORT`` says otherwise); ``--port`` is the gRPC port (TF Serving's 8500), set only
when given.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Mapping, NoReturn, Sequence

from ..errors import ConfigError, closest
from ..settings.batching import read_batching_parameters_file
from ..storage.uri import is_remote

GUNICORN_CONFIG = "python:flask_predict.gunicorn_config"
APP = "flask_predict.wsgi:app"
DEFAULT_REST_PORT = 8501
"""TF Serving's REST port in its container (``tensorflow/serving`` publishes 8501)."""
DEFAULT_MODEL_NAME = "default"
"""TF Serving's ``--model_name`` default."""

MODEL_VARIABLES = ("FLASK_PREDICT_MODELS", "FLASK_PREDICT_MODEL_CONFIG_FILE", "MODEL_NAME",
                   "MODEL_BASE_PATH", "MODEL_CONFIG_FILE")
"""Where the environment names models; model flags replace all of them."""

UNSUPPORTED_TF_SERVING_FLAGS = frozenset({
    "allow_version_labels_for_unavailable_models",
    "enable_grpc_healthcheck_service", "enable_model_warmup", "enable_profiler",
    "enable_signature_method_name_check", "flush_filesystem_caches",
    "grpc_channel_arguments", "grpc_max_threads", "grpc_socket_path",
    "load_retry_interval_micros", "max_num_load_retries", "mixed_precision",
    "monitoring_config_file", "num_load_threads", "num_request_iterations_for_warmup",
    "num_tflite_interpreters_per_pool", "num_tflite_pools", "num_unload_threads",
    "per_process_gpu_memory_fraction", "platform_config_file", "prefer_tflite_model",
    "remove_unused_fields_from_bundle_metagraph", "rest_api_num_threads", "saved_model_tags",
    "skip_initialize_tpu", "ssl_config_file", "tensorflow_session_config_file",
    "thread_pool_factory_config_file", "use_tflite_model", "xla_cpu_compilation_enabled",
})
"""``tensorflow_model_server`` flags with no counterpart here: named as such when given."""


class UsageError(Exception):
    """A flag combination that cannot be served; the message says why."""


def rest_port_value(environ: Mapping[str, str]) -> str | int:
    """The REST port as the environment sets it: ``$PORT``, else ``$AIP_HTTP_PORT`` (Vertex
    AI), else TF Serving's 8501; the one rule for ``serve`` and the gunicorn settings."""
    return environ.get("PORT") or environ.get("AIP_HTTP_PORT") or DEFAULT_REST_PORT


def default_rest_port(environ: Mapping[str, str]) -> int:
    """``$PORT``, else ``$AIP_HTTP_PORT`` (Vertex AI), else TF Serving's 8501."""
    value = rest_port_value(environ)
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"$PORT/$AIP_HTTP_PORT must be a port number, got {value!r}")


def add_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """The flags of ``serve``; defaults shown by ``--help`` are the ones in force."""
    rest = rest_port_value(environ)
    ports = parser.add_argument_group("ports (as tensorflow_model_server)")
    ports.add_argument("--rest_api_port", type=int, metavar="PORT",
                       help=f"HTTP port of the REST routes of every protocol (default: $PORT, "
                            f"else $AIP_HTTP_PORT, else {DEFAULT_REST_PORT}; now {rest})")
    ports.add_argument("--port", "--grpc_port", dest="grpc_port", type=int, metavar="PORT",
                       help="gRPC port, TF Serving's --port (8500 there); sets "
                            "FLASK_PREDICT_GRPC_PORT (default: not set here)")
    ports.add_argument("--bind", action="append", metavar="HOST:PORT",
                       help="gunicorn's bind address instead of $HOST:--rest_api_port "
                            "(repeat for several; default: %s:<rest_api_port>)"
                            % environ.get("HOST", "0.0.0.0"))

    models = parser.add_argument_group("models (as tensorflow_model_server)")
    models.add_argument("--model_name", metavar="NAME",
                        help=f"name of the one model to serve (default: {DEFAULT_MODEL_NAME})")
    models.add_argument("--model_base_path", metavar="DIR",
                        help="folder (or gs:// or s3:// prefix) of that model's numbered "
                             "versions (default with "
                             "--model_name: $MODEL_BASE_PATH/NAME, $MODEL_BASE_PATH being "
                             "/models unless set, as in TF Serving's container)")
    models.add_argument("--model_config_file", metavar="FILE",
                        help="several models: TF Serving's model_config_list text file or "
                             "flask-predict's JSON (default: the environment's models)")
    models.add_argument("--model_config_file_poll_wait_seconds", type=float, metavar="S",
                        help="how often the config file is re-read (default: "
                             "PREDICT_POLL_SECONDS, 2)")
    models.add_argument("--file_system_poll_wait_seconds", type=float, metavar="S",
                        help="how often model folders are checked for new versions; 0 turns "
                             "it off (default: PREDICT_POLL_SECONDS, 2)")

    threads = parser.add_argument_group("threads (as tensorflow_model_server; 0 = automatic)")
    for name in ("tensorflow_session_parallelism", "tensorflow_intra_op_parallelism",
                 "tensorflow_inter_op_parallelism"):
        threads.add_argument(f"--{name}", type=int, default=0, metavar="N",
                             help="threads per worker for every native pool "
                                  "(PREDICT_THREADS; default: 0, cores / workers)")

    batching = parser.add_argument_group(
        "batching (as tensorflow_model_server), in the runner that holds the models a fork "
        "cannot share")
    batching.add_argument("--enable_batching", type=flag_value, nargs="?", const=True,
                          metavar="BOOL", help="batch the workers' requests to each model "
                          "(FLASK_PREDICT_BATCHING; default: false)")
    batching.add_argument("--batching_parameters_file", metavar="FILE",
                          help="TF Serving's text-format BatchingParameters "
                               "(FLASK_PREDICT_BATCHING_PARAMETERS_FILE; default: TF "
                               "Serving's defaults)")
    batching.add_argument("--enable_per_model_batching_parameters", type=flag_value,
                          nargs="?", const=True, metavar="BOOL",
                          help="each version folder's batching_params.pbtxt instead "
                               "(FLASK_PREDICT_PER_MODEL_BATCHING_PARAMETERS; default: false)")

    server = parser.add_argument_group("server (gunicorn)")
    server.add_argument("--workers", type=int, metavar="N",
                        default=environ.get("WEB_CONCURRENCY") or "2",  # argparse converts
                        help="sync worker processes, each with its own models "
                             "(default: $WEB_CONCURRENCY, else 2; now %(default)s)")
    server.add_argument("--timeout", type=int, metavar="S",
                        help="longest request in seconds before its worker is restarted "
                             "(default: $GUNICORN_TIMEOUT, else 60)")
    server.add_argument("--rest_api_timeout_in_ms", type=int, metavar="MS",
                        help="TF Serving's spelling of --timeout, rounded up to seconds")
    server.add_argument("--log_level", default=environ.get("LOG_LEVEL") or "INFO",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                        type=str.upper,
                        help="gunicorn's and flask_predict's log level (default: $LOG_LEVEL, "
                             "else INFO; now %(default)s)")


def flag_value(text: str) -> bool:
    """A boolean flag's value, as TF Serving's flags take it (``--enable_batching=false``)."""
    if text.lower() in ("true", "1", "t", "yes"):
        return True
    if text.lower() in ("false", "0", "f", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def unknown_flags_message(unknown: Sequence[str], command: str = "serve",
                          known: Sequence[str] = ()) -> str:
    """What to say about flags *command* does not know (with the closest of its *known*
    flags, named without dashes, where one resembles a misspelt flag)."""
    lines = []
    for arg in unknown:
        name = arg.split("=", 1)[0].lstrip("-")
        if not arg.startswith("-"):
            lines.append(f"unexpected argument {arg!r}")
        elif name in UNSUPPORTED_TF_SERVING_FLAGS:
            lines.append(f"--{name} is a tensorflow_model_server flag that flask-predict "
                         "does not support")
        else:
            close = closest(name, known)
            lines.append(f"unknown flag --{name}" + (f"; did you mean --{close}?" if close else ""))
    return "; ".join(lines) + f" (see flask-predict {command} --help)"


def server_command(args: argparse.Namespace,
                   environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The gunicorn command line and environment that serve what *args* ask for."""
    env = dict(environ)
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    rest_port = args.rest_api_port if args.rest_api_port is not None else (
        default_rest_port(environ))
    if args.bind and args.rest_api_port is not None:
        raise UsageError("give --bind or --rest_api_port, not both")
    if args.grpc_port is not None:
        if args.grpc_port == rest_port and not args.bind:
            raise UsageError("--rest_api_port cannot be the same as --port (gRPC)")
        env["FLASK_PREDICT_GRPC_PORT"] = str(args.grpc_port)
    binds = args.bind or [f"{environ.get('HOST', '0.0.0.0')}:{rest_port}"]

    models = _model_environment(args, environ)
    if models:
        for name in MODEL_VARIABLES:
            env.pop(name, None)
        env.update(models)
    poll = _same("poll seconds", {"--file_system_poll_wait_seconds":
                                  args.file_system_poll_wait_seconds,
                                  "--model_config_file_poll_wait_seconds":
                                  args.model_config_file_poll_wait_seconds})
    if poll is not None:
        env["FLASK_PREDICT_POLL_SECONDS"] = json.dumps(poll)
    threads = _same("threads", {f"--tensorflow_{name}_parallelism": getattr(
        args, f"tensorflow_{name}_parallelism") or None
        for name in ("session", "intra_op", "inter_op")})
    if threads is not None:
        env["FLASK_PREDICT_THREADS"] = str(threads)
    env["LOG_LEVEL"] = args.log_level
    env.update(_batching_environment(args))

    command = [sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONFIG]
    for bind in binds:
        command += ["--bind", bind]
    command += ["--workers", str(args.workers), "--log-level", args.log_level.lower()]
    timeout = args.timeout
    if args.rest_api_timeout_in_ms is not None:
        if timeout is not None:
            raise UsageError("give --timeout or --rest_api_timeout_in_ms, not both")
        timeout = math.ceil(args.rest_api_timeout_in_ms / 1000)
    if timeout is not None:
        command += ["--timeout", str(timeout)]
    return command + [APP], env


def _model_environment(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, str]:
    """``FLASK_PREDICT_*`` variables for the model flags, which replace every model the
    environment names; none when no model flag is given (the environment's are served)."""
    if args.model_config_file is None and args.model_base_path is None and (
            args.model_name is None):
        return {}
    if args.model_config_file is not None:
        if args.model_base_path is not None or args.model_name is not None:
            raise UsageError("give --model_config_file or --model_name/--model_base_path, "
                             "not both")
        return {"FLASK_PREDICT_MODEL_CONFIG_FILE": os.path.abspath(args.model_config_file)}
    name = args.model_name or DEFAULT_MODEL_NAME
    base = args.model_base_path or os.path.join(environ.get("MODEL_BASE_PATH") or "/models",
                                                name)
    if not is_remote(base):
        base = os.path.abspath(base)
    return {"FLASK_PREDICT_MODELS": json.dumps({name: {"base_path": base}})}


def _batching_environment(args: argparse.Namespace) -> dict[str, str]:
    """``FLASK_PREDICT_*`` for the batching flags; a parameters file is checked here, so a
    bad one stops the command before gunicorn starts."""
    env = {}
    if args.enable_batching is not None:
        env["FLASK_PREDICT_BATCHING"] = json.dumps(args.enable_batching)
    if args.enable_per_model_batching_parameters is not None:
        env["FLASK_PREDICT_PER_MODEL_BATCHING_PARAMETERS"] = json.dumps(
            args.enable_per_model_batching_parameters)
    if args.batching_parameters_file:
        try:
            read_batching_parameters_file(args.batching_parameters_file)
        except ConfigError as exc:
            raise UsageError(f"--batching_parameters_file: {exc.message}")
        env["FLASK_PREDICT_BATCHING_PARAMETERS_FILE"] = os.path.abspath(
            args.batching_parameters_file)
    return env


def _same(what: str, values: Mapping[str, float | None]) -> float | None:
    """The one value the given flags agree on; ``None`` when none is given."""
    given = {flag: value for flag, value in values.items() if value is not None}
    if len(set(given.values())) > 1:
        raise UsageError(f"flask-predict uses one number for the {what}; "
                         f"{', '.join(f'{k}={v}' for k, v in given.items())} differ")
    return next(iter(given.values()), None)


def exec_server(command: list[str], env: dict[str, str]) -> NoReturn:
    """Become the gunicorn master (signals then reach it directly)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command[0], command, env)
