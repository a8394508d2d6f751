"""Arrays of every numeric and bytes dtype, for the protobuf tensor tests of TF Serving and V2."""

from __future__ import annotations

import numpy as np

ARRAYS = [np.array([[1.5, -2.0]], np.float32), np.array([1e300, -0.0]), np.array([[7]], np.int32),
          np.array([-3, 100], np.int16), np.array([-128, 127], np.int8),
          np.array([0, 255], np.uint8), np.array([65535], np.uint16),
          np.array([2**63 - 1, -2**63], np.int64), np.array([2**32 - 1], np.uint32),
          np.array([2**64 - 1], np.uint64), np.array([True, False]),
          np.array([0.5, -65504], np.float16),
          np.array([[b"a", b"\x00\xff"]], dtype=object), np.zeros((0, 3), np.float32)]
