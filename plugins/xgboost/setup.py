from setuptools import setup

setup(
    name="flask-predict-xgboost",
    version="0.1.0",
    description="XGBoost predictor plugin for flask-predict",
    packages=["flask_predict_xgboost"],
    package_data={"flask_predict_xgboost": ["py.typed"]},
    install_requires=["flask-predict", "xgboost>=1.7", "joblib"],
    entry_points={
        "flask_predict.manifests": ["xgboost = flask_predict_xgboost.manifest:MANIFEST"],
        "flask_predict.predictors": [
        "xgboost = flask_predict_xgboost.predictor:XGBoostPredictor"]},
)
