from setuptools import find_packages, setup

setup(
    name="flask-predict",
    version="0.1.0",
    description="Serve machine-learning models from Flask over AI Platform, TF Serving, "
                "Open Inference Protocol V2 and grps",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["flask_predict", "flask_predict.*"]),
    package_data={"flask_predict": ["py.typed", "grpc/protos/descriptors.binpb",
                                    "grpc/protos/*.proto", "grpc/protos/**/*.proto"]},
    install_requires=[
        "flask>=2.3",
        "numpy>=1.24",
        "simplejson>=3.19",
        "orjson>=3.9",
        "pysimdjson>=6",
        "threadpoolctl>=3.1",
    ],
    extras_require={
        "server": ["gunicorn>=22"],
        # gRPC beside REST (PREDICT_GRPC_PORT): the server, its messages, the standard
        # health service (Kubernetes gRPC probes) and server reflection.
        "grpc": ["grpcio>=1.56", "protobuf>=4.22", "grpcio-health-checking>=1.56",
                 "grpcio-reflection>=1.56"],
    },
)
