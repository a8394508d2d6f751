"""Remote model paths: ``gs://bucket/prefix`` and ``s3://bucket/prefix``, told apart from
local ones and split into their parts."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

SCHEMES = ("gs", "s3")
"""The object stores a model path may name."""


@dataclass(frozen=True)
class RemoteUri:
    """One remote model path: the store (``gs`` or ``s3``), the bucket and the prefix under
    which the model's objects live (no leading or trailing ``/``; empty: the whole bucket)."""

    scheme: str
    bucket: str
    prefix: str

    def __str__(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.prefix}".rstrip("/")

    def key(self, name: str) -> str:
        """The object key of *name*, a path relative to the prefix."""
        return f"{self.prefix}/{name}" if self.prefix else name


def is_remote(path: str) -> bool:
    """Whether *path* names an object store rather than a local folder."""
    return "://" in path and not path.startswith("file://")


def parse_uri(path: str) -> RemoteUri:
    """Split a remote model path; ``ConfigError`` for another scheme or a malformed one."""
    scheme, _, rest = path.partition("://")
    if scheme not in SCHEMES:
        raise ConfigError(f"model path {path!r}: only gs://, s3:// and local paths are "
                          "served")
    bucket, _, prefix = rest.partition("/")
    parts = [part for part in prefix.split("/") if part]
    if not bucket or any(part in (".", "..") for part in parts):
        raise ConfigError(f"model path {path!r} is not {scheme}://BUCKET/PREFIX")
    return RemoteUri(scheme, bucket, "/".join(parts))
