"""Vertex AI's ``AIP_STORAGE_URI``: the deployed model's artifacts.

Vertex AI copies a model's artifacts to Cloud Storage and names the copy in
``AIP_STORAGE_URI``. A ``gs://`` (or ``s3://``) URI is the model's base path as it is: like
every remote model path it is downloaded into the cache (:mod:`flask_predict.storage`), a
prefix holding the artifacts themselves being version 1. A local folder (a Cloud Storage
FUSE mount, a folder baked into the image) is served in place. A folder of numbered version folders is a model base path as
usual; a folder that holds the artifacts themselves (``model.joblib``, ``saved_model.pb``,
as Vertex AI's prebuilt containers expect) is served as version 1.
"""

from __future__ import annotations

import hashlib
import os
import tempfile

from ..errors import ConfigError
from ..storage.artifacts import version_folders
from ..storage.uri import is_remote

VARIABLE = "AIP_STORAGE_URI"


def storage_base_path(uri: str) -> str:
    """The model base path that serves the artifacts at *uri*: a remote URI as it is, a
    local folder of versions, or a version 1 made of a local folder of artifacts."""
    if is_remote(uri):
        return uri  # resolved with every model path: a mirror in the cache (.storage)
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    path = os.path.abspath(path)
    if not os.path.isdir(path):
        raise ConfigError(f"{VARIABLE}: {path!r} is not a directory")
    if version_folders(path):
        return path
    return _single_version_folder(path)


def _single_version_folder(artifacts: str) -> str:
    """A base path whose only version, ``1``, is a link to *artifacts*; the same for every
    process of the server, so each worker serves the same folder."""
    digest = hashlib.sha256(artifacts.encode()).hexdigest()[:16]
    base = os.path.join(tempfile.gettempdir(), f"flask-predict-aip-{os.getuid()}-{digest}")
    link = os.path.join(base, "1")
    os.makedirs(base, mode=0o700, exist_ok=True)
    if os.lstat(base).st_uid != os.getuid():
        raise ConfigError(f"{VARIABLE}: {base!r} belongs to another user")
    try:
        os.symlink(artifacts, link, target_is_directory=True)
    except FileExistsError:
        pass
    if not os.path.islink(link) or os.readlink(link) != artifacts:
        raise ConfigError(f"{VARIABLE}: {link!r} exists and is not a link to {artifacts!r}")
    return base
