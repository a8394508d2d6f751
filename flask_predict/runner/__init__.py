"""The runner: one process per machine (or per GPU) that holds the models whose framework
cannot be shared by fork (TensorFlow, ONNX Runtime) for every sync worker, and batches the
workers' requests to them (docs/runner.md, docs/batching.md).

:mod:`.wire` frames arrays over the Unix socket, :mod:`.describe` carries metadata, examples
and errors, :mod:`.host` is the process's side; the worker's side is
:mod:`flask_predict.models.runner_client` (the proxy predictor that stands where the
framework's predictor stood). :mod:`.batching` is the scheduler that joins callers' rows.
"""
