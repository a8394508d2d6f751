"""A batch job's output file, never half-written under its final name: the lines go to a
hidden file beside it, renamed to the final name once the job is done; a job that fails or
is interrupted removes it (a killed one leaves it, and the next run writes it again).

An output in an object store (``gs://``, ``s3://``) is written to an unnamed temporary file
and uploaded when the job is done: the object appears whole, or not at all.

Pool workers that read their own byte ranges write their lines to part files in a hidden
folder beside it (a temporary folder for an output in a store; :meth:`OutputFile.part`); the
job appends each part, in input order, with the kernel's own copy
(:meth:`OutputFile.append`), and the folder goes with the job.

A job with a core to spare writes its lines behind: in batches, by a thread of its own, while
the next chunks are scored (:meth:`OutputFile.write`). Every 32 MiB written, the kernel
starts writing them to disk, so the ``fsync`` before the rename waits for the last few only.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO

from . import remote

WRITEBACK_BYTES = 32 << 20
"""Every this many bytes written, the kernel is asked to start writing them to disk and to
drop them from its cache (:meth:`OutputFile._written`)."""

WRITE_BATCH_BYTES = 8 << 20
WRITE_BATCH_PIECES = 256
WRITE_BATCH_SECONDS = 0.5
"""The lines written behind are handed to the writing thread in batches of this many bytes,
or pieces (one ``writev`` each), or at the first write after the batch's first piece has
waited this long (a slow job's lines reach the file as they come)."""

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
        self._size = 0
        self._advised = 0
        self._batch: list[bytes] = []
        self._batched = 0
        self._batch_started = 0.0
        self._writer: ThreadPoolExecutor | None = None
        self._writing: Future[None] | None = None

    def __enter__(self) -> OutputFile:
        if self.remote:
            self._file = tempfile.TemporaryFile(prefix="flask-predict-output-", buffering=0)
            return self
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        shutil.rmtree(self.parts, ignore_errors=True)  # a killed run's
        self._file = open(self.partial, "wb", buffering=0)
        return self

    def write(self, data: bytes, behind: bool = False) -> None:
        """Append *data*; *behind*: in batches written by a thread of its own while the job
        goes on (for a job that has a core to spare; a write's error is then raised by a
        later write, or when the block ends)."""
        if behind:
            if not self._batch:
                self._batch_started = time.monotonic()
            self._batch.append(data)
            self._batched += len(data)
            if (self._batched >= WRITE_BATCH_BYTES or len(self._batch) >= WRITE_BATCH_PIECES
                    or time.monotonic() - self._batch_started >= WRITE_BATCH_SECONDS):
                self._hand_over()
            return
        self._drain()
        assert self._file is not None
        view = memoryview(data)
        while view:
            view = view[self._file.write(view):]
        self._written(len(data))

    def _hand_over(self) -> None:
        """The batch to the writing thread, once the one before it is written."""
        batch, self._batch, self._batched = self._batch, [], 0
        self._wait()
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="flask-predict-output")
        self._writing = self._writer.submit(self._write_all, batch)

    def _wait(self) -> None:
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.result()

    def _drain(self) -> None:
        """Everything handed to :meth:`write` in the file."""
        if self._batch:
            self._hand_over()
        self._wait()

    def _write_all(self, batch: list[bytes]) -> None:
        assert self._file is not None
        fd = self._file.fileno()
        total = sum(map(len, batch))
        done = os.writev(fd, batch)
        if done < total:  # a short write: the rest as one piece
            rest = memoryview(b"".join(batch))[done:]
            while rest:
                rest = rest[os.write(fd, rest):]
        self._written(total)

    def part(self, index: int) -> str:
        """The path of part *index* (the folder is made on first use)."""
        if not self.parts:
            self.parts = tempfile.mkdtemp(prefix="flask-predict-parts-")
        os.makedirs(self.parts, exist_ok=True)
        return os.path.join(self.parts, f"{index:09d}")

    def append(self, part: str) -> None:
        """Append the file *part* to the output, then remove it."""
        assert self._file is not None
        self._drain()
        with open(part, "rb", buffering=0) as source:
            size = left = os.fstat(source.fileno()).st_size
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
            self._written(size)
        os.unlink(part)

    def _written(self, count: int) -> None:
        """*count* more bytes are in the output: every :data:`WRITEBACK_BYTES`, the kernel
        starts writing the new ones to disk while the job goes on (``POSIX_FADV_DONTNEED``
        starts their writeback and drops those already written from the page cache), so the
        ``fsync`` at the end waits for the last few only and the output does not crowd the
        machine's cache."""
        assert self._file is not None
        self._size += count
        if self.remote or not hasattr(os, "posix_fadvise"):
            return  # a remote output's file is read back for its upload, never synced
        if self._size - self._advised >= WRITEBACK_BYTES:
            try:
                os.posix_fadvise(self._file.fileno(), self._advised,
                                 self._size - self._advised, os.POSIX_FADV_DONTNEED)
            except OSError:  # advice only: a file that takes none is written all the same
                pass
            self._advised = self._size

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        assert self._file is not None
        file, whole = self._file, False
        try:
            if kind is None:
                self._drain()  # a write's error, raised here, fails the job
                if self.remote:
                    file.seek(0)
                    remote.upload(self.path, file)
                else:
                    os.fsync(file.fileno())
                whole = True
        finally:
            if self._writer is not None:  # a failed job's last batch: its errors are moot
                self._writer.shutdown(cancel_futures=True)
                self._writer = None
            self._file = None
            file.close()
            if self.parts:
                shutil.rmtree(self.parts, ignore_errors=True)
            if not self.remote:
                if whole:
                    os.replace(self.partial, self.path)
                else:
                    os.unlink(self.partial)
