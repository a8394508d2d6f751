"""The serving core, Flask-free: the one door (``service``), a request's scope and record,
deadlines, named columns, and :func:`~.assembly.assemble`, which builds it all once for any
front end."""
