"""Run benchmark scripts in one process, or in ``--jobs`` processes side by side.

``python -m benchmarks.run_all [--quick | --smoke] [--jobs=J] [name ...]``: each script's
``main`` (all of them by default), printing how long each took; imports and compiled
functions load once per process. Each script rewrites its own sections of
``benchmarks/RESULTS.md`` and its plots (or of the folder named by
``PYMC_DISCRETE_BENCH_OUT``: ``benchmarks.harness.output_dir``). With J > 1 the scripts
are shared among J processes (one core each on a machine of J cores), and every section
says so in its machine line.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from benchmarks.harness import CONCURRENT_JOBS, size_name

#: every script, the longest first (so that --jobs packs them well)
SCRIPTS = ("run_applied", "run_summed", "run_setup", "run_per_variable", "run_blocked",
           "run_numpyro", "run_path", "run_phrasings", "run_models", "run_exact", "run_core",
           "run_paper", "run_scale_mixture", "run_scaling", "run_samcmc", "run_marginal_cost")


def run_script(name: str, size: str = "full") -> float:
    """Run one script's ``main`` at ``size`` ("full", "quick" or "smoke"); return its
    duration in seconds."""
    flag = "" if size == "full" else f" --{size}"
    print(f"== {name}{flag}", flush=True)
    start = time.perf_counter()
    importlib.import_module(f"benchmarks.{name}").main(quick=size == "quick",
                                                       smoke=size == "smoke")
    seconds = time.perf_counter() - start
    print(f"== {name} took {seconds:.0f} s", flush=True)
    return seconds


def main(argv: list[str]) -> None:
    size = size_name(quick="--quick" in argv, smoke="--smoke" in argv)
    jobs = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("--jobs=")), 1)
    names = [a for a in argv if not a.startswith("--")] or list(SCRIPTS)
    unknown = sorted(set(names) - set(SCRIPTS))
    if unknown:
        raise SystemExit(f"unknown benchmark scripts {unknown}: choose from {SCRIPTS}")
    began = time.perf_counter()
    if jobs > 1:
        os.environ[CONCURRENT_JOBS] = str(jobs)
        # workers are reused (each imports PyMC and loads the compiled kernels once) and
        # not daemonic, unlike multiprocessing.Pool's: a script may start processes of its
        # own (run_phrasings times PyMC in a fresh one)
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            durations = list(pool.map(run_script, names, [size] * len(names)))
    else:
        durations = [run_script(name, size) for name in names]
    summary = ", ".join(f"{n} {d:.0f} s" for n, d in zip(names, durations))
    print(f"== all took {time.perf_counter() - began:.0f} s ({summary})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
