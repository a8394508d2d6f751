"""``tally.Tally``: its messages are built here and added to the served descriptor pool, as a
third party's compiled ``.proto`` would be."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import descriptor_pb2

from flask_predict.grpc.messages import add_file, message_class
from flask_predict.core.state import PredictState


def _file() -> bytes:
    proto = descriptor_pb2.FileDescriptorProto(name="tally/tally.proto", package="tally",
                                               syntax="proto3")
    string = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
    request = proto.message_type.add(name="TallyRequest")
    request.field.add(name="model", number=1, type=string)
    request.field.add(name="instances_json", number=2, type=string)
    reply = proto.message_type.add(name="TallyReply")
    reply.field.add(name="predictions_json", number=1, type=string)
    service = proto.service.add(name="Tally")
    for rpc in ("Predict", "Drain"):
        service.method.add(name=rpc, input_type=".tally.TallyRequest",
                           output_type=".tally.TallyReply")
    return proto.SerializeToString()


add_file(_file())
Reply = message_class("tally.TallyReply")


class TallyServicer:
    def __init__(self, state: PredictState) -> None:
        self.state = state

    def Predict(self, request: Any) -> Any:
        service = self.state.service
        with service.use(request.model) as loaded:
            predictions = service.predict_instances(loaded, json.loads(request.instances_json),
                                                    {})
        return Reply(predictions_json=json.dumps(predictions))

    def Drain(self, request: Any) -> Any:
        return Reply()
