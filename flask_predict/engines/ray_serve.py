"""Ray Serve: the models served over their protocols' REST routes by a Ray Serve deployment
of several replicas, each a flask-predict app of its own (the routes, errors and bodies a
gunicorn worker answers).

.. code-block:: python

    from ray import serve
    from flask_predict.engines.ray_serve import deployment

    serve.run(deployment({"churn": {"base_path": "/models/churn"}}, replicas=2),
              route_prefix="/")

Each replica loads the models in its own process, as a gunicorn worker does; Ray Serve
spreads the requests over the replicas.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping


def deployment(models: Mapping[str, Any], replicas: int = 2,
               settings: Mapping[str, Any] | None = None,
               ray_actor_options: Mapping[str, Any] | None = None) -> Any:
    """A bound Ray Serve application serving *models* (``PREDICT_MODELS``' value) with
    *replicas* replicas; *settings* are more ``PREDICT_*`` keys (``PREDICT_PROTOCOLS``...).
    """
    from ray import serve

    config = {"PREDICT_POLL_SECONDS": 0, **(settings or {}), "PREDICT_MODELS": dict(models)}
    options = dict(ray_actor_options or {"num_cpus": 0.5})
    replica = serve.deployment(num_replicas=replicas, ray_actor_options=options,
                               name="flask_predict")(Replica)
    return replica.bind(config)


class Replica:
    """One replica: a flask-predict app, asked each request as a WSGI server would."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        from flask import Flask

        from ..extension import FlaskPredict

        self.app = Flask("flask_predict.ray_serve")
        self.app.config.update(config)
        FlaskPredict(self.app)

    async def __call__(self, request: Any) -> Any:
        """*request*, a Starlette request (what Ray Serve hands a deployment), answered by the
        app on a thread of the replica's (predictors block); the Starlette response."""
        from starlette.responses import Response

        body = await request.body()
        status, headers, data = await asyncio.to_thread(
            self.answer, request.method, request.url.path, request.url.query, body,
            list(request.headers.items()))
        return Response(data, status_code=status, headers=headers)

    def answer(self, method: str, path: str, query: str, body: bytes,
               headers: list[tuple[str, str]]) -> tuple[int, dict[str, str], bytes]:
        """One request through the app, as a WSGI server runs it: status, headers, body."""
        from werkzeug.test import EnvironBuilder, run_wsgi_app

        builder = EnvironBuilder(path=path, method=method, query_string=query, data=body,
                                 headers=headers)
        try:
            iterable, status, answered = run_wsgi_app(self.app, builder.get_environ())
            data = b"".join(iterable)
        finally:
            builder.close()
        kept = {key: value for key, value in answered.items()
                if key.lower() != "content-length"}
        return int(status.split()[0]), kept, data

    def close(self) -> None:
        from ..extension import close_app

        close_app(self.app)
