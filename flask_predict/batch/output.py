"""A batch job's output file, never half-written under its final name: the lines go to a
hidden file beside it, renamed to the final name once the job is done; a job that fails or
is interrupted removes it (a killed one leaves it, and the next run writes it again).

An output in an object store (``gs://``, ``s3://``) is written to an unnamed temporary file
and uploaded when the job is done: the object appears whole, or not at all.
"""

from __future__ import annotations

import os
import tempfile
from typing import IO

from . import remote


class OutputFile:
    """``with OutputFile(path) as out: out.write(...)``: *path* appears, whole, only when
    the block ends without an exception."""

    def __init__(self, path: str) -> None:
        """:raises ValueError: *path* is in no store a job writes to.
        :raises ConfigError: *path* names a folder of a store."""
        scheme = path.split("://", 1)[0] if "://" in path else "file"
        if scheme not in ("file", "gs", "s3"):
            raise ValueError(f"{path!r}: the output must be a local file, gs:// or s3://")
        self.remote = scheme != "file"
        if self.remote:
            remote.output_object(path)  # a path that names no object is refused now
        self.path = path if self.remote else os.path.abspath(path.removeprefix("file://"))
        folder, name = os.path.split(self.path)
        self.partial = self.path if self.remote else os.path.join(folder, f".{name}.partial")
        """Where the lines are written until the job is done (a remote output: a temporary
        file of no name)."""
        self._file: IO[bytes] | None = None

    def __enter__(self) -> OutputFile:
        if self.remote:
            self._file = tempfile.TemporaryFile(prefix="flask-predict-output-")
            return self
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._file = open(self.partial, "wb")
        return self

    def write(self, data: bytes) -> None:
        assert self._file is not None
        self._file.write(data)

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        assert self._file is not None
        file, self._file = self._file, None
        if self.remote:
            with file:
                if kind is None:
                    file.seek(0)
                    remote.upload(self.path, file)
            return
        try:
            if kind is None:
                file.flush()
                os.fsync(file.fileno())
        finally:
            file.close()
            if kind is None:
                os.replace(self.partial, self.path)
            else:
                os.unlink(self.partial)
