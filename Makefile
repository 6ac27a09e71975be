# Every target creates the virtual environment first if it is missing, so a fresh
# clone needs nothing but Python 3.11 and make.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
STUB_ARGS ?=
TARGET_ARGS ?=
SEED_ARGS ?=
# Which platform demo and seed speak to: agenticos (the reference target) or agno.
PLATFORM ?= agenticos
# agno's AgentOS lives in its own environment: it pins its own FastAPI and pydantic.
AGNO_VENV := .venv-agno
AGNO_STAMP := $(AGNO_VENV)/.installed
AGNO_ARGS ?=

.PHONY: venv test lint stub target seed report demo ui load-test agno-venv agno

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	touch $(STAMP)

agno-venv: $(AGNO_STAMP)

$(AGNO_STAMP): requirements-agno.txt
	test -x $(AGNO_VENV)/bin/python || $(PYTHON) -m venv $(AGNO_VENV)
	$(AGNO_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AGNO_VENV)/bin/python -m pip install --quiet -r requirements-agno.txt
	touch $(AGNO_STAMP)

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
	$(PY) -m workloads.$(PLATFORM).seed $(SEED_ARGS)

# agno's AgentOS on the stub, on 127.0.0.1:7777; the key is OS_SECURITY_KEY (default: LOAD_PASSWORD).
agno: export OS_SECURITY_KEY ?= $(LOAD_PASSWORD)
agno: agno-venv
	$(AGNO_VENV)/bin/python -m agno_platform $(AGNO_ARGS)

report: venv
	@test -n "$(RUN)" || { echo "make report: give the run directory, e.g. make report RUN=runs/20261129T142300Z"; exit 2; }
	$(PY) -m reports build $(RUN)

demo: venv
	$(PY) -m stack.demo --platform $(PLATFORM)

ui: venv
	$(PY) -m stack.ui

# The generator, headless: the four phases (or LOAD_ARGS="--rate 20 --run-time 60"),
# exiting with the report's verdict. Password from LOAD_PASSWORD, never an argument.
LOAD_ARGS ?=
load-test: venv
	$(VENV)/bin/locust -f locustfile.py --headless --only-summary \
		$(if $(API_PID),--api-pid $(API_PID)) $(if $(DATABASE_URL),--database-url $(DATABASE_URL)) \
		$(LOAD_ARGS)
