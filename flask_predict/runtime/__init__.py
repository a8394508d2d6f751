"""The process's resources: its threads and GPUs (``resources``), its heap (``memory``)
and the deadline of the call it is running (``deadline``)."""
