# The two commands a newcomer needs: `make serve` and `make test`. Both install first.
VENV := .venv
BIN := $(VENV)/bin
SAM_VENV := .venv-sam
PORT ?= 3000
HOST ?= 127.0.0.1
SERVE_ARGS :=
ifdef API_KEY
SERVE_ARGS += --api-key $(API_KEY)
endif
ifdef SERVER_SECRET
SERVE_ARGS += --server-secret $(SERVER_SECRET)
endif

.PHONY: install install-serve install-sam build chromium serve test test-fast lint typecheck format openapi bench bench-built bench-pulse bench-load bench-sdk bench-first-start clean

# Two installs into one venv, each with its stamp. `make serve` installs what serving the whole
# product needs: the runtime, the local server and the statistics engines (.[local,stats]); the
# development tools (.[dev]: pytest, mypy, ruff, Playwright, the Statsig SDKs, ...) come on top
# of it with `make test` and the other targets.
SERVE_SET := -e '.[local,stats]'
DEV_SET := -e '.[dev]'
install-serve: $(VENV)/.installed-serve
install: $(VENV)/.installed

# $(call venv_install,REQUIREMENTS): uv (installed into the venv by pip, from PyPI) resolves,
# downloads and unpacks in parallel: the serving set in seconds where pip takes half a minute
# (bench/README.md, first start). uv reads no pip configuration, so where it cannot install (an
# index that only pip.conf names), pip does. Bytecode is compiled at install, as pip does: the
# sandboxes import boto3, pydantic and Powertools at every cold start, and where
# PYTHONDONTWRITEBYTECODE is set nothing would ever write it.
# $(call venv_install_into,PYTHON,REQUIREMENTS) does the same for the venv of that interpreter.
venv_install = $(call venv_install_into,$(BIN)/python,$(1))
venv_install_into = { $(1) -m uv --version >/dev/null 2>&1 || $(1) -m pip install --quiet uv; } \
	&& $(1) -m uv pip install --quiet --compile-bytecode --python $(1) $(2) \
	|| { echo "uv could not install $(2); installing with pip" >&2; $(1) -m pip install --quiet $(2); }

$(VENV)/.installed-serve: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call venv_install,$(SERVE_SET))
	touch $@

$(VENV)/.installed: $(VENV)/.installed-serve
	$(call venv_install,$(DEV_SET))
	touch $@

# aws-sam-cli pins versions that conflict with ours, so it lives in its own venv.
install-sam: $(SAM_VENV)/.installed

$(SAM_VENV)/.installed:
	test -x $(SAM_VENV)/bin/python || $(PYTHON) -m venv $(SAM_VENV)
	$(call venv_install_into,$(SAM_VENV)/bin/python,'aws-sam-cli>=1.120')
	touch $@

# The functions' runtime (template.yaml: Runtime python3.12, x86_64). `sam build` builds without a
# container, so it needs that interpreter: python3.12 on PATH, else pyenv's; LAMBDA_PYTHON= to choose.
RUNTIME := python3.12
LAMBDA_PYTHON ?= $(shell for p in "$$(command -v $(RUNTIME))" "$$(pyenv root 2>/dev/null || echo $$HOME/.pyenv)"/versions/3.12*/bin/$(RUNTIME); do \
	"$$p" -c '' 2>/dev/null && { echo "$$p"; break; }; done)
BUILD_DIR ?= .aws-sam/build

# The dev venv runs on the functions' runtime, python3.12, when this machine has it (PATH or pyenv),
# so the suite runs the code on the Python it runs on in Lambda, and coverage measures through
# sys.monitoring (3.12+) at next to no cost; else on python3 (3.11+). PYTHON= to choose.
PYTHON ?= $(or $(LAMBDA_PYTHON),python3)

# The deployable artifact: each function's code and each layer in $(BUILD_DIR), as `sam deploy` ships
# them. Beside them, lambda-runtime/ holds what the Lambda runtime provides (boto3), so that
# `expconsole serve --build-dir` runs the functions with exactly what they have in AWS.
# The functions' own code gets its bytecode here, as the layers get theirs in their Makefiles: Lambda's
# /var/task is read-only, so without it every cold start compiles app.py (what that costs:
# docs/performance.md, 'Cold start'). SAM copies sources only; its folders are *Function.
build: install-sam
	@test -n "$(LAMBDA_PYTHON)" || { echo "make build: no working $(RUNTIME) (the functions' runtime) on PATH \
	or in pyenv; install CPython 3.12, or give its path: make build LAMBDA_PYTHON=/path/to/python3.12" >&2; exit 1; }
	PATH="$(dir $(LAMBDA_PYTHON)):$$PATH" SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam build --parallel \
		--template-file template.yaml --build-dir $(BUILD_DIR)
	$(LAMBDA_PYTHON) -m compileall -q -j 0 --invalidation-mode unchecked-hash $(BUILD_DIR)/*Function
	$(LAMBDA_PYTHON) -m pip install --quiet --no-compile --root-user-action=ignore \
		--target $(BUILD_DIR)/lambda-runtime boto3
	$(LAMBDA_PYTHON) -m compileall -q -j 0 --invalidation-mode unchecked-hash $(BUILD_DIR)/lambda-runtime

# The web console's browser tests drive Debian's chromium through Playwright (never `playwright install`).
CHROMIUM := /usr/bin/chromium
chromium: $(CHROMIUM)

$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium

serve: install-serve
	$(BIN)/expconsole serve --host $(HOST) --port $(PORT) $(SERVE_ARGS)

test: install install-sam chromium
	$(BIN)/ruff check .
	$(BIN)/mypy
	SAM_CLI=$(abspath $(SAM_VENV))/bin/sam $(BIN)/python -m pytest -n auto --cov

# The unit and functional suites: no SAM CLI, no browser, no end-to-end servers.
test-fast: install
	$(BIN)/python -m pytest -n auto -m 'not sam' tests/unit tests/functional

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy strict over the layer, the tools and the functions, with the pydantic plugin ([tool.mypy]
# in pyproject.toml).
typecheck: install
	$(BIN)/mypy

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The docs function serves a copy (functions/docs/ is its whole package in AWS).
openapi: install
	$(BIN)/python -m expconsole_tools.openapi > openapi.json
	cp openapi.json functions/docs/openapi.json

bench: install
	$(BIN)/python bench/cold_start.py

# The same on the built stack, as Lambda imports it (python3.12, the layers, no bytecode written).
bench-built: build
	$(BIN)/python bench/cold_start.py --build-dir $(BUILD_DIR)

# PULSE_ARGS= for the full size.
PULSE_ARGS ?= --quick
bench-pulse: install
	$(BIN)/python bench/pulse.py $(PULSE_ARGS)

bench-load: install
	$(BIN)/python bench/load.py

# The Statsig SDK protocol at 1,000 gates + 200 experiments + 50 configs (and 5,000 entities).
# SDK_ARGS="--scale-to 0 --downloads 10 --users 30" for a quicker run.
SDK_ARGS ?=
bench-sdk: install
	$(BIN)/python bench/sdk.py $(SDK_ARGS)

# A fresh clone's `make serve` with empty package caches, to the printed URL and the first page;
# it installs in its own clone, so it needs nothing here. FIRST_START_ARGS="--repeat 3" for more runs.
FIRST_START_ARGS ?=
bench-first-start:
	$(PYTHON) bench/first_start.py $(FIRST_START_ARGS)

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .pytest_cache .ruff_cache .mypy_cache .coverage
