# syntax=docker/dockerfile:1
# flask-predict in a container, used as TF Serving's image is: models under /models, one
# model named by MODEL_NAME (or a config file by MODEL_CONFIG_FILE), REST on port 8501. The
# sync workers sit behind nginx in the same container (deploy/container/start runs both; see
# docs/deployment.md for why).
#
#   make dist                                                   # the wheels, into dist/
#   docker build -t flask-predict .                             # CPU
#   docker build -t flask-predict:gpu --build-arg VARIANT=gpu . # NVIDIA GPUs (TensorFlow)
#   docker run -p 8501:8501 -v "$PWD/iris:/models/iris:ro" -e MODEL_NAME=iris flask-predict
#   (gRPC as well: -e FLASK_PREDICT_GRPC_PORT=8500 -p 8500:8500)
#
# Flags after the image name go to `flask-predict serve` (docker run IMAGE --workers 4).
# BASE_IMAGE: any Debian bookworm image (Python and nginx come from its packages), such as
# one made with debootstrap where Docker Hub cannot be reached (tests/e2e/test_image.py).
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE}
ARG VARIANT=cpu
ARG DEBIAN_FRONTEND=noninteractive
# Python and nginx from Debian; the server in its own virtualenv.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv nginx \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin flask-predict \
    && python3 -m venv /opt/flask-predict
# The wheels `make dist` builds, mounted for this step only (never a layer of the image); the
# core with its gRPC, OpenTelemetry and object-store (gs://, s3:// model paths) extras, the
# scikit-learn plugin with skops and cloudpickle (MLflow folders in MLflow 3's default
# serialization and its other one); their dependencies from PyPI. GPU: TensorFlow's CUDA and cuDNN
# libraries come as pip packages (tensorflow[and-cuda]); the driver comes from the host
# through the NVIDIA container toolkit.
RUN --mount=type=bind,source=dist,target=/dist \
    core=$(ls /dist/flask_predict-*.whl) \
    && /opt/flask-predict/bin/pip install --no-cache-dir --progress-bar off \
        "$core[grpc,otel,gcs,s3]" \
        "$(ls /dist/flask_predict_sklearn-*.whl)[mlflow]" \
        /dist/flask_predict_xgboost-*.whl \
        /dist/flask_predict_custom-*.whl \
        /dist/flask_predict_tensorflow-*.whl \
    && if [ "$VARIANT" = gpu ]; then \
        /opt/flask-predict/bin/pip install --no-cache-dir --progress-bar off \
        "tensorflow[and-cuda]"; fi
COPY deploy/nginx/nginx.conf.template deploy/nginx/render.py /opt/flask-predict/nginx/
COPY deploy/container/start /usr/local/bin/flask-predict-start
ENV PATH=/opt/flask-predict/bin:$PATH \
    PROXY_NGINX_DIR=/opt/flask-predict/nginx \
    PROXY_RUN_DIR=/tmp/flask-predict \
    MODEL_BASE_PATH=/models \
    PORT=8501 \
    PYTHONUNBUFFERED=1 \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER 10001
EXPOSE 8501 8500
# Ready once every worker behind nginx has loaded its models; loads may take minutes.
HEALTHCHECK --interval=10s --timeout=5s --start-period=600s --retries=3 \
    CMD python -c "import os, urllib.request as u; u.urlopen('http://127.0.0.1:%s/v2/health/ready' % (os.environ.get('AIP_HTTP_PORT') or os.environ['PORT']), timeout=4)"
ENTRYPOINT ["flask-predict-start"]
CMD ["flask-predict", "serve"]
