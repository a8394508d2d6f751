"""A local JSON lines file cut into byte ranges at line boundaries, as Hadoop and Spark split
text files: a range holds the lines that *start* inside it, so a file's ranges hold each of
its lines once, in order, and each range is read by the process that scores it.

A line starts at byte 0 or just after a newline, so the lines of ``[start, end)`` run from
the first line start at or after *start* to the first at or after *end*: a line straddling
*end* belongs to its range whole, and the next range skips it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

RANGE_BYTES = 1 << 22
"""A file is cut into ranges of this many bytes, each one task of a pool's workers."""

SCAN_BYTES = 1 << 16
"""Bytes read at a time while looking for the newline that ends a range."""


@dataclass(frozen=True)
class Range:
    """The lines of the local file *path* that start in ``[start, end)``."""

    path: str
    start: int
    end: int


def ranges(path: str, size: int) -> list[Range]:
    """*path* (*size* bytes) cut into ranges of :data:`RANGE_BYTES`, in order."""
    return [Range(path, start, min(start + RANGE_BYTES, size))
            for start in range(0, size, RANGE_BYTES)]


def range_blocks(part: Range, buffer: memoryview) -> Iterator[memoryview]:
    """The bytes of *part*'s lines, a block at a time, each read into *buffer* (a block is
    good until the next is asked for).

    Reading into one buffer, as a fresh ``bytes`` per block is memory the kernel must map in
    again and again: a 400 MB file read 4 MiB at a time took 0.33 s so, 0.08 s into one
    buffer."""
    with open(part.path, "rb", buffering=0) as file:
        handle = file.fileno()
        position, stop = line_start(handle, part.start), line_start(handle, part.end)
        while position < stop:
            count = os.preadv(handle, [buffer[:stop - position]], position)
            if not count:  # the file shrank meanwhile
                return
            position += count
            yield buffer[:count]


def line_start(handle: int, offset: int) -> int:
    """Where the first line starting at *offset* or after starts in the open file
    *handle*: *offset* itself when it is 0 or follows a newline, else just past the next
    newline, else the file's end."""
    if offset == 0:
        return 0
    position = offset - 1
    while True:
        block = os.pread(handle, SCAN_BYTES, position)
        if not block:
            return position
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(block)
