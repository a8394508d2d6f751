# The two commands of the README's quick start:
#   make serve   install the server and the demo's frameworks, write the demo models and serve
#                them with `flask-predict serve` on $(HOST):$(PORT), 127.0.0.1:8501 unless
#                asked otherwise (make serve HOST=0.0.0.0 PORT=9000)
#   make test    install the test and docs tools as well, run the whole test suite
# and `make test-quick`: the suite without the end-to-end and TensorFlow tests, while editing,
# and `make dist`: one wheel per distribution (flask-predict and each bundled plugin) in dist/.
#
# Packages install with uv (itself installed into the venv by pip): from a warm cache the
# serving set, TensorFlow included, installs in seconds where pip takes minutes. uv compiles
# their bytecode as pip does (it does not by default): every gunicorn worker, CLI run and engine
# process imports TensorFlow, pandas and scikit-learn, and where no .pyc can be written
# (PYTHONDONTWRITEBYTECODE, a read-only image) each one would compile them again.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
HOST ?= 127.0.0.1
PORT ?= 8501
# make test runs the suite in this many processes (pytest-xdist, one test file to a process):
# most of its time is spent waiting on real servers to start and answer, not on the CPU
TEST_PROCESSES ?= 2
PLUGINS := plugins/sklearn plugins/xgboost plugins/custom plugins/tensorflow plugins/lightgbm \
	plugins/catboost plugins/onnx plugins/mlflow
PROJECTS := pyproject.toml $(addsuffix /pyproject.toml,$(PLUGINS))
SERVER := -e ".[grpc]" $(addprefix -e ,$(PLUGINS))
TESTED := -e ".[grpc,otel,gcs,s3,batch,spark,ray,dask]" $(addprefix -e ,$(PLUGINS))
SERVING := $(VENV)/.serving
INSTALLED := $(VENV)/.installed

.PHONY: install install-serving system-deps serve test test-quick typecheck docs openapi demo dist bench \
	protos clean

# everything: the server, every bundled plugin, the test and docs tools
install: $(INSTALLED)

# the server and every bundled plugin, nothing for tests or docs
install-serving: $(SERVING)

$(SERVING): $(PROJECTS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check --progress-bar off "uv>=0.5"
	$(UV) pip install --compile-bytecode --python $(PY) $(SERVER)
	touch $@

# resolved together with the server, so that no test tool downgrades what the server needs
# under it (protobuf for the gRPC health service, say)
$(INSTALLED): $(SERVING) requirements-test.txt
	$(UV) pip install --compile-bytecode --python $(PY) $(TESTED) -r requirements-test.txt
	touch $@

demo: $(SERVING)
	$(VENV)/bin/flask-predict demo demo/models

serve: demo
	HOST=$(HOST) $(VENV)/bin/flask-predict serve --rest_api_port $(PORT) \
		--model_config_file demo/models/models.json

dist: $(SERVING)
	rm -rf dist build $(addsuffix /build,$(PLUGINS))
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir dist . $(PLUGINS)

# The Debian packages of .ci/apt-packages.txt (nginx, wrk, Chromium, podman...): tests that
# need one skip without it, saying which; CI installs them all and lets none skip.
system-deps:
	.ci/install-system-deps

test: install
	$(PY) -m compileall -q flask_predict plugins
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadfile --durations=20 $(PYTEST_ARGS)

# no real gunicorn server, no TensorFlow: the quick loop while editing (make test before a push)
test-quick: install
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadfile -m "not e2e and not tensorflow" \
		$(PYTEST_ARGS)

typecheck: install
	$(VENV)/bin/mypy

docs: install
	$(VENV)/bin/mkdocs build --strict

openapi: install
	$(PY) -m flask_predict.openapi docs/openapi.json

bench: install
	$(PY) benchmarks/run.py

# After editing flask_predict/grpc/protos/*.proto: recompile their descriptor set.
protos: install
	$(PY) -m flask_predict.grpc.compile_protos

clean:
	rm -rf $(VENV) demo/models dist build
