"""A protocol made for the tests, described once as every protocol is: adding it to the
registry (and nothing else) must give it settings, routes, a gRPC service, verbs, metrics,
access lines, an OpenAPI part and a place on the status page.

``POST /tally/v1/<model>`` with ``{"instances": [...]}`` answers ``{"<label>": [...]}``
(``PREDICT_TALLY_LABEL``, default ``tally``); gRPC ``tally.Tally/Predict`` takes and answers
the same JSON as text, ``tally.Tally/Drain`` changes nothing but is an admin rpc.
"""

from __future__ import annotations

from flask_predict.request.descriptor import Protocol, TryRequest

from .settings import SECTION

PROTOCOL = Protocol(
    name="tally",
    title="Tally",
    blueprint=f"{__name__}.views:bp",
    verbs={"count": "predict", "unknown_path": "unknown"},
    rpc_verbs={"Predict": "predict", "Drain": "admin"},
    services={"tally.Tally": f"{__name__}.servicer:TallyServicer"},
    openapi=f"{__name__}.openapi:PART",
    settings=SECTION,
    try_request=TryRequest("/tally/v1/{model}", {"instances": "$rows"}),
)
