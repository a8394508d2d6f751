"""The runner: one process per machine (or per GPU) that loads the versions whose framework
cannot be forked (TensorFlow, ONNX Runtime) for every sync worker (docs/runner.md).

:mod:`.wire` frames arrays over the Unix socket, :mod:`.describe` carries metadata, examples
and errors, :mod:`.host` is the process's side, :mod:`.client` the worker's (the proxy
predictor that stands where the framework's predictor stood).
"""
