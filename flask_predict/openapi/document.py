"""Assemble the OpenAPI document of one app's routes from its settings, and list the
routes an app registers, to hold the two against each other."""

from __future__ import annotations

import json
import re
from importlib.metadata import PackageNotFoundError, version as package_version
from typing import TYPE_CHECKING

from ..request.protocol_table import descriptor, descriptors
from ..settings.app import read_settings
from ..settings.config import STANDALONE_DEFAULTS, Settings
from .schemas import Part, Schema, operation, response, shared_components

if TYPE_CHECKING:
    from flask import Flask

BLUEPRINT = "predict_openapi"

UNDOCUMENTED_VERBS = frozenset({"unknown", "other"})
"""Routes left out of the document, by their protocol's verb: each only answers its
protocol's error for a URL or method that is none of the protocol's routes (catch-alls such
as ``/v2/<path:rest>``, other methods on ``/v2``), or sends TF Serving's odd spellings of a
documented route to it (``/V1/models/...``). Every other route the extension registers is in
the document."""


def part(name: str) -> Part:
    """Protocol *name*'s share of the document."""
    found: Part = descriptor(name).load_openapi()
    return found

IMPLICIT_METHODS = frozenset({"HEAD", "OPTIONS"})
"""Methods Flask adds to every rule on its own; the document lists the others."""


def build_document(settings: Settings) -> Schema:
    """The OpenAPI 3.1 document of the routes an app with *settings* serves."""
    components: dict[str, dict[str, Schema]] = {}
    paths: dict[str, Schema] = {}
    tags = []
    builders = [shared_components, *(part(name).components for name in settings.protocols)]
    for build in builders:
        for kind, entries in build().items():
            components.setdefault(kind, {}).update(entries)
    for name in settings.protocols:
        found = part(name)
        tags.append({"name": found.tag, "description": found.description})
        paths.update(found.paths(settings))
    if settings.pages.openapi_route:
        paths[settings.pages.openapi_route] = {"get": operation(
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
    ``{model}``), less the routes of :data:`UNDOCUMENTED_VERBS`."""
    verbs = {f"predict_{protocol.name}": protocol for protocol in descriptors()}
    found: set[str] = set()
    for rule in app.url_map.iter_rules():
        blueprint, _, _ = rule.endpoint.partition(".")
        if not rule.endpoint.startswith("predict_"):
            continue
        protocol = verbs.get(blueprint)
        view = app.view_functions[rule.endpoint].__name__
        if protocol is not None and protocol.verb(view) in UNDOCUMENTED_VERBS:
            continue
        path = re.sub(r"<(?:[^>:]+:)?([^>]+)>", r"{\1}", rule.rule)
        found.update(f"{method} {path}" for method in (rule.methods or set()) -
                     IMPLICIT_METHODS)
    return found
