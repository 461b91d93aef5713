# quickjail — `make help` lists the targets.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CODE   := sandbox bridge runtime quickjail tests benchmarks examples release fuzz hatch_build.py hatch_editable.py
# the package as the wheel lays it out, for mypy (which follows no import hook): links, remade each time
VIEW   := .build/typecheck/quickjail
GUEST  := $(wildcard sandbox/_guest/*.c sandbox/_guest/*.h sandbox/_guest/*.js sandbox/_guest/web/*.js sandbox/_patches/*.patch sandbox/_host/*.c sandbox/_host/*.h)
# say what a long step does, once; later runs are quiet
STEP    = @printf '\033[1m==> %s\033[0m\n'

.DEFAULT_GOAL := help
.PHONY: help demo test check lint format typecheck typecheck-view pytest bench bench-dry dist dist-check guest fuzz clean

help: ## Show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml hatch_build.py hatch_editable.py sandbox/_build.py sandbox/_build_patches.py sandbox/_platforms.py sandbox/_snapshot.py $(GUEST)
	$(STEP) "[1/4] creating the virtual environment in $(VENV) (a few seconds)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(STEP) "[2/4] installing quickjail and its dev tools from PyPI (1-2 minutes on a new machine)"
	@QUICKJAIL_SKIP_GUEST_BUILD=1 $(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,bench,ray]'
	$(STEP) "[3/4] building the guest (QuickJS-ng -> wasm32-wasi) and the host library with the pinned zig (1-3 minutes the first time)"
	@$(PY) -m quickjail.sandbox._build
	$(STEP) "[4/4] compiling the guest with wasmtime and caching it (a few seconds)"
	@$(PY) -c "from quickjail import sandbox; sandbox.warm_up()"
	@touch $(STAMP)

demo: $(STAMP) ## Set everything up (venv, install, guest build) and run the run_code demo
	@$(PY) examples/demo.py

test: $(STAMP) ## The whole check: ruff (lint + format), mypy strict, the whole pytest suite
	$(STEP) "ruff check and ruff format --check"
	@$(PY) -m ruff check $(CODE)
	@$(PY) -m ruff format --check $(CODE)
	$(STEP) "mypy --strict (about a minute)"
	@$(MAKE) --no-print-directory typecheck-view
	@$(PY) -m mypy
	$(STEP) "pytest (several minutes)"
	@$(PY) -m pytest -q --ignore=tests/executors/test_ray_executor.py
	$(STEP) "pytest: the Ray executor, in a process of its own (a Ray driver may end its process after ray.shutdown, issue 28 item 2)"
	@$(PY) -m pytest -q tests/executors/test_ray_executor.py

check: test ## Same as test

lint: $(STAMP) ## ruff check and format check only
	$(PY) -m ruff check $(CODE)
	$(PY) -m ruff format --check $(CODE)

format: $(STAMP) ## Apply ruff's fixes and formatting
	$(PY) -m ruff check --fix $(CODE)
	$(PY) -m ruff format $(CODE)

typecheck: $(STAMP) ## mypy --strict on the package
	@$(MAKE) --no-print-directory typecheck-view
	$(PY) -m mypy

typecheck-view:
	@rm -rf $(dir $(VIEW)) && mkdir -p $(VIEW)
	@for f in quickjail/* sandbox bridge runtime; do ln -s "$(CURDIR)/$$f" $(VIEW)/; done

pytest: $(STAMP) ## Only the pytest suite (pass arguments with ARGS=...)
	$(PY) -m pytest -q $(ARGS)

bench: $(STAMP) ## Run the benchmarks against the peers; prints a table, writes JSON
	$(PY) -m benchmarks

bench-dry: $(STAMP) ## Run every benchmark once, without timing (a smoke test)
	$(PY) -m benchmarks --dry-run

dist: $(STAMP) ## Build the sdist and every platform's wheel into dist/ (each wheel from the sdist)
	$(PY) -m release build

dist-check: $(STAMP) ## Check dist/: every wheel's tag and binary; the native wheel installed on 3.11-3.13, the musllinux x86_64 one on musl 3.11 and 3.13 (built the first time)
	$(PY) -m release check

# gcc builds the ASan target: the pinned zig instruments -fsanitize=address but ships no ASan
# runtime (measured: undefined __asan_* symbols at link); zig builds the 32-bit UBSan heap target
FUZZ_SECONDS ?= 600
fuzz: $(STAMP) ## Fuzz the guest's C for FUZZ_SECONDS (600): ASan+UBSan (gcc) and the heap (zig UBSan)
	nice -n 19 $(PY) -m fuzz --seconds $(FUZZ_SECONDS) $(FUZZ_ARGS)

guest: $(STAMP) ## Rebuild the guest wasm and the host library from the pinned sources
	$(PY) -m quickjail.sandbox._build --force

clean: ## Remove the venv and build outputs
	rm -rf $(VENV) .build dist sandbox/_guest/*.wasm sandbox/_guest/build.json sandbox/_guest/*.so
