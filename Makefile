# Every target builds what it needs: a fresh clone runs `make demo` or `make test`.
SHELL := /bin/bash
VENV := .venv
# PyMC 6.x needs Python >= 3.12; the machine's default python3 is 3.11. Find a 3.12.
PYTHON312 := $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
	if $$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then echo $$p; break; fi; done)
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint docs bench bench-quick clean

venv: $(STAMP)

# the virtualenv itself (once), then one pip run per stamp
define make_venv
	@test -n "$(PYTHON312)" || { echo "python3.12 not found: install Python 3.12" >&2; exit 1; }
	test -x $(PY) || { $(PYTHON312) -m venv $(VENV) && $(PY) -m pip install --quiet --upgrade pip; }
endef

# PyMC 6.4's ZarrTrace needs zarr 2, nutpie >= 0.16.10 (what PyMC 6.4 accepts) zarr 3: the
# ZarrTrace test runs in a process that finds zarr 2 here first
define zarr_2
	$(PY) -m pip install --quiet --no-deps --upgrade --target $(VENV)/zarr2 "zarr>=2.18,<3" \
		"numcodecs>=0.10,<0.16" asciitree fasteners deprecated wrapt
endef

$(STAMP): pyproject.toml
	$(make_venv)
	$(PY) -m pip install --quiet -e ".[test,nutpie,jax]"
	$(zarr_2)
	touch $(STAMP)

# how ALBP, ARWM and PyMC's default compare on a 50x50 Ising model (benchmarks/demo.py)
demo: $(STAMP)
	$(PY) -m benchmarks.demo

# the docs are part of the tests: a broken page or docstring fails CI. The tests run on
# both cores (pytest-xdist); `pytest -m "not slow"` skips the end-to-end runs for a quick loop.
# The slowest 20 are listed at the end: the 15-minute budget is watched where it is spent
test: lint docs
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=20 tests

# ruff (pyproject.toml holds its rules): pyflakes, pycodestyle, import order, bugbear
lint: $(STAMP)
	$(PY) -m ruff check .

docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

# every benchmark script (benchmarks/run_all.py lists them), in one process: each
# rewrites its section of benchmarks/RESULTS.md and its plots, and prints its duration.
# The benchmarks are a package run from the repository root as modules
# (`python -m benchmarks.run_core`), never as files: no script edits sys.path
BENCH_STAMP := $(VENV)/.bench-installed

# make test installs nutpie, JAX, NumPyro and BlackJAX (pm.sample's external NUTS on the
# summed-out model is tested); the benchmarks add nothing more today, in one pip run
$(BENCH_STAMP): pyproject.toml
	$(make_venv)
	$(PY) -m pip install --quiet -e ".[test,nutpie,jax,bench]"
	$(zarr_2)
	touch $(STAMP) $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) -m benchmarks.run_all

# the same scripts at small sizes, two processes side by side (one per core), under 10
# minutes on the 2-core VM. Its RESULTS.md and plots go to benchmarks/out/quick/ (not
# committed: only full-size numbers reach benchmarks/RESULTS.md), or to the folder named by
# PYMC_DISCRETE_BENCH_OUT
bench-quick: $(BENCH_STAMP)
	$(PY) -m benchmarks.run_all --quick --jobs=2

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache docs/_build docs/gallery docs/sg_execution_times.rst
