"""The OpenAPI document of flask-predict's routes, one part per protocol.

``build_document(settings)`` describes the routes an app with those settings serves;
``PREDICT_OPENAPI_ROUTE`` serves it (``/openapi.json`` in the standalone server), and
``python -m flask_predict.openapi docs/openapi.json`` writes the standalone server's.
A protocol's part lives in the module of the same name; schema pieces shared between
protocols in :mod:`.schemas`.
"""

from __future__ import annotations

from .document import (PARTS, UNDOCUMENTED_ENDPOINTS, app_operations, build_document,
                       document_operations, dumps, standalone_document)

__all__ = ["PARTS", "UNDOCUMENTED_ENDPOINTS", "app_operations", "build_document",
           "document_operations", "dumps", "standalone_document"]
