from setuptools import setup

setup(
    name="flask-predict-tensorflow",
    version="0.1.0",
    description="TensorFlow SavedModel predictor plugin for flask-predict (CPU and GPU)",
    packages=["flask_predict_tensorflow"],
    package_data={"flask_predict_tensorflow": ["py.typed"]},
    install_requires=["flask-predict", "tensorflow>=2.16", "protobuf>=5.26",
                      "tensorflow-serving-api>=2.16"],
    entry_points={
        "flask_predict.manifests": ["tensorflow = flask_predict_tensorflow.manifest:MANIFEST"],
        "flask_predict.predictors": [
        "tensorflow = flask_predict_tensorflow.predictor:TensorFlowPredictor"]},
)
