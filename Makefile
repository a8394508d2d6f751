# The two commands of the README's quick start:
#   make serve   install, build the demo models, serve them with gunicorn on $PORT (8080)
#   make test    install, run the whole test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8080
PLUGINS := plugins/sklearn plugins/xgboost plugins/custom plugins/tensorflow
INSTALLED := $(VENV)/.installed

.PHONY: install system-deps serve test typecheck demo bench protos clean

install: $(INSTALLED)

$(INSTALLED): setup.py $(addsuffix /setup.py,$(PLUGINS)) requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[server,grpc]" $(addprefix -e ,$(PLUGINS)) -r requirements-test.txt
	touch $@

demo: install
	$(PY) demo/make_models.py demo/models

serve: demo
	PORT=$(PORT) FLASK_PREDICT_MODEL_CONFIG_FILE=demo/models/models.json \
		$(VENV)/bin/gunicorn -c gunicorn.conf.py wsgi:app

system-deps:
	.ci/install-system-deps

test: install system-deps
	$(PY) -m pytest $(PYTEST_ARGS)

typecheck: install
	$(VENV)/bin/mypy

bench: install
	$(PY) benchmarks/run.py

# After editing flask_predict/grpc/protos/*.proto: recompile their descriptor set.
protos: install
	$(PY) -m flask_predict.grpc.compile_protos

clean:
	rm -rf $(VENV) demo/models
