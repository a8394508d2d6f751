"""TF Serving's test models and the Keras models, saved once per session by the shared
fixtures."""

from tests.keras_models import keras_models  # noqa: F401  (a session fixture)
from tests.tf_models import tfserving_models  # noqa: F401  (a session fixture)
