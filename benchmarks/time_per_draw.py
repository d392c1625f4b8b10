"""Time per draw of the default steps on the example models: a quick check that a
refactor did not slow the samplers down.

Runs ``pm.sample(draws=1500, tune=500, chains=1)`` four times per case and prints the
best time per draw (tuning included), for ALBP, ARWM and PAS on a 50x50 Ising lattice,
ALBP on 800 independent Bernoullis and on a 20x20 Potts model. To compare two versions
of the package, run it against each tree in turn (a few rounds, alternating, since the
machine's load moves the numbers by 10%), from the repository root::

    python -m benchmarks.time_per_draw
    PYTHONPATH=/path/to/old/tree python benchmarks/time_per_draw.py

The second line times the package in ``/path/to/old/tree`` (for instance a ``git
archive`` of an older commit). It runs this file by its path rather than with ``-m``,
since ``-m`` puts the current directory, and with it this tree's package, ahead of
``PYTHONPATH``; that works because this script imports nothing from ``benchmarks``. The
first line of the output names the package that was timed.

The benchmarks proper (ESS per second against PyMC and NumPyro) are the ``run_*.py``
scripts; pair this with ``draw_digests.py``, which checks that the chains are unchanged.
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import pymc as pm

import pymc_discrete as pmd
from pymc_discrete import example_models

CASES = {
    "ising50/albp": (lambda: example_models.ising_model(50), lambda v: pmd.ALBP([v])),
    "ising50/arwm": (lambda: example_models.ising_model(50), lambda v: pmd.ARWM([v])),
    "ising50/pas": (lambda: example_models.ising_model(50), lambda v: pmd.PAS([v])),
    "bernoulli800/albp": (lambda: example_models.bernoulli_model(800), lambda v: pmd.ALBP([v])),
    "potts20/albp": (lambda: example_models.potts_model(20), lambda v: pmd.ALBP([v])),
}


def best_time_per_draw(make_model, make_step, draws: int = 1500, tune: int = 500,
                       repeats: int = 4) -> float:
    """Best wall time per draw (seconds) over ``repeats`` runs of one chain."""
    model = make_model()
    with model:
        step = make_step(model["x"])
        best = np.inf
        for seed in range(repeats):
            start = time.perf_counter()
            pm.sample(draws=draws, tune=tune, chains=1, step=step, random_seed=seed,
                      progressbar=False, compute_convergence_checks=False)
            best = min(best, time.perf_counter() - start)
    return best / (draws + tune)


def main() -> None:
    warnings.simplefilter("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    print(f"package: {pmd.__file__}")
    for name, (make_model, make_step) in CASES.items():
        print(f"{name:20s} {1e3 * best_time_per_draw(make_model, make_step):.4f} ms/draw",
              flush=True)


if __name__ == "__main__":
    main()
