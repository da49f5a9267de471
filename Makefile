# The two commands in README.md: `make demo` and `make test`. Both create .venv on first use
# (torch==2.13.0 first, the CPU build, so no CUDA download) and skip set-up once it is done.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.sdcompile-installed
TORCH_PIN := torch==2.13.0
DEMO_DIR := .demo

.PHONY: demo demo-clean test lint bench docs clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "$(TORCH_PIN)"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

SDC := $(abspath $(VENV))/bin/sdcompile

# The seven phases for Flux's RMSNorm against a scratch copy of the real MindIE-SD 3.1.0 (kept in .demo/.sdcompile).
# Running it again keeps the phases that passed: `make demo-clean demo` starts over.
demo: $(STAMP)
	mkdir -p $(DEMO_DIR)
	cd $(DEMO_DIR) && $(SDC) run --model flux --op rmsnorm

demo-clean:
	rm -rf $(DEMO_DIR)

test: $(STAMP)
	$(PY) -m pytest -n 2 -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# Every generated page in docs/ (tests fail when one is stale).
docs: $(STAMP)
	$(PY) -m sdcompile.cli.reference > docs/cli.md
	$(PY) -m sdcompile.report.explain > docs/mismatch-catalog.md
	$(PY) -m sdcompile.report.catalog_tables

clean:
	rm -rf $(DEMO_DIR) .sdcompile .pytest_cache
