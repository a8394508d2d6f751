# The two commands of the README's quick start:
#   make serve   install, build the demo models, serve them with `flask-predict serve` on $PORT (8080)
#   make test    install, run the whole test suite
# and `make dist`: one wheel per distribution (flask-predict and each bundled plugin) in dist/.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8080
PLUGINS := plugins/sklearn plugins/xgboost plugins/custom plugins/tensorflow
PROJECTS := pyproject.toml $(addsuffix /pyproject.toml,$(PLUGINS))
INSTALLED := $(VENV)/.installed

.PHONY: install system-deps serve test typecheck docs openapi demo dist bench protos clean

install: $(INSTALLED)

$(INSTALLED): $(PROJECTS) requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[grpc]" $(addprefix -e ,$(PLUGINS)) -r requirements-test.txt
	touch $@

demo: install
	$(VENV)/bin/flask-predict demo demo/models

serve: demo
	$(VENV)/bin/flask-predict serve --rest_api_port $(PORT) --model_config_file demo/models/models.json

dist: install
	rm -rf dist build $(addsuffix /build,$(PLUGINS))
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir dist . $(PLUGINS)

system-deps:
	.ci/install-system-deps

test: install system-deps
	$(PY) -m pytest $(PYTEST_ARGS)

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
