"""gRPC beside REST: TF Serving's ``PredictionService`` and ``ModelService``, the Open
Inference Protocol's ``GRPCInferenceService`` and grps's ``GrpsService``, on one port per
server, over the same loaded models (docs/protocols/grpc.md).

* :mod:`.messages` loads the protobuf messages from the compiled ``protos/``;
* :mod:`.tensors` turns protobuf tensors into numpy arrays and back;
* :mod:`.tfserving`, :mod:`.kserve_v2`, :mod:`.grps` are the servicers: decode, call the
  service, encode, as the REST routes of the same protocol do;
* :mod:`.handlers` binds servicers to rpcs and maps errors to status codes;
* :mod:`.server` runs one server per worker process (started by
  :func:`flask_predict.process.worker_hooks.start_grpc`, never in gunicorn's master).
"""
