# The two commands in README.md: `make demo` and `make test`. Both create their venvs on first use and skip set-up
# once it is done.
#   .venv               torch 2.13.0 (the CPU build, installed first so no CUDA build is pulled): demo, full suite
#   .venv-torch2.9.0    torch $(TORCH) from the registry (a CUDA build; it runs on CPU): the suite's torch-dependent
#                       part again, on the torch MindIE-SD pins. `make test TORCH=2.7.1` uses .venv-torch2.7.1.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.sdcompile-installed
TORCH_PIN := torch==2.13.0
DEMO_DIR := .demo

TORCH ?= 2.9.0
VENV2 := .venv-torch$(TORCH)
PY2 := $(VENV2)/bin/python
STAMP2 := $(VENV2)/.sdcompile-installed
# What runs on the second torch: every test whose verdict depends on torch (phases 2, 4 and 5, the lifecycle,
# the docs, the emulated NPU, graph capture, torch internals, the CLI conventions: torch's profiler output).
SECOND_TORCH_TESTS := tests/scaffold tests/verify tests/debug tests/run tests/docs tests/npu tests/graph \
	tests/test_torch_internals.py tests/test_doctor.py tests/test_cli_conventions.py tests/zoo/test_any_class.py \
	tests/zoo/test_new_model.py tests/analyze/test_site_counts.py tests/profiles/test_capture_dtypes.py \
	tests/benefit/test_data_moved.py tests/benefit/test_graph_sites.py

.PHONY: demo demo-clean test test-main test-second-torch browser bytecode lint bench docs outcomes golden clean

# Byte-compiled once here, on both cores: where PYTHONDONTWRITEBYTECODE is set (as on these machines) an import never
# caches bytecode, and every process (each CLI command a test starts) would compile torch and sympy again, ~5 s each.
# A file written for a newer Python (torch's py312 test intrinsics) does not compile; as in pip's own byte-compile,
# that is not an error.
COMPILE_SITE = -m compileall -q -j 0 $$($(1) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") \
	> /dev/null 2>&1 || true

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile "$(TORCH_PIN)"
	$(PY) -m pip install --quiet -e ".[dev,bench,kernels]"
	$(PY) $(call COMPILE_SITE,$(PY))
	touch $(STAMP)

# The registry's torch wheels (a CUDA build and its nvidia-* libraries, about 4 GB) are kept in a wheelhouse, so a
# fresh clone on the same machine installs them from there; `.complete` marks a download that finished (an
# interrupted one is done again). `rm -r` the wheelhouse to fetch them anew.
WHEELHOUSE ?= $(HOME)/.cache/sdcompile/wheels/torch-$(TORCH)

# Room the second torch needs: its venv (about 7 GB) and, when the wheelhouse is empty, the wheels (about 4 GB).
# Checked first so a full disk is one clear line, not pip's OSError half-way through an install.
NEED_GB = $(if $(wildcard $(WHEELHOUSE)/torch-$(TORCH)-*.whl),8,12)

# torch 2.7-2.9's CUDA wheels pin triton 3.3-3.5, whose interpreter (the target's NPU kernels on CPU) fails on
# numpy >= 2.4 ("only 0-dimensional arrays can be converted to Python scalars"); newer Triton does not need this.
KERNEL_PINS2 := "numpy<2.4"

# After the main venv (order only): two editable installs at once would race on the tree's egg-info.
$(STAMP2): pyproject.toml | $(STAMP)
	@$(PYTHON) -c "import shutil, sys; free = shutil.disk_usage('.').free / 2**30; \
	sys.exit(0 if free >= $(NEED_GB) else f'make: the torch $(TORCH) venv needs about $(NEED_GB) GB free here, ' \
	f'{free:.1f} GB are: free some space (du -sh /tmp/* ~/.cache/*) and run make test again')"
	test -x $(PY2) || $(PYTHON) -m venv $(VENV2)
	test -f "$(WHEELHOUSE)/.complete" || { $(PY2) -m pip download --quiet --dest "$(WHEELHOUSE)" "torch==$(TORCH)" \
		&& touch "$(WHEELHOUSE)/.complete"; }
	$(PY2) -m pip install --quiet --no-compile --no-index --find-links "$(WHEELHOUSE)" "torch==$(TORCH)"
	$(PY2) -m pip install --quiet -e ".[dev,kernels]" $(KERNEL_PINS2)
	$(PY2) $(call COMPILE_SITE,$(PY2))
	touch $(STAMP2)

SDC := $(abspath $(VENV))/bin/sdcompile

# sdcompile's own modules byte-compiled, as installing a wheel does (an editable install does not, and with
# PYTHONDONTWRITEBYTECODE every command would compile them again): only files changed since the last run, ~1 s.
bytecode: $(STAMP)
	$(PY) -m compileall -q -j 0 sdcompile > /dev/null

# The seven phases for Flux's RMSNorm against a scratch copy of the real MindIE-SD 3.1.0 (kept in .demo/.sdcompile).
# Running it again keeps the phases that passed: `make demo-clean demo` starts over.
demo: $(STAMP) bytecode
	mkdir -p $(DEMO_DIR)
	cd $(DEMO_DIR) && $(SDC) run --model flux --op rmsnorm

demo-clean:
	rm -rf $(DEMO_DIR)

# The second venv is set up (mostly unpacking wheels) while the main suite runs, then the second suite runs.
test:
	$(MAKE) -j2 test-main $(STAMP2)
	$(MAKE) test-second-torch

# --durations: the slowest tests, at the end of each suite's log, where CI's time goes.
test-main: $(STAMP) bytecode browser
	$(PY) -m pytest -n 2 -q --durations=25

# The HTML reports' browser checks need Chromium: installed from the distribution's packages where it is missing and
# the machine allows it (root, apt-get; about 20 s); elsewhere those checks skip and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      chromium >/dev/null) || echo "note: apt-get could not install chromium: the HTML browser checks skip"; \
	  else echo "note: chromium is missing and only root with apt-get installs it here: the HTML browser checks skip"; \
	  fi; }

test-second-torch: $(STAMP2)
	$(PY2) -m pytest -n 2 -q --durations=25 -m "not torch_independent" $(wildcard $(SECOND_TORCH_TESTS))

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -p no:cacheprovider tests/test_layers.py

bench: $(STAMP) bytecode
	$(PY) benchmarks/run_all.py

# Every generated page in docs/ (tests fail when one is stale).
docs: $(STAMP)
	$(PY) -m sdcompile.cli.reference > docs/cli.md
	$(PY) -m sdcompile.phases.explain.catalog_page > docs/mismatch-catalog.md
	$(PY) -m sdcompile.phases.explain.catalog_tables

# The per-model AdaLN and RoPE outcome tables in docs/pattern-templates.md, one per torch and op: `sdcompile matrix
# --until scaffold` (a scaffold dry run per zoo model and op, two at a time) writes each into its marked section.
outcomes: $(STAMP) $(STAMP2)
	for py in $(PY) $(PY2); do \
		$$py -m sdcompile matrix --until scaffold --ops adaln,rope --jobs 2 --out .sdcompile/outcomes \
			--markdown docs/pattern-templates.md --section "outcomes {op} {torch-range}" || exit 1; \
	done

# The golden renderings of tests/rendering at 80 and 200 columns, after a deliberate change to a renderer (review their
# diff). `$(PY) tests/rendering/render_capture.py` first captures the commands' results again (two lifecycles).
golden: $(STAMP)
	$(PY) tests/rendering/render_cases.py

clean:
	rm -rf $(DEMO_DIR) .sdcompile .pytest_cache
