"""Run every benchmark script in one process (imports and compiled functions loaded once).

``python benchmarks/run_all.py [--quick] [name ...]``: each script's ``main`` in turn (all
of them by default, in the order of the Makefile's ``BENCH_SCRIPTS``), printing how long
each took. Each rewrites its own section of ``benchmarks/RESULTS.md`` and its plots.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCRIPTS = ("run_core", "run_paper", "run_scaling", "run_exact", "run_categorical",
           "run_mixture", "run_path", "run_samcmc", "run_numpyro")


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    names = [a for a in argv if not a.startswith("--")] or list(SCRIPTS)
    unknown = sorted(set(names) - set(SCRIPTS))
    if unknown:
        raise SystemExit(f"unknown benchmark scripts {unknown}: choose from {SCRIPTS}")
    began = time.perf_counter()
    for name in names:
        print(f"== {name}{' --quick' if quick else ''}", flush=True)
        start = time.perf_counter()
        importlib.import_module(f"benchmarks.{name}").main(quick=quick)
        print(f"== {name} took {time.perf_counter() - start:.0f} s", flush=True)
    print(f"== all took {time.perf_counter() - began:.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
