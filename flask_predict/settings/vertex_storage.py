"""Vertex AI's ``AIP_STORAGE_URI``: the deployed model's artifacts.

Vertex AI copies a model's artifacts to Cloud Storage and names the copy in
``AIP_STORAGE_URI``. A ``gs://`` (or ``s3://``) URI is the model's base path as it is: like
every remote model path it is downloaded into the cache (:mod:`flask_predict.storage`), a
prefix holding the artifacts themselves being version 1. A local folder (a Cloud Storage
FUSE mount, a folder baked into the image) is served in place: a folder of numbered version
folders is a model base path as usual, and one that holds the artifacts themselves
(``model.joblib``, ``saved_model.pb``, as Vertex AI's prebuilt containers expect) is served as
its own version 1 (:func:`flask_predict.models.artifacts.version_folders`).
"""

from __future__ import annotations

import os

from ..errors import ConfigError
from ..storage.uri import is_remote

VARIABLE = "AIP_STORAGE_URI"


def storage_base_path(uri: str) -> str:
    """The model base path that serves the artifacts at *uri*: a remote URI as it is, else
    the local folder (of versions, or of the artifacts themselves: version 1)."""
    if is_remote(uri):
        return uri  # resolved with every model path: a mirror in the cache (.storage)
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    path = os.path.abspath(path)
    if not os.path.isdir(path):
        raise ConfigError(f"{VARIABLE}: {path!r} is not a directory")
    return path
