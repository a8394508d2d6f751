"""Protocol front ends: one package per wire protocol, all over the same models.

A protocol package owns everything of its protocol: wire code, REST views, gRPC servicer,
OpenAPI part, verbs and settings section. It describes itself once, as the
:class:`~flask_predict.request.descriptor.Protocol` its ``__init__`` names ``PROTOCOL``, and is
listed in the table of protocols (:mod:`flask_predict.request.protocol_table`).
"""
