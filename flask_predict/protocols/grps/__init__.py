"""grps's HTTP interface (``/grps/v1``): ``GrpsMessage`` JSON and octet-stream bodies.

https://github.com/NetEase-Media/grps/blob/master/docs/2_Interface.md

:mod:`.wire` decodes and encodes messages; :mod:`.views` holds the blueprint. The
online/offline switch and the request metrics are shared by every worker of a server
(:mod:`flask_predict.shared_state`).
"""

from __future__ import annotations

from .views import bp

__all__ = ["bp"]
