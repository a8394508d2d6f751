"""Custom prediction routines for the grps tests, copied into a model's version folder.

``Mirror`` answers each instance with itself (str_data, bin_data and gmap come back as
they went), and fails on the instance ``"fail"``. ``Countdown`` streams: it yields one
message per step and may wait for a file between the first step and the rest, so a test
can hold a worker busy for as long as it wants.
"""

import json
import logging
import os
import time


class Mirror:
    @classmethod
    def from_path(cls, model_dir):
        return cls()

    def predict(self, instances, **kwargs):
        if instances and isinstance(instances[0], str) and instances[0] == "fail":
            raise RuntimeError("asked to fail")
        return instances


class Countdown:
    @classmethod
    def from_path(cls, model_dir):
        return cls()

    def predict(self, instances, **kwargs):
        """``str_data`` is JSON: ``count`` messages, ``binary`` ones as bytes, waiting for
        the file ``wait_for`` after the first, failing at step ``fail_at``, each step
        logged when ``log`` is true."""
        (order,) = instances
        order = json.loads(order)
        return self._steps(order)

    def _steps(self, order):
        for step in range(1, order["count"] + 1):
            if step == order.get("fail_at"):
                raise RuntimeError("asked to fail while streaming")
            if step == 2 and order.get("wait_for"):
                deadline = time.monotonic() + 30
                while not os.path.exists(order["wait_for"]) and time.monotonic() < deadline:
                    time.sleep(0.02)
            if order.get("log"):
                logging.getLogger("tests.countdown").info("chunk-%d", step)
            if order.get("binary"):
                yield b"\x00chunk-%d" % step
            else:
                yield "chunk-%d" % step
