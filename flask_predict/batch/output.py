"""A batch job's output file, never half-written under its final name: the lines go to a
hidden file beside it, renamed to the final name once the job is done; a job that fails or
is interrupted removes it (a killed one leaves it, and the next run writes it again).

An output in an object store (``gs://``, ``s3://``) is written to an unnamed temporary file
and uploaded when the job is done: the object appears whole, or not at all.

Pool workers that read their own byte ranges write their lines to part files in a hidden
folder beside it (a temporary folder for an output in a store; :meth:`OutputFile.part`); the
job appends each part, in input order, with the kernel's own copy
(:meth:`OutputFile.append`), and the folder goes with the job.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from typing import IO

from . import remote

_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP}
"""``copy_file_range`` errors that mean "copy it yourself" (another file system, an old
kernel, a file system that does not offer it)."""


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
        self.parts = "" if self.remote else os.path.join(folder, f".{name}.parts")
        """Where pool workers write the parts of the output they score (a remote output: a
        temporary folder, made on first use)."""
        self._file: IO[bytes] | None = None

    def __enter__(self) -> OutputFile:
        if self.remote:
            self._file = tempfile.TemporaryFile(prefix="flask-predict-output-", buffering=0)
            return self
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        shutil.rmtree(self.parts, ignore_errors=True)  # a killed run's
        self._file = open(self.partial, "wb", buffering=0)
        return self

    def write(self, data: bytes) -> None:
        assert self._file is not None
        view = memoryview(data)
        while view:
            view = view[self._file.write(view):]

    def part(self, index: int) -> str:
        """The path of part *index* (the folder is made on first use)."""
        if not self.parts:
            self.parts = tempfile.mkdtemp(prefix="flask-predict-parts-")
        os.makedirs(self.parts, exist_ok=True)
        return os.path.join(self.parts, f"{index:09d}")

    def append(self, part: str) -> None:
        """Append the file *part* to the output, then remove it."""
        assert self._file is not None
        with open(part, "rb", buffering=0) as source:
            left = os.fstat(source.fileno()).st_size
            try:
                while left > 0:
                    copied = os.copy_file_range(source.fileno(), self._file.fileno(), left)
                    if not copied:
                        break
                    left -= copied
            except OSError as exc:
                if exc.errno not in _NO_KERNEL_COPY:
                    raise
                shutil.copyfileobj(source, self._file)  # from where the kernel stopped
        os.unlink(part)

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        assert self._file is not None
        file, self._file = self._file, None
        try:
            if self.remote:
                if kind is None:
                    file.seek(0)
                    remote.upload(self.path, file)
                return
            if kind is None:
                os.fsync(file.fileno())
        finally:
            file.close()
            if self.parts:
                shutil.rmtree(self.parts, ignore_errors=True)
            if not self.remote:
                if kind is None:
                    os.replace(self.partial, self.path)
                else:
                    os.unlink(self.partial)
