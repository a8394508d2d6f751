"""The OpenAPI document of flask-predict's routes, one part per protocol.

``build_document(settings)`` describes the routes an app with those settings serves;
``PREDICT_OPENAPI_ROUTE`` serves it (``/openapi.json`` in the standalone server), and
``python -m flask_predict.openapi docs/openapi.json`` writes the standalone server's.
A protocol's part lives in its own package (``protocols/<name>/openapi.py``, named by its
descriptor); schema pieces shared between protocols in :mod:`.schemas`.
"""

from __future__ import annotations

from .document import (UNDOCUMENTED_VERBS, app_operations, build_document, document_operations,
                       dumps, part, standalone_document)

__all__ = ["UNDOCUMENTED_VERBS", "app_operations", "build_document", "document_operations",
           "dumps", "part", "standalone_document"]
