# The two commands a newcomer needs: `make serve` and `make test`. Both install first.
PYTHON ?= python3
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

.PHONY: install install-sam serve test test-fast lint format openapi bench bench-pulse bench-load clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# aws-sam-cli pins versions that conflict with ours, so it lives in its own venv.
install-sam: $(SAM_VENV)/.installed

$(SAM_VENV)/.installed:
	test -x $(SAM_VENV)/bin/python || $(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/python -m pip install --quiet 'aws-sam-cli>=1.120'
	touch $@

serve: install
	$(BIN)/expconsole serve --host $(HOST) --port $(PORT) $(SERVE_ARGS)

test: install install-sam
	$(BIN)/ruff check .
	SAM_CLI=$(abspath $(SAM_VENV))/bin/sam $(BIN)/python -m pytest -n auto

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

openapi: install
	$(BIN)/python -m expconsole.openapi > openapi.json

bench: install
	$(BIN)/python bench/cold_start.py

# PULSE_ARGS= for the full size.
PULSE_ARGS ?= --quick
bench-pulse: install
	$(BIN)/python bench/pulse.py $(PULSE_ARGS)

bench-load: install
	$(BIN)/python bench/load.py

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .pytest_cache .ruff_cache
