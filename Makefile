# quickjail — `make help` lists the targets.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help demo test lint typecheck bench bench-dry guest clean

help: ## Show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml hatch_build.py sandbox/_build.py sandbox/_snapshot.py sandbox/_guest/quickjail.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	$(PY) -m sandbox._build
	touch $(STAMP)

demo: $(STAMP) ## Set everything up (venv, install, guest build) and run the run_code demo
	$(PY) examples/demo.py

test: $(STAMP) ## Set everything up if needed and run the whole test suite
	$(PY) -m pytest -q

lint: $(STAMP) ## ruff
	$(PY) -m ruff check sandbox bridge runtime quickjail tests benchmarks examples

typecheck: $(STAMP) ## mypy --strict on the packages
	$(PY) -m mypy

bench: $(STAMP) ## Run the benchmarks against the peers; prints a table, writes JSON
	$(PY) -m benchmarks

bench-dry: $(STAMP) ## Run every benchmark once, without timing (a smoke test)
	$(PY) -m benchmarks --dry-run

guest: $(STAMP) ## Rebuild the guest wasm from the pinned sources
	$(PY) -m sandbox._build --force

clean: ## Remove the venv and build outputs
	rm -rf $(VENV) sandbox/_guest/*.wasm sandbox/_guest/build.json
