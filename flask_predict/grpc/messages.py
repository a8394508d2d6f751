"""The protobuf message classes of every gRPC service served, from one descriptor set.

The ``.proto`` files under ``protos/`` (TF Serving's and TensorFlow's, subset to what is
served; the Open Inference Protocol's; grps's) are compiled once, by
:mod:`.compile_protos`, into ``protos/descriptors.binpb``. This module loads that file into
a **private** descriptor pool and builds the classes from it:

* no generated ``_pb2`` code, so no protobuf gencode/runtime version pin and nothing for
  mypy to skip, and TensorFlow is never imported (``tensorflow-serving-api``'s modules
  import it for ``TensorProto``);
* a private pool, so an app that also imports ``tensorflow-serving-api`` or
  ``tritonclient.grpc`` (whose modules register the same message names in protobuf's
  default pool) loads both without a "duplicate symbol" clash.

Messages are typed ``Any``: their fields exist only at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

DESCRIPTORS = Path(__file__).resolve().parent / "protos" / "descriptors.binpb"


def _load_pool() -> Any:
    files = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTORS.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:  # protoc writes dependencies first
        pool.Add(file)
    return pool


POOL: Any = _load_pool()
"""The descriptor pool of every served message and service (for server reflection)."""


def add_file(serialized: bytes) -> None:
    """Add another library's file (health checking, reflection) so reflection can show it."""
    file = descriptor_pb2.FileDescriptorProto.FromString(serialized)
    try:
        POOL.FindFileByName(file.name)
    except KeyError:
        POOL.Add(file)


def message_class(full_name: str) -> Any:
    """The class of message *full_name*, e.g. ``tensorflow.serving.PredictRequest``."""
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full_name))


class Package:
    """The messages of one protobuf package as attributes: ``Package("inference").ModelInferRequest``."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, name: str) -> Any:
        cls = message_class(f"{self._name}.{name}")
        setattr(self, name, cls)
        return cls


tfs = Package("tensorflow.serving")
tf = Package("tensorflow")
v2 = Package("inference")
grps = Package("grps.protos.v1")
