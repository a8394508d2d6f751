"""Where a batch job's input files are: a file, a folder (its files, sorted), or a glob;
local paths by default, and any other scheme through an opener registered for it.

The remote stores plug in here, an :class:`Opener` per scheme: ``gs://`` and ``s3://``
(:mod:`.remote`) are registered, another is added with :func:`register_opener`, and
:func:`expand` and :class:`Source` use it for every path of that scheme. Nothing else in the job knows where the bytes come from.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import IO, Protocol

from ..errors import ConfigError
from .remote import RemoteFiles

FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv",
           ".parquet": "parquet", ".pq": "parquet", ".tfrecord": "tf-record",
           ".tfrecords": "tf-record", ".tfrecord.gz": "tf-record-gzip",
           ".tfrecords.gz": "tf-record-gzip"}
"""A file's suffix -> the format read from it (``--format`` decides for any other)."""

FORMAT_NAMES = sorted({*FORMATS.values(), "file-list"})
"""Every format a job reads; a file list (one path a line) has no suffix of its own."""


class Opener(Protocol):
    """How a job lists and reads the files of one scheme."""

    def expand(self, pattern: str) -> list[str]:
        """The files *pattern* names (a file, a folder, a glob), sorted; none if none."""

    def open(self, path: str) -> IO[bytes]:
        """*path*'s bytes, from the start."""

    def size(self, path: str) -> int | None:
        """*path*'s size in bytes (progress), ``None`` when it is not known."""


class LocalFiles:
    """Files on this machine (and ``file://`` paths)."""

    def expand(self, pattern: str) -> list[str]:
        path = pattern[len("file://"):] if pattern.startswith("file://") else pattern
        if os.path.isdir(path):
            found = [os.path.join(path, name) for name in os.listdir(path)
                     if not name.startswith(".")]
        elif glob.has_magic(path):
            found = glob.glob(path)
        else:
            found = [path] if os.path.exists(path) else []
        return sorted(item for item in found if os.path.isfile(item))

    def open(self, path: str) -> IO[bytes]:
        return open(path, "rb")

    def size(self, path: str) -> int | None:
        return os.path.getsize(path)


_OPENERS: dict[str, Opener] = {"": LocalFiles(), "file": LocalFiles(), "gs": RemoteFiles(),
                               "s3": RemoteFiles()}
"""Scheme -> its opener; the empty scheme is a plain local path; ``gs`` and ``s3`` are read
through the storage backends that read remote model paths."""


def register_opener(scheme: str, opener: Opener) -> None:
    """Read paths ``<scheme>://...`` with *opener* (a remote store's)."""
    _OPENERS[scheme] = opener


def opener_for(path: str) -> Opener:
    """The opener of *path*'s scheme.

    :raises ConfigError: no opener reads that scheme.
    """
    scheme = path.split("://", 1)[0] if "://" in path else ""
    opener = _OPENERS.get(scheme)
    if opener is None:
        raise ConfigError(f"{path!r}: no reader for {scheme}:// paths is installed; copy the "
                          "files to a local folder first")
    return opener


@dataclass(frozen=True)
class Source:
    """One input file and the format it is read as."""

    path: str
    format: str
    opener: Opener

    def open(self) -> IO[bytes]:
        return self.opener.open(self.path)

    def size(self) -> int | None:
        return self.opener.size(self.path)

    @property
    def local(self) -> bool:
        """Whether *path* is a file on this machine, read by :class:`LocalFiles` itself (a
        subclass may read it otherwise), so that a worker may read a byte range of it."""
        return type(self.opener) is LocalFiles


def expand(patterns: list[str], format: str | None = None) -> list[Source]:
    """The input files of *patterns*, in order, each with its format (*format*, else its
    suffix's).

    :raises ConfigError: a pattern names no file, or a file's format is not known.
    """
    sources: list[Source] = []
    for pattern in patterns:
        opener = opener_for(pattern)
        paths = opener.expand(pattern)
        if not paths:
            raise ConfigError(f"{pattern!r}: no input file there")
        for path in paths:
            sources.append(Source(path, format or format_of(path), opener))
    return sources


def format_of(path: str) -> str:
    """The format of *path* by its suffix.

    :raises ConfigError: an unknown suffix.
    """
    name = path.rsplit("/", 1)[-1].lower()
    stem, suffix = os.path.splitext(name)
    if suffix == ".gz":
        suffix = os.path.splitext(stem)[1] + suffix
    if suffix not in FORMATS:
        raise ConfigError(f"{path!r}: unknown input format {suffix or '(no suffix)'!r}; "
                          f"name one with --format ({', '.join(FORMAT_NAMES)})")
    return FORMATS[suffix]
