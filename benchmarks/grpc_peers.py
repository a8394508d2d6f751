"""The peers' V2 gRPC servers for ``grpc_v2.py``, and what a V2 ``ModelInfer`` answer holds.

Both peers get the request a ``tritonclient.grpc`` user sends: ``raw_input_contents`` with
one FP64 ``[n, 20]`` input, asking for the output ``predict``. Read from their installed
code (KServe 0.21 ``kserve/protocol``, MLServer 1.7.1 ``mlserver/grpc`` and ``raw.py``):

* KServe (``kserve_server.py --grpc_port``): one ``grpc.aio`` server in the main process
  (its ``--workers 2`` are REST's uvicorn workers), listening on ``[::]``. It takes raw
  contents (``InferInput._raw_data``, decoded with ``np.frombuffer``) and, because the
  inputs came raw, answers raw: ``raw_output_contents``. It does not look at requested
  outputs on gRPC (its REST path refuses ``predict``): it answers its one output,
  ``output-0`` INT64 ``[n]``, whatever was asked.
* MLServer (``parallel_workers: 2``): the gRPC server runs in the main process and hands
  each request to a worker process. It takes raw contents (unpacked with ``struct`` into a
  Python list) and, because the inputs came raw, answers raw (packed with ``struct``);
  mlserver-sklearn honours ``predict``: ``predict`` INT64 ``[n, 1]``.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np

import harness
import peers
from harness import Server

MODEL_INFER = "/inference.GRPCInferenceService/ModelInfer"
ITEM_SIZES = {"BOOL": 1, "INT8": 1, "UINT8": 1, "INT16": 2, "UINT16": 2, "FP16": 2,
              "BF16": 2, "INT32": 4, "UINT32": 4, "FP32": 4, "INT64": 8, "UINT64": 8,
              "FP64": 8}
"""V2 datatype -> bytes per value in raw contents."""


def servers(models_dir: Path) -> dict[str, tuple[Server, int]]:
    """KServe and MLServer, 2 workers each, serving *models_dir*: name -> (server, gRPC
    port)."""
    kserve_port, mlserver_port = harness.free_port(), harness.free_port()
    kserve = peers.kserve(models_dir, grpc_port=kserve_port)[1]
    # MLServer's /v2/health/ready is true before any model is registered
    mlserver = dataclasses.replace(peers.mlserver(models_dir, grpc_port=mlserver_port),
                                   ready_path="/v2/models/lr/ready")
    return {"kserve": (kserve, kserve_port), "mlserver": (mlserver, mlserver_port)}


def infer_request(model: str, rows: np.ndarray) -> Any:
    """``ModelInferRequest``: *rows* as raw FP64 contents of ``input-0``, asking for
    ``predict``, as ``tritonclient.grpc`` builds it."""
    from flask_predict.grpc.messages import v2

    message = v2.ModelInferRequest(model_name=model,
                                   raw_input_contents=[rows.astype("<f8").tobytes()])
    message.inputs.add(name="input-0", datatype="FP64", shape=list(rows.shape))
    message.outputs.add(name="predict")
    return message


def call(port: int, body: bytes) -> bytes:
    """One serialized ``ModelInfer`` call to ``127.0.0.1:port``, waiting until it listens."""
    import grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        answer: bytes = channel.unary_unary(MODEL_INFER)(body, timeout=60,
                                                         wait_for_ready=True)
        return answer


def check_answer(answer: bytes, count: int) -> str:
    """Raise unless the serialized ``ModelInferResponse`` holds one output of one value per
    row, in raw or typed contents; return what it held, in words."""
    from flask_predict.grpc.messages import v2
    from flask_predict.protocols.kserve_v2.grpc_tensors import V2_CONTENTS

    response = v2.ModelInferResponse.FromString(answer)
    output = response.outputs[0]
    shape = list(output.shape)
    if response.raw_output_contents:
        size = len(response.raw_output_contents[0]) // ITEM_SIZES[output.datatype]
        where = "raw_output_contents"
    else:
        field = V2_CONTENTS[output.datatype]
        size = len(getattr(output.contents, field))
        where = f"contents.{field}"
    if len(response.outputs) != 1 or shape[:1] != [count] or math.prod(shape) != count \
            or size != count:
        raise AssertionError(f"{count} rows: unexpected answer {response}"[:500])
    return f"`{output.name}` {output.datatype} {shape}, {where}"
