"""Assemble the OpenAPI document of one app's routes from its settings, and list the
routes an app registers, to hold the two against each other."""

from __future__ import annotations

import json
import re
from importlib.metadata import PackageNotFoundError, version as package_version

from flask import Flask

from ..config import STANDALONE_DEFAULTS, Settings, read_settings
from . import aiplatform, grps, kserve_v2, tfserving
from .schemas import Part, Schema, operation, response, shared_components

PARTS: dict[str, Part] = {"aiplatform": aiplatform.PART, "tfserving": tfserving.PART,
                          "kserve_v2": kserve_v2.PART, "grps": grps.PART}
"""``PREDICT_PROTOCOLS`` name -> that protocol's share of the document."""

BLUEPRINT = "predict_openapi"

UNDOCUMENTED_ENDPOINTS = frozenset({
    "predict_aiplatform.unknown_path",
    "predict_tfserving.dispatch",
    "predict_kserve_v2.unknown_path",
    "predict_kserve_v2.unknown_root",
    "predict_kserve_v2.unknown_root_slash",
    "predict_grps.unknown_path",
    "predict_grps.unknown_root",
})
"""Routes left out of the document: each only answers its protocol's error for a URL or
method that is none of the protocol's routes (catch-alls such as ``/v2/<path:rest>``, other
methods on ``/v2``), or sends TF Serving's odd spellings of a documented route to it
(``/V1/models/...``). Every other route the extension registers is in the document."""

IMPLICIT_METHODS = frozenset({"HEAD", "OPTIONS"})
"""Methods Flask adds to every rule on its own; the document lists the others."""


def build_document(settings: Settings) -> Schema:
    """The OpenAPI 3.1 document of the routes an app with *settings* serves."""
    components: dict[str, dict[str, Schema]] = {}
    paths: dict[str, Schema] = {}
    tags = []
    builders = [shared_components, *(PARTS[name].components for name in settings.protocols)]
    for build in builders:
        for kind, entries in build().items():
            components.setdefault(kind, {}).update(entries)
    for name in settings.protocols:
        part = PARTS[name]
        tags.append({"name": part.tag, "description": part.description})
        paths.update(part.paths(settings))
    if settings.openapi_route:
        paths[settings.openapi_route] = {"get": operation(
            "openapi", "OpenAPI", "This document",
            {"200": response("The OpenAPI document.", {"type": "object"})})}
        tags.append({"name": "OpenAPI", "description": "The API document."})
    document: Schema = {
        "openapi": "3.1.0",
        "info": {"title": "flask-predict", "version": _version(),
                 "description": "Four inference protocols over the same models. JSON "
                                "bodies may use `NaN`, `Infinity` and `-Infinity`.",
                 "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}},
    }
    if settings.url_prefix:
        document["servers"] = [{"url": settings.url_prefix}]
    document.update({"tags": tags, "paths": paths, "components": components})
    return document


def dumps(document: Schema) -> str:
    """*document* as the JSON text the route serves and ``docs/openapi.json`` holds."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def standalone_document() -> str:
    """The standalone server's document, as ``docs/openapi.json`` holds it."""
    return dumps(build_document(read_settings(STANDALONE_DEFAULTS)))


def _version() -> str:
    try:
        return package_version("flask-predict")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def document_operations(document: Schema) -> set[str]:
    """``"METHOD /path"`` for every operation of *document*, server prefix included."""
    prefix = document.get("servers", [{"url": ""}])[0]["url"].rstrip("/")
    return {f"{method.upper()} {prefix}{path}" for path, item in document["paths"].items()
            for method in item}


def app_operations(app: Flask) -> set[str]:
    """``"METHOD /path"`` for every route flask-predict registered on *app* (its blueprints
    are all named ``predict_*``), written as the document writes paths (``<model>`` as
    ``{model}``), less :data:`UNDOCUMENTED_ENDPOINTS`."""
    found: set[str] = set()
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("predict_") or rule.endpoint in UNDOCUMENTED_ENDPOINTS:
            continue
        path = re.sub(r"<(?:[^>:]+:)?([^>]+)>", r"{\1}", rule.rule)
        found.update(f"{method} {path}" for method in (rule.methods or set()) -
                     IMPLICIT_METHODS)
    return found
