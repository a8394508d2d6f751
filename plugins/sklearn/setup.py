from setuptools import setup

setup(
    name="flask-predict-sklearn",
    version="0.1.0",
    description="scikit-learn predictor plugin for flask-predict",
    packages=["flask_predict_sklearn"],
    package_data={"flask_predict_sklearn": ["py.typed"]},
    install_requires=["flask-predict", "scikit-learn>=1.3", "joblib"],
    entry_points={
        "flask_predict.manifests": ["sklearn = flask_predict_sklearn.manifest:MANIFEST"],
        "flask_predict.predictors": [
        "sklearn = flask_predict_sklearn.predictor:SklearnPredictor"]},
)
