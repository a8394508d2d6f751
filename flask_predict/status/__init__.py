"""The status page: models, versions and their states, live traffic, and a form to try a
model in any protocol.

``GET <PREDICT_STATUS_PATH>`` is server-rendered HTML; a little JavaScript
(``static/status.js``) polls ``status.json`` every two seconds for the request counts and
turns them into rates, and sends the form's request to the protocol routes. The page is
served at ``/`` by the standalone server and only where ``PREDICT_STATUS_PATH`` says when
embedded. With tokens configured it asks the browser for one (HTTP Basic: any user name,
the token as password), which the browser then sends with the form's requests too.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, render_template
from flask.typing import ResponseReturnValue

from ..core.state import PredictState
from ..models.runner_client import read_board
from ..models.served import ServedModel
from ..observability.traffic import Snapshot, Totals
from ..request.protocol_table import descriptors
from ..web.protocol_http import json_response, plain_error
from ..web import auth
from ..web.current import get_state

bp = Blueprint("predict_status", __name__, template_folder="templates",
               static_folder="static", static_url_path="/_static")


@bp.get("/")
def page() -> ResponseReturnValue:
    auth.require_token()
    state = get_state()
    served = [protocol for protocol in descriptors(state.settings.protocols)
              if protocol.try_request is not None]
    return render_template("flask_predict/status.html", server=state.settings.process.server_name,
                           models=describe(state),
                           protocols=[protocol.name for protocol in served],
                           try_requests={protocol.name: vars(protocol.try_request)
                                         for protocol in served},
                           prefix=state.settings.url_prefix, runners=read_board(),
                           metrics=state.metrics is not None, lazy=lazy_tier(state))


@bp.get("/status.json")
def status_json() -> ResponseReturnValue:
    auth.require_token()
    state = get_state()
    snapshot = state.metrics.snapshot() if state.metrics is not None else None
    return json_response({"server": state.settings.process.server_name,
                          "time": snapshot.time if snapshot else None,
                          "workers": snapshot.workers if snapshot else None,
                          "runners": read_board(),
                          "models": describe(state, snapshot), "lazy": lazy_tier(state)})


def describe(state: PredictState, snapshot: Snapshot | None = None) -> list[dict[str, Any]]:
    """Each model: versions with their states and load errors, the default version's
    inputs (for the form), and its request totals when *snapshot* is given."""
    return [_model(served, snapshot) for served in state.service.models()]


def lazy_tier(state: PredictState) -> dict[str, Any] | None:
    """The lazy tier in this worker: its root, cap, bytes held and each model of the root
    with its state (``None`` without one)."""
    tier = state.service.lazy_tier()
    if tier is None:
        return None
    root, max_bytes, held_bytes, entries = tier
    return {"root": root, "max_bytes": max_bytes, "held_bytes": held_bytes,
            "models": [{"name": e.name, "state": e.state, "reason": e.reason,
                        "bytes": e.bytes} for e in entries]}


def _model(served: ServedModel, snapshot: Snapshot | None) -> dict[str, Any]:
    described: dict[str, Any] = {
        "name": served.name,
        "versions": [{"version": v, "state": status.state, "error": status.error}
                     for v, status in sorted(served.statuses.items())],
        "default_version": None, "platform": None, "inputs": [],
    }
    if served.ready:
        loaded = served.default()
        described.update(default_version=loaded.version, platform=loaded.metadata.platform,
                         inputs=[{"name": spec.name, "datatype": spec.datatype,
                                  "shape": list(spec.shape) if spec.shape else None}
                                 for spec in loaded.metadata.signature.inputs])
    if snapshot is not None:
        totals = snapshot.models.get(served.name, Totals())
        described["totals"] = {"requests": totals.requests, "failed": totals.failed,
                               "seconds": totals.seconds}
    return described


@bp.errorhandler(Exception)
def _error(exc: Exception) -> ResponseReturnValue:
    return plain_error(exc, auth.BASIC_CHALLENGE)
