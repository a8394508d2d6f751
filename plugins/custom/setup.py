from setuptools import setup

setup(
    name="flask-predict-custom",
    version="0.1.0",
    description="AI Platform custom prediction routines for flask-predict",
    packages=["flask_predict_custom"],
    package_data={"flask_predict_custom": ["py.typed"]},
    install_requires=["flask-predict"],
    entry_points={
        "flask_predict.manifests": ["custom = flask_predict_custom.manifest:MANIFEST"],
        "flask_predict.predictors": [
        "custom = flask_predict_custom:CustomPredictor"]},
)
