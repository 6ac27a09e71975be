# Every target creates the virtual environment first if it is missing, so a fresh
# clone needs nothing but Python 3.11 and make.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
STUB_ARGS ?=
TARGET_ARGS ?=
SEED_ARGS ?=

.PHONY: venv test lint stub target seed report demo ui load-test

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	touch $(STAMP)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: lint
	$(PY) -m pytest

stub: venv
	$(PY) -m stub $(STUB_ARGS)

target: venv
	$(PY) -m reference_platform $(TARGET_ARGS)

# The reference target's documented default password (reference_platform/README.md); export
# LOAD_PASSWORD to seed a real deployment.
seed: export LOAD_PASSWORD ?= loadkit-admin
seed: venv
	$(PY) -m workloads.agenticos.seed $(SEED_ARGS)

report: venv
	@test -n "$(RUN)" || { echo "make report: give the run directory, e.g. make report RUN=runs/20261129T142300Z"; exit 2; }
	$(PY) -m reports build $(RUN)

demo: venv
	$(PY) -m stack.demo

ui: venv
	$(PY) -m stack.ui

# The generator, headless: the four phases (or LOAD_ARGS="--rate 20 --run-time 60"),
# exiting with the report's verdict. Password from LOAD_PASSWORD, never an argument.
LOAD_ARGS ?=
load-test: venv
	$(VENV)/bin/locust -f locustfile.py --headless --only-summary \
		$(if $(API_PID),--api-pid $(API_PID)) $(if $(DATABASE_URL),--database-url $(DATABASE_URL)) \
		$(LOAD_ARGS)
