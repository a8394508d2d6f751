"""The serving core, Flask-free: the one door (``service``), a request's scope (``scope``), the
app state every front end answers from (``state``), and :func:`~.assembly.assemble`, which
builds it all once for any front end."""
