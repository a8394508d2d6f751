"""``python -m flask_predict.openapi [FILE]``: write the standalone server's OpenAPI
document (every protocol, no prefix, ``/openapi.json``) to FILE, or print it."""

from __future__ import annotations

import sys
from pathlib import Path

from .document import standalone_document


def main(argv: list[str]) -> None:
    text = standalone_document()
    if argv:
        Path(argv[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
