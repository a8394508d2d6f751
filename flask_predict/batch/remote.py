"""A batch job's inputs in object stores (``gs://``, ``s3://``), listed and read through the
storage backends that read remote model paths: the same clients, credential chains and
endpoint settings (:mod:`flask_predict.storage`).

A path names an object, a folder (the objects directly under it) or a glob (``*``, ``?``,
``[...]`` within one path segment, as a local glob). Each file is downloaded, when the job
comes to it, into an unnamed temporary file (``$TMPDIR``), checked against the size and MD5
digest its listing gave, and read from there: memory stays one chunk whatever the object's
size, and the disk holds one input file at a time. An output in a store is written to a
temporary file and uploaded once the job is done (:func:`upload`).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import tempfile
from typing import IO, Callable

from ..errors import ConfigError
from ..storage import open_store
from ..storage.store import StoredObject, verify
from ..storage.uri import RemoteUri, parse_uri


class RemoteFiles:
    """The objects of the stores the server reads model paths from."""

    def __init__(self) -> None:
        self._listed: dict[str, tuple[RemoteUri, StoredObject]] = {}
        """Each path :meth:`expand` found -> the prefix it was listed under and its entry."""

    def expand(self, pattern: str) -> list[str]:
        """The objects *pattern* names, sorted (hidden names, ``.*``, left out).

        :raises StorageError: the store cannot be listed (no bucket, access denied).
        """
        uri = _parse(pattern)
        parts = uri.prefix.split("/") if uri.prefix else []
        magic = next((i for i, part in enumerate(parts) if glob.has_magic(part)), None)
        if magic is not None:
            wanted = parts[magic:]
            found = self._list(uri, parts[:magic], lambda name: _matches(name, wanted))
        else:
            found = self._list(uri, parts, lambda name: "/" not in name)
            if not found and parts:
                found = self._list(uri, parts[:-1], lambda name: name == parts[-1])
        return sorted(found)

    def _list(self, uri: RemoteUri, folder: list[str], keep: Callable[[str], bool]) -> list[str]:
        listed = RemoteUri(uri.scheme, uri.bucket, "/".join(folder))
        found = []
        for item in open_store(listed).list():
            if keep(item.name) and not item.name.rsplit("/", 1)[-1].startswith("."):
                path = f"{uri.scheme}://{uri.bucket}/{listed.key(item.name)}"
                self._listed[path] = (listed, item)
                found.append(path)
        return found

    def open(self, path: str) -> IO[bytes]:
        """*path*'s bytes: the object downloaded whole into a temporary file, checked, and
        that file opened (it vanishes once closed).

        :raises StorageError: the object cannot be read, or what arrived is not what the
            listing said (its size or MD5 digest).
        """
        listed, item = self._entry(path)
        handle, name = tempfile.mkstemp(prefix="flask-predict-input-")
        try:
            with os.fdopen(handle, "wb") as file:
                digest_known = open_store(listed).download(item, file)
            verify(listed, item, name, digest_known)
            return open(name, "rb")
        finally:
            os.unlink(name)

    def size(self, path: str) -> int | None:
        return self._entry(path)[1].size

    def _entry(self, path: str) -> tuple[RemoteUri, StoredObject]:
        if path not in self._listed and self.expand(path) != [path]:
            raise ConfigError(f"{path!r}: no such object")
        return self._listed[path]


def output_object(path: str) -> tuple[RemoteUri, str]:
    """The folder and the name of the object an output *path* names.

    :raises ConfigError: *path* names a folder, or is not ``SCHEME://BUCKET/KEY``.
    """
    try:
        uri = parse_uri(path)
    except ConfigError:
        raise ConfigError(f"output {path!r} is not {path.split('://')[0]}://BUCKET/PATH") \
            from None
    folder, _, name = uri.prefix.rpartition("/")
    if path.endswith("/") or not name:
        raise ConfigError(f"output {path!r} names a folder: name the object to write")
    return RemoteUri(uri.scheme, uri.bucket, folder), name


def upload(path: str, source: IO[bytes]) -> None:
    """Write *source*'s bytes as the object *path* (``gs://BUCKET/KEY``, ``s3://...``),
    replacing any: the object appears whole or not at all.

    :raises StorageError: the object cannot be written.
    """
    folder, name = output_object(path)
    open_store(folder).upload(name, source)


def _parse(pattern: str) -> RemoteUri:
    try:
        return parse_uri(pattern)
    except ConfigError:
        scheme = pattern.split("://", 1)[0]
        raise ConfigError(f"input {pattern!r} is not {scheme}://BUCKET/PATH") from None


def _matches(name: str, wanted: list[str]) -> bool:
    """Whether the object *name* (relative to the glob's folder) matches the glob's
    segments *wanted*, segment by segment (a ``*`` never crosses a ``/``)."""
    parts = name.split("/")
    return len(parts) == len(wanted) and all(
        fnmatch.fnmatchcase(part, pattern) for part, pattern in zip(parts, wanted))
