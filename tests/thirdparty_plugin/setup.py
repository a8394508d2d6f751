"""A third party's predictor plugin, shipped exactly as flask-predict's own plugins are."""

from setuptools import setup

setup(
    name="flask-predict-threshold",
    version="1.0.0",
    packages=["flask_predict_threshold"],
    install_requires=["flask-predict"],
    entry_points={
        "flask_predict.manifests": ["threshold = flask_predict_threshold.manifest:MANIFEST"],
        "flask_predict.predictors": ["threshold = flask_predict_threshold:ThresholdPredictor"],
    },
)
