# Every target builds what it needs: a fresh clone runs `make demo` or `make test`.
SHELL := /bin/bash
VENV := .venv
# PyMC 6.x needs Python >= 3.12; the machine's default python3 is 3.11. Find a 3.12.
PYTHON312 := $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
	if $$p -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then echo $$p; break; fi; done)
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo test docs bench bench-quick clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON312)" || { echo "python3.12 not found: install Python 3.12" >&2; exit 1; }
	$(PYTHON312) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/ising_demo.py

# the docs are part of the tests: a broken page or docstring fails CI
test: docs
	$(PY) -m pytest -q tests

docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

# every benchmark script: rewrites its section of benchmarks/RESULTS.md and its plots
BENCH_SCRIPTS := run_core run_paper run_scaling run_exact run_categorical run_mixture run_path run_samcmc run_numpyro
BENCH_STAMP := $(VENV)/.bench-installed

# NumPyro and JAX are installed for the benchmarks only (not by make test)
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,bench]"
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	@for s in $(BENCH_SCRIPTS); do echo "== $$s"; $(PY) benchmarks/$$s.py || exit 1; done

# the same scripts at small sizes: 15 min on the 2-core VM with another job sharing it,
# plus 1.6 min for the venv of a fresh clone
bench-quick: $(BENCH_STAMP)
	@for s in $(BENCH_SCRIPTS); do echo "== $$s --quick"; $(PY) benchmarks/$$s.py --quick || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache docs/_build
