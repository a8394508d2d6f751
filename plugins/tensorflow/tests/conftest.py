"""TF Serving's test models, exported once per session by the shared fixture."""

from tests.tf_models import tfserving_models  # noqa: F401  (a session fixture)
