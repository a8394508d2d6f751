"""What the cache asks of an object store: list the objects under a prefix, download one
(and what a lazy root asks: the folders under it). :mod:`.gcs` and :mod:`.s3` implement it
with each platform's own client."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import IO, BinaryIO, Protocol

from ..errors import ConfigError
from .uri import RemoteUri


CONNECT_SECONDS = 10.0
"""How long a client waits for a store to accept a connection."""
READ_SECONDS = 30.0
"""How long a client waits for the next bytes of an answer (a listing's page, a download's
chunk): a store that accepts and never answers fails a try after this long."""
TRIES = 2
"""Tries of one S3 request (one retry; each Cloud Storage request is tried once, by
``retry=None``); then the sync fails and the next poll tries again, with backoff."""


class StorageError(ConfigError):
    """A store could not be listed or read. The message names the URI and the cause, never
    a credential; at start it stops the server as a model that does not load does."""


class NothingListed(StorageError):
    """A first sync listed no model under the prefix (a lazy root's folder that is not
    there answers "not found")."""


@dataclass(frozen=True)
class StoredObject:
    """One object under a model's prefix."""

    name: str
    """Its key relative to the prefix, ``/``-separated."""
    size: int
    tag: str
    """What changes whenever the object does: Cloud Storage's generation, S3's ETag."""
    md5: bytes | None
    """The MD5 digest of its content where the store gives one (checked after download)."""


class Store(Protocol):
    """One remote model path, reached through its platform's client."""

    uri: RemoteUri

    # folders() comes before list(), which would hide the builtin from its annotation
    def folders(self) -> list[str]:
        """The names of the "folders" directly under the prefix (the first part of each key
        that has more, as ``/`` delimits them), sorted; ``StorageError`` when the store
        cannot say."""

    def list(self) -> list[StoredObject]:
        """Every object under the prefix; ``StorageError`` when the store cannot say."""

    def download(self, item: StoredObject, into: BinaryIO) -> bool:
        """Write *item*'s content to *into*; ``StorageError`` when it cannot be read.
        ``True`` when the listing's :attr:`~StoredObject.md5` is the digest of what was
        written (S3 objects encrypted with KMS have an ETag that is not)."""

    def upload(self, name: str, source: IO[bytes]) -> None:
        """Write *source*'s bytes (from its position) as the object *name* under the prefix,
        replacing any; the object appears whole or not at all. ``StorageError`` when it
        cannot be written."""


def folder_names(prefixes: list[str], prefix: str) -> list[str]:
    """The folder names of a delimited listing's common *prefixes* under *prefix*
    (``root/m1/`` under ``root/``: ``m1``), sorted, the empty one left out."""
    return sorted({name for folder in prefixes if (name := folder[len(prefix):].strip("/"))})


def verify(uri: RemoteUri, item: StoredObject, path: str, digest_known: bool) -> None:
    """Check the downloaded file *path* against what the listing said of *item*: its size
    and, where the store gives one, its MD5 digest; ``StorageError`` naming the object."""
    digest = hashlib.md5(usedforsecurity=False)
    size = 0
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    where = f"{uri.scheme}://{uri.bucket}/{uri.key(item.name)}"
    if size != item.size:
        raise StorageError(f"{where}: read {size} bytes of {item.size}")
    if digest_known and item.md5 is not None and digest.digest() != item.md5:
        raise StorageError(f"{where}: the content does not match its MD5 checksum "
                           f"({item.md5.hex()}): the object is corrupt, or changed while "
                           "it was read")
