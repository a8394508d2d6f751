"""Find the HTTP examples in the Markdown docs, and compare an answer with one.

The convention (``docs/contributing.md``): a fenced block tagged ``sh`` that holds one
``curl`` command is an example, and the fenced block after it, tagged ``json`` or ``text``,
is its expected output. JSON is compared as values, ``"..."`` matching anything; text exactly
(surrounding blank space aside). An integer must be the same integer. Any other number must
be written in the same form as the page shows (positional or exponent, ``e-08`` or ``e-8``,
the same token for NaN and Infinity) and have the same value to the digits the computation
guarantees on every machine, never to one CPU's last digits: another maths library (a BLAS
kernel for another CPU, another thread count) sums in another order and changes the last few
bits of a float (measured: the 16th and 17th digits of the demo's float64 probabilities).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
LOCAL_URL = re.compile(r"(?:https?://)?(?:localhost|127\.0\.0\.1)(?::\d+)?")
ANYTHING = "..."
FLOAT64_DIGITS = 12
"""Significant digits a float64 answer keeps on any machine: thousands of float64 ulps of
margin over the few that another summation order changes."""
FLOAT32_DIGITS = 6
"""Significant digits a float32 answer keeps on any machine (C's ``FLT_DIG``)."""
SHORTEST_FLOAT32 = 9
"""A float32 written shortest takes at most 9 significant digits; a number written with more
is a float64."""
EXPONENT = re.compile(r"[eE]([-+]?)(0?)\d+$")


@dataclass(frozen=True)
class Block:
    info: str
    text: str
    line: int


@dataclass(frozen=True)
class Example:
    where: str
    """``file:line`` of the command."""
    command: str
    output: str
    output_kind: str

    def argv(self, address: str) -> list[str]:
        """The command's words, its local URL pointed at *address* (``host:port``)."""
        return shlex.split(LOCAL_URL.sub(address, self.command))


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, in order."""
    found: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, info = opening.groups()
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence):
            body.append(lines[index][len(indent):] if lines[index].startswith(indent)
                        else lines[index])
            index += 1
        found.append(Block(info, "\n".join(body), index - len(body)))
        index += 1
    return found


def commands(script: str) -> list[str]:
    """The shell commands of a block: continuation lines and quoted newlines joined,
    comment lines dropped."""
    found: list[str] = []
    pending = ""
    for line in script.splitlines():
        if not pending and (not line.strip() or line.strip().startswith("#")):
            continue
        pending = f"{pending}\n{line}" if pending else line.strip()
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        try:
            shlex.split(pending)
        except ValueError:  # a quote still open: the command goes on
            continue
        found.append(pending)
        pending = ""
    return found + ([pending] if pending else [])


def examples(path: Path) -> list[Example]:
    """The examples of one Markdown file; ``ValueError`` for a curl block that breaks the
    convention."""
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    found = blocks(path.read_text(encoding="utf-8"))
    result: list[Example] = []
    for index, block in enumerate(found):
        if block.info != "sh":
            continue
        lines = commands(block.text)
        if not any(line.startswith("curl ") for line in lines):
            continue
        where = f"{name}:{block.line}"
        if len(lines) != 1:
            raise ValueError(f"{where}: an example block holds one curl command, got "
                             f"{len(lines)} commands")
        after = found[index + 1] if index + 1 < len(found) else None
        if after is None or after.info not in ("json", "text"):
            raise ValueError(f"{where}: a curl example needs a json or text block after it "
                             "with its expected output (tag the block `console` if it is "
                             "not meant to run against the demo)")
        result.append(Example(where, lines[0], after.text, after.info))
    return result


class Number(str):
    """A JSON number other than an integer (``0.975280523``, ``1e-05``, ``NaN``), kept as the
    text it was written with."""


def parse(text: str) -> Any:
    """JSON *text* with each non-integer number a :class:`Number` of its own text."""
    return json.loads(text, parse_float=Number, parse_constant=Number)


def matches(expected: Any, actual: Any) -> bool:
    """JSON values equal (numbers by their text, as :func:`parse` reads them), ``"..."``
    matching anything."""
    if type(expected) is str and expected == ANYTHING:
        return True
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and expected.keys() == actual.keys() and
                all(matches(expected[key], actual[key]) for key in expected))
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(expected) == len(actual) and
                all(matches(e, a) for e, a in zip(expected, actual)))
    if type(expected) is Number and type(actual) is Number:
        return same_number(expected, actual)
    return type(expected) is type(actual) and bool(expected == actual)


def form(number: Number) -> str:
    """How a number is written, apart from its digits: ``NaN`` and ``Infinity`` as
    themselves, ``positional``, or its exponent's sign and zero padding (``e-0``, ``e``)."""
    value = float(number)
    if not math.isfinite(value):
        return str(number)
    exponent = EXPONENT.search(number)
    if exponent is None:
        return "positional"
    return "e" + exponent.group(1).replace("+", "") + exponent.group(2)


def significant_digits(number: Number) -> int:
    mantissa = EXPONENT.sub("", number)
    return len(mantissa.replace("-", "").replace(".", "").strip("0")) or 1


def same_number(expected: Number, actual: Number) -> bool:
    """Written in the same form, equal to the digits the computation guarantees: those of a
    float32 when both are written as short as one, those of a float64 otherwise."""
    if form(expected) != form(actual):
        return False
    if not math.isfinite(float(expected)):
        return True
    short = max(significant_digits(expected), significant_digits(actual)) <= SHORTEST_FLOAT32
    digits = FLOAT32_DIGITS if short else FLOAT64_DIGITS
    return math.isclose(float(expected), float(actual), rel_tol=10.0 ** -digits)


def same_output(example: Example, output: str) -> bool:
    if example.output_kind == "json":
        return matches(parse(example.output), parse(output))
    return example.output.strip() == output.strip()
