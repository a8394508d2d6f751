"""A batch job's output file, never half-written under its final name: the lines go to a
hidden file beside it, renamed to the final name once the job is done; a job that fails or
is interrupted removes it (a killed one leaves it, and the next run writes it again)."""

from __future__ import annotations

import os
from typing import IO


class OutputFile:
    """``with OutputFile(path) as out: out.write(...)``: *path* appears, whole, only when
    the block ends without an exception."""

    def __init__(self, path: str) -> None:
        if "://" in path and not path.startswith("file://"):
            raise ValueError(f"{path!r}: the output must be a local file")
        self.path = os.path.abspath(path.removeprefix("file://"))
        folder, name = os.path.split(self.path)
        self.partial = os.path.join(folder, f".{name}.partial")
        """Where the lines are written until the job is done."""
        self._file: IO[bytes] | None = None

    def __enter__(self) -> OutputFile:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._file = open(self.partial, "wb")
        return self

    def write(self, data: bytes) -> None:
        assert self._file is not None
        self._file.write(data)

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        assert self._file is not None
        file, self._file = self._file, None
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
