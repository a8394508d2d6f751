"""Configuration: the ``PREDICT_*`` settings, model config files (ours and TF Serving's)
and Vertex AI's storage variables, read and validated once."""
