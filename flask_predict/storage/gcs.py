"""``gs://`` model paths through Google's own client (``google-cloud-storage``, the
``flask-predict[gcs]`` extra). Credentials come from Application Default Credentials (the
``GOOGLE_APPLICATION_CREDENTIALS`` file, gcloud's, or the metadata server on Google Cloud);
``STORAGE_EMULATOR_HOST`` points the client at an emulator, without credentials."""

from __future__ import annotations

import base64
from typing import IO, Any, BinaryIO

from .store import CONNECT_SECONDS, READ_SECONDS, StorageError, StoredObject, folder_names
from .uri import RemoteUri

TIMEOUT = (CONNECT_SECONDS, READ_SECONDS)
"""Seconds to connect and between two reads; each request is tried once (``retry=None``),
the cache tries again on the next poll."""


class GcsStore:
    """The objects under one ``gs://`` prefix."""

    def __init__(self, uri: RemoteUri) -> None:
        self.uri = uri
        try:
            from google.cloud import storage
        except ImportError:
            raise StorageError(f"{uri}: gs:// model paths need google-cloud-storage: "
                               "pip install 'flask-predict[gcs]'") from None
        try:
            self._bucket = storage.Client().bucket(uri.bucket)
        except Exception as exc:
            raise StorageError(f"{uri}: {_cause(exc)}") from None

    def folders(self) -> list[str]:
        prefix = self.uri.key("")
        try:
            listing = self._bucket.list_blobs(prefix=prefix, delimiter="/", retry=None,
                                              timeout=TIMEOUT)
            for _ in listing.pages:  # the prefixes are gathered page by page
                pass
            found = [str(folder) for folder in listing.prefixes]
        except Exception as exc:
            raise StorageError(f"{self.uri}: cannot list: {_cause(exc)}") from None
        return folder_names(found, prefix)

    def list(self) -> list[StoredObject]:
        prefix = self.uri.key("")
        found = []
        try:
            for blob in self._bucket.list_blobs(prefix=prefix, retry=None, timeout=TIMEOUT):
                name = str(blob.name)[len(prefix):]
                if name and not name.endswith("/"):
                    md5 = base64.b64decode(blob.md5_hash) if blob.md5_hash else None
                    found.append(StoredObject(name, int(blob.size or 0),
                                              str(blob.generation), md5))
        except Exception as exc:
            raise StorageError(f"{self.uri}: cannot list: {_cause(exc)}") from None
        return found

    def download(self, item: StoredObject, into: BinaryIO) -> bool:
        blob = self._bucket.blob(self.uri.key(item.name))
        try:
            blob.download_to_file(into, retry=None, timeout=TIMEOUT, checksum=None)
        except Exception as exc:
            raise StorageError(f"{self.uri}/{item.name}: cannot read: {_cause(exc)}") from None
        return True

    def upload(self, name: str, source: IO[bytes]) -> None:
        blob = self._bucket.blob(self.uri.key(name))
        try:  # one request, or a resumable upload past 8 MiB: whole or not at all
            blob.upload_from_file(source, timeout=TIMEOUT, checksum="crc32c")
        except Exception as exc:
            raise StorageError(f"{self.uri}/{name}: cannot write: {_cause(exc)}") from None


def _cause(exc: Exception) -> str:
    """A short cause that quotes no credential: the kind of failure and the HTTP status,
    never the library's message (which may carry a request's headers)."""
    code: Any = getattr(exc, "code", None)
    kind = type(exc).__name__
    if kind == "DefaultCredentialsError":
        return "no Google credentials found (Application Default Credentials)"
    if kind == "RefreshError":
        return "the Google credentials were refused (RefreshError)"
    if code == 404:
        return "bucket or object not found (HTTP 404)"
    if code in (401, 403):
        return f"access denied (HTTP {code}): check the credentials and the bucket's IAM"
    if isinstance(code, int):
        return f"HTTP {code} ({kind})"
    return f"the store is unreachable ({kind})"
