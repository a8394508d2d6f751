"""A batch job's input files, read in chunks: JSON lines as Vertex AI batch prediction takes
them (one instance per line), CSV (a header, then one instance per row) and Parquet (one
instance per row). Memory holds one chunk per file at a time, whatever the file's size.

A JSON line travels as its text (the worker parses it and echoes it as it was); a table's
row travels as its values. Blank lines are skipped and counted; a row that cannot be read
(a CSV row with the wrong number of fields) travels as :class:`Unreadable`, to be answered
with an error line in its place.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import IO, Any, Iterator

from ..errors import ConfigError
from .sources import Source

ARRAY, OBJECT = "array", "object"
"""How a table's row becomes an instance: a list of its values in the columns' order (as
Vertex AI turns CSV and BigQuery rows into instances by default), or an object naming them."""


@dataclass(frozen=True)
class Unreadable:
    """An input row that could not be read: its text and why."""

    text: str
    message: str


@dataclass
class Chunk:
    """Consecutive instances of one file: JSON lines' texts (``json_lines``) or rows."""

    json_lines: bool
    items: list[Any] = field(default_factory=list)
    blank: int = 0
    """Blank lines skipped while reading this chunk."""
    read_bytes: int = 0
    """The input bytes this chunk came from (for progress)."""


def chunks(source: Source, size: int, instance_type: str = ARRAY) -> Iterator[Chunk]:
    """*source*'s instances, *size* at a time.

    :raises ConfigError: the file cannot be read in its format (a Parquet file that is not
        one, or Parquet without pyarrow installed).
    """
    if source.format == "jsonl":
        return _json_lines(source, size)
    if source.format == "csv":
        return _csv_rows(source, size, instance_type)
    if source.format == "parquet":
        return _parquet_rows(source, size, instance_type)
    raise ConfigError(f"unknown input format {source.format!r}")


BLOCK_BYTES = 1 << 22
"""JSON lines are read this many bytes at a time and split in one call per block."""

_SPACE = ord(" ")
"""No byte above this one starts a blank line (``bytes.strip`` removes ``\\t\\n\\v\\f\\r``
and the space)."""


def _json_lines(source: Source, size: int) -> Iterator[Chunk]:
    chunk = Chunk(True)
    rest = b""
    with source.open() as file:
        while True:
            block = file.read(BLOCK_BYTES)
            if not block:
                break
            chunk.read_bytes += len(block)
            lines = block.split(b"\n")
            lines[0] = rest + lines[0]
            returns = b"\r" in block or b"\r" in lines[0]
            rest = lines.pop()  # the last line's start, until its newline is read
            texts, blank = _line_texts(lines, returns)
            chunk.blank += blank
            while texts:
                room = size - len(chunk.items)
                chunk.items.extend(texts[:room])
                texts = texts[room:]
                if len(chunk.items) >= size:
                    yield chunk
                    chunk = Chunk(True)
    if rest:  # a last line without its newline
        texts, blank = _line_texts([rest], b"\r" in rest)
        chunk.items.extend(texts)
        chunk.blank += blank
    if chunk.items or chunk.blank:
        yield chunk


def _line_texts(lines: list[bytes], returns: bool) -> tuple[list[bytes], int]:
    """The texts of *lines*, without their line endings (*returns*: some may end in
    ``\\r``), and how many blank ones were left out. Lines that all start with a visible
    character (what their least, by bytes, tells in one pass) are kept as they are; others
    are looked at one by one."""
    if lines and not returns and min(lines)[:1] > bytes([_SPACE]):
        return lines, 0
    texts = [line.rstrip(b"\r\n") for line in lines]
    kept = [text for text in texts if text.strip()]
    return kept, len(texts) - len(kept)


def _csv_rows(source: Source, size: int, instance_type: str) -> Iterator[Chunk]:
    chunk = Chunk(False)
    with source.open() as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(text)
        header = next(reader, None)
        if header is None:
            return
        read = 0  # the bytes read up to the chunk before
        for row in reader:
            if not any(cell.strip() for cell in row):
                chunk.blank += 1
                continue
            if len(row) != len(header):
                chunk.items.append(Unreadable(",".join(row), f"the row has {len(row)} fields, "
                                              f"the header {len(header)}"))
            else:
                values = [cell_value(cell) for cell in row]
                chunk.items.append(values if instance_type == ARRAY
                                   else dict(zip(header, values)))
            if len(chunk.items) >= size:
                chunk.read_bytes, read = position(raw) - read, position(raw)
                yield chunk
                chunk = Chunk(False)
        chunk.read_bytes = position(raw) - read
    if chunk.items or chunk.blank:
        yield chunk


def position(raw: IO[bytes]) -> int:
    """How far *raw* has been read (0 where that cannot be told)."""
    try:
        return raw.tell() if raw.seekable() else 0
    except OSError:
        return 0


def cell_value(cell: str) -> Any:
    """A CSV cell as a JSON value: a number where it reads as one, ``None`` when empty,
    else its text."""
    if not cell:
        return None
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        return cell


def _parquet_rows(source: Source, size: int, instance_type: str) -> Iterator[Chunk]:
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise ConfigError("reading Parquet needs pyarrow: pip install 'flask-predict[batch]'")
    with source.open() as raw:
        try:
            file = parquet.ParquetFile(raw)
        except Exception as exc:
            raise ConfigError(f"{source.path!r} is not a Parquet file: {exc}") from exc
        total = source.size() or 0
        rows_in_file = file.metadata.num_rows or 1
        for batch in file.iter_batches(batch_size=size):
            names = batch.schema.names
            columns = [column.to_pylist() for column in batch.columns]
            rows = [list(values) for values in zip(*columns)]
            items: list[Any] = rows if instance_type == ARRAY else [
                dict(zip(names, row)) for row in rows]
            yield Chunk(False, items, read_bytes=total * len(rows) // rows_in_file)
