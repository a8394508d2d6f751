"""The Flask side of every protocol: a request's scope around each view, who may call, and
what tracing and the payload log read of a REST request."""
