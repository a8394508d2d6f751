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
    """Write the FileDescriptorSet of every source, imports included, to *output*.

    protoc runs in its own process: grpcio-tools carries its own copy of protobuf's C++
    library, which must not meet another one (TensorFlow's) in one process.
    """
    import subprocess
    from importlib.util import find_spec

    spec = find_spec("grpc_tools")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("compiling the protos needs grpcio-tools")
    include = Path(list(spec.submodule_search_locations)[0]) / "_proto"  # google/protobuf
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTOS}", f"-I{include}",
                    "--include_imports", f"--descriptor_set_out={output}", *sources()],
                   check=True)


if __name__ == "__main__":
    compile_descriptors(DESCRIPTORS)
    sys.stdout.write(f"wrote {DESCRIPTORS}\n")
