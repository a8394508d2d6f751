"""The compiled descriptor set is the .proto sources', and its private pool lives beside
the clients' generated modules in one process."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import descriptor_pb2

from flask_predict.grpc import compile_protos, messages


def test_the_committed_descriptor_set_is_compiled_from_the_sources(tmp_path: Path) -> None:
    fresh = tmp_path / "descriptors.binpb"
    compile_protos.compile_descriptors(fresh)
    committed = descriptor_pb2.FileDescriptorSet.FromString(
        compile_protos.DESCRIPTORS.read_bytes())
    assert descriptor_pb2.FileDescriptorSet.FromString(fresh.read_bytes()) == committed, \
        "run `make protos` after editing flask_predict/grpc/protos"


def test_every_served_service_is_in_the_pool() -> None:
    for name in ("tensorflow.serving.PredictionService", "tensorflow.serving.ModelService",
                 "inference.GRPCInferenceService", "grps.protos.v1.GrpsService"):
        assert messages.POOL.FindServiceByName(name).methods


def test_messages_coexist_with_the_clients_generated_modules() -> None:
    """tritonclient registers ``inference.*`` in protobuf's default pool: ours are
    separate classes with the same wire format."""
    from tritonclient.grpc import service_pb2

    theirs = service_pb2.ModelInferRequest(model_name="m", id="7")
    theirs.inputs.add(name="x", datatype="FP32", shape=[1]).contents.fp32_contents.append(2.5)
    ours = messages.v2.ModelInferRequest.FromString(theirs.SerializeToString())
    assert type(ours) is not service_pb2.ModelInferRequest
    assert (ours.model_name, ours.id, list(ours.inputs[0].contents.fp32_contents)) == \
        ("m", "7", [2.5])
    assert service_pb2.ModelInferRequest.FromString(ours.SerializeToString()) == theirs


def test_every_error_code_has_a_grpc_status() -> None:
    from flask_predict.errors import Code
    from flask_predict.grpc.handlers import GRPC_STATUS

    assert set(GRPC_STATUS) == set(Code)
