"""Compile the ``.proto`` files under ``protos/`` into ``protos/descriptors.binpb``.

Run ``python -m flask_predict.grpc.compile_protos`` (``make protos``) after editing a
``.proto`` file; it needs ``grpcio-tools`` (a development dependency only: the server reads
the compiled descriptor set with ``protobuf`` alone, see :mod:`.messages`).
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTOS = Path(__file__).resolve().parent / "protos"
DESCRIPTORS = PROTOS / "descriptors.binpb"


def sources() -> list[str]:
    """Every ``.proto`` file, relative to :data:`PROTOS` (their import paths)."""
    return sorted(str(path.relative_to(PROTOS)) for path in PROTOS.rglob("*.proto"))


def compile_descriptors(output: Path) -> None:
    """Write the FileDescriptorSet of every source, imports included, to *output*."""
    from importlib.resources import files

    from grpc_tools import protoc

    include = str(files("grpc_tools") / "_proto")  # google/protobuf/*.proto
    status = protoc.main(["protoc", f"-I{PROTOS}", f"-I{include}", "--include_imports",
                          f"--descriptor_set_out={output}", *sources()])
    if status != 0:
        raise RuntimeError(f"protoc failed with status {status}")


if __name__ == "__main__":
    compile_descriptors(DESCRIPTORS)
    sys.stdout.write(f"wrote {DESCRIPTORS}\n")
