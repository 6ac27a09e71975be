# Every target creates the virtual environment first if it is missing, so a fresh
# clone needs nothing but Python 3.11 and make.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
STUB_ARGS ?=
TARGET_ARGS ?=
SEED_ARGS ?=
# Which platform demo and seed speak to: agenticos (the reference target), agno, langgraph,
# opencode, a2a, ag-ui or openai (LiteLLM's proxy in front of the stub).
PLATFORM ?= agenticos
# agno's AgentOS lives in its own environment: it pins its own FastAPI and pydantic.
AGNO_VENV := .venv-agno
AGNO_STAMP := $(AGNO_VENV)/.installed
AGNO_ARGS ?=
# LangGraph's Agent Server lives in its own environment too: langgraph-api pins its own Starlette.
LANGGRAPH_VENV := .venv-langgraph
LANGGRAPH_STAMP := $(LANGGRAPH_VENV)/.installed
LANGGRAPH_ARGS ?=
AG_UI_ARGS ?=
# opencode is a compiled program from npm (opencode-ai, pinned in platforms/opencode/package.json
# and package-lock.json), with ripgrep from PyPI for its text search (it would download one).
OPENCODE_DIR := platforms/opencode
OPENCODE_STAMP := $(OPENCODE_DIR)/node_modules/.installed
OPENCODE_ARGS ?=
# The A2A server on the reference SDK (a2a-sdk) lives in its own environment: it pins its own
# protobuf and Starlette.
A2A_VENV := .venv-a2a
A2A_STAMP := $(A2A_VENV)/.installed
A2A_ARGS ?=
# LiteLLM's proxy lives in its own environment: it pins its own FastAPI, pydantic and OpenAI SDK.
LITELLM_VENV := .venv-litellm
LITELLM_STAMP := $(LITELLM_VENV)/.installed
LITELLM_ARGS ?=
# GuideLLM, for bench/guidellm_vs_kit.py only: torch and transformers, in an environment of its own.
GUIDELLM_VENV := .venv-guidellm
GUIDELLM_STAMP := $(GUIDELLM_VENV)/.installed

.PHONY: venv test test-fast lint stub target seed report demo ui load-test load-test-help agno-venv agno \
	langgraph-venv langgraph ag-ui-langgraph opencode-install opencode a2a-venv a2a \
	litellm-venv litellm guidellm-venv

venv: $(STAMP)

# The project itself is installed editable for its console script, `loadkit` (pyproject.toml).
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps --editable .
	touch $(STAMP)

agno-venv: $(AGNO_STAMP)

$(AGNO_STAMP): requirements-agno.txt
	test -x $(AGNO_VENV)/bin/python || $(PYTHON) -m venv $(AGNO_VENV)
	$(AGNO_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AGNO_VENV)/bin/python -m pip install --quiet -r requirements-agno.txt
	touch $(AGNO_STAMP)

langgraph-venv: $(LANGGRAPH_STAMP)

$(LANGGRAPH_STAMP): requirements-langgraph.txt
	test -x $(LANGGRAPH_VENV)/bin/python || $(PYTHON) -m venv $(LANGGRAPH_VENV)
	$(LANGGRAPH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LANGGRAPH_VENV)/bin/python -m pip install --quiet -r requirements-langgraph.txt
	touch $(LANGGRAPH_STAMP)

a2a-venv: $(A2A_STAMP)

$(A2A_STAMP): requirements-a2a.txt
	test -x $(A2A_VENV)/bin/python || $(PYTHON) -m venv $(A2A_VENV)
	$(A2A_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(A2A_VENV)/bin/python -m pip install --quiet -r requirements-a2a.txt
	touch $(A2A_STAMP)

litellm-venv: $(LITELLM_STAMP)

$(LITELLM_STAMP): requirements-litellm.txt
	test -x $(LITELLM_VENV)/bin/python || $(PYTHON) -m venv $(LITELLM_VENV)
	$(LITELLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LITELLM_VENV)/bin/python -m pip install --quiet -r requirements-litellm.txt
	touch $(LITELLM_STAMP)

guidellm-venv: $(GUIDELLM_STAMP)

$(GUIDELLM_STAMP): requirements-guidellm.txt
	test -x $(GUIDELLM_VENV)/bin/python || $(PYTHON) -m venv $(GUIDELLM_VENV)
	$(GUIDELLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(GUIDELLM_VENV)/bin/python -m pip install --quiet -r requirements-guidellm.txt
	touch $(GUIDELLM_STAMP)

opencode-install: $(OPENCODE_STAMP)

# `npm install` from the committed lock, not `npm ci`: npm 11 writes only this machine's
# optional binary into the lock (opencode-linux-x64...), and `npm ci` then refuses the lock as
# out of sync on every machine. Every version is exact, each tarball checked against the lock.
$(OPENCODE_STAMP): $(OPENCODE_DIR)/package.json $(OPENCODE_DIR)/package-lock.json \
		$(OPENCODE_DIR)/requirements.txt | $(STAMP)
	cd $(OPENCODE_DIR) && npm install --no-audit --no-fund --loglevel=error
	rm -rf $(OPENCODE_DIR)/tools
	$(PY) -m pip install --quiet --target $(OPENCODE_DIR)/tools -r $(OPENCODE_DIR)/requirements.txt
	touch $(OPENCODE_STAMP)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	cd examples/echo-platform && MYPYPATH=$(CURDIR) $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml echo_platform service.py
	$(VENV)/bin/lint-imports --no-cache

test: lint
	$(PY) -m pytest

# The tests that start no process or server (pyproject.toml's markers): a couple of minutes,
# for the loop between edits; make test stays the whole suite, as CI runs it.
test-fast: venv
	$(PY) -m pytest -m "not system and not slow"

stub: venv
	$(PY) -m stub $(STUB_ARGS)

# The run limit raised as make demo raises it: a load test measures the platform, not its
# per-user limit of 30 runs a minute, which would refuse the next run's preflight (set
# RATE_LIMIT_RUN_PER_MINUTE=30 to watch AgenticOS's default shed agent runs).
target: export RATE_LIMIT_RUN_PER_MINUTE ?= 100000
target: venv
	$(PY) -m platforms.reference $(TARGET_ARGS)

# The reference target's documented default password (platforms/reference/README.md); export
# LOAD_PASSWORD to seed a real deployment.
seed: export LOAD_PASSWORD ?= loadkit-admin
seed: venv
	$(VENV)/bin/loadkit seed --platform $(PLATFORM) $(SEED_ARGS)

# agno's AgentOS on the stub, on 127.0.0.1:7777; the key is OS_SECURITY_KEY (default: LOAD_PASSWORD).
agno: export OS_SECURITY_KEY ?= $(LOAD_PASSWORD)
agno: agno-venv
	$(AGNO_VENV)/bin/python -m platforms.agno $(AGNO_ARGS)

# LangGraph's Agent Server (in-memory runtime) on the stub, on 127.0.0.1:8123, 20 runs at once
# (LANGGRAPH_ARGS="--n-jobs-per-worker N"); the key is LOADKIT_API_KEY (default: LOAD_PASSWORD).
langgraph: export LOADKIT_API_KEY ?= $(LOAD_PASSWORD)
langgraph: langgraph-venv
	$(LANGGRAPH_VENV)/bin/python -m platforms.langgraph $(LANGGRAPH_ARGS)

# The same graph over AG-UI (ag-ui-langgraph, platforms/langgraph/ag_ui.py) on 127.0.0.1:8124, its
# agent at /; the key (in x-api-key) is LOADKIT_API_KEY (default: LOAD_PASSWORD). agno's AG-UI
# interface needs no target of its own: `make agno` serves it at /agui.
ag-ui-langgraph: export LOADKIT_API_KEY ?= $(LOAD_PASSWORD)
ag-ui-langgraph: langgraph-venv
	$(LANGGRAPH_VENV)/bin/python -m platforms.langgraph.ag_ui $(AG_UI_ARGS)

# The a2a-sdk server on the stub, on 127.0.0.1:9999, both A2A versions and both bindings
# (A2A_ARGS="--protocol 1.0" or "--protocol 0.3" for one); the bearer key is A2A_API_KEY
# (default: LOAD_PASSWORD; empty serves it open).
a2a: export A2A_API_KEY ?= $(LOAD_PASSWORD)
a2a: a2a-venv
	$(A2A_VENV)/bin/python -m platforms.a2a $(A2A_ARGS)

# LiteLLM's proxy in front of the stub, offline, on 127.0.0.1:4000 (the stub at LITELLM_KIT_STUB_URL,
# default 127.0.0.1:4020); the key clients use is LITELLM_KIT_CLIENT_KEY (default: LOAD_PASSWORD),
# its master key generated at every start.
litellm: export LITELLM_KIT_CLIENT_KEY ?= $(LOAD_PASSWORD)
litellm: litellm-venv
	$(LITELLM_VENV)/bin/python -m platforms.litellm $(LITELLM_ARGS)

# opencode serve on the stub, offline, on 127.0.0.1:4096; its password is
# OPENCODE_SERVER_PASSWORD (default: LOAD_PASSWORD), its state in opencode-data/.
opencode: export OPENCODE_SERVER_PASSWORD ?= $(LOAD_PASSWORD)
opencode: opencode-install venv
	$(PY) -m platforms.opencode $(OPENCODE_ARGS)

report: venv
	@test -n "$(RUN)" || { echo "make report: give the run directory, e.g. make report RUN=runs/20261129T142300Z"; exit 2; }
	$(VENV)/bin/loadkit report $(RUN)

# FAULTS=NAME runs the shipped scenario with one fault window, scenarios/NAME.yaml.
demo: venv
	$(VENV)/bin/loadkit demo --platform $(PLATFORM) $(if $(FAULTS),--faults $(FAULTS))

ui: venv
	$(VENV)/bin/loadkit ui

# The generator, headless (`loadkit run`): the four phases (or LOAD_ARGS="--rate 20 --run-time
# 60"), exiting with the report's verdict (make turns any non-zero status into its own 2; CI
# should call `loadkit run` itself). Passwords from the environment, never an argument:
# LOAD_PASSWORD, and DATABASE_URL for the Postgres probe (make hands both to Locust in its
# environment: a variable from the environment or make's command line is exported).
LOAD_ARGS ?=
load-test: venv
	$(VENV)/bin/loadkit run $(if $(API_PID),--api-pid $(API_PID)) $(LOAD_ARGS)

# Locust's options, this kit's and the sweeps' (locust --help cannot show the kit's).
load-test-help: venv
	$(VENV)/bin/loadkit run --help
