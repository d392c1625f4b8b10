"""Categorical benchmark (issue: categorical variables for ALBP and ARWM).

Potts model on a 30x30 lattice with K = 4 states (``pymc_discrete.example_models.potts_model``):
ESS per second of ALBP and ARWM against PyMC's CategoricalGibbsMetropolis with both of its
proposals. Writes its section of ``benchmarks/RESULTS.md``. Run with
``python -m benchmarks.run_categorical`` (part of ``make bench``).
"""

from __future__ import annotations

import datetime
import sys
import warnings

import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    format_table,
    machine_description,
    measure,
    write_section,
)
from pymc_discrete.example_models import potts_model


def main(quick: bool = False) -> None:
    draws, tune, gibbs_draws, gibbs_tune = (500, 500, 10, 6) if quick else (3000, 3000, 60, 20)
    command = "python -m benchmarks.run_categorical" + (" --quick" if quick else "")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    model = potts_model(30, 4)
    start = {"x": np.random.default_rng(0).integers(0, 4, (30, 30))}
    runs = [
        ("ALBP (gradient)", lambda m: pmd.ALBP([m["x"]]), draws, tune),
        ("ALBP (gradient, 4 steps per draw)",
         lambda m: pmd.ALBP([m["x"]], steps_per_draw=4), draws, tune // 4),
        ("ALBP (exact)", lambda m: pmd.ALBP([m["x"]], proposal="exact"), draws, tune),
        ("PAS (gradient)", lambda m: pmd.PAS([m["x"]]), draws, tune),
        ("ARWM", lambda m: pmd.ARWM([m["x"]]), draws, tune),
        ("CategoricalGibbsMetropolis (uniform)",
         lambda m: pm.CategoricalGibbsMetropolis([m["x"]], proposal="uniform"),
         gibbs_draws, gibbs_tune),
        ("CategoricalGibbsMetropolis (proportional)",
         lambda m: pm.CategoricalGibbsMetropolis([m["x"]], proposal="proportional"),
         gibbs_draws, gibbs_tune),
    ]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmd.RelaxationWarning)
        for label, make_step, n_draws, n_tune in runs:
            print(f"  Potts 30x30 K=4: {label}", flush=True)
            rows.append(measure(model, label, make_step, draws=n_draws, tune=n_tune, seed=4,
                                initvals=start))
    text = f"""## Categorical: Potts 30x30, K = 4

Produced by `{command}` on {stamp}.
Machine: {machine_description()}.

`log pi(z) = sum_i h[i, z_i] + 0.5 sum_<ij> [z_i == z_j]`, fields U(-0.5, 0.5), free
boundaries, uniform random start. ALBP and ARWM: {draws} draws after {tune} tuning per
chain; CategoricalGibbsMetropolis (a sweep of all sites per draw): {gibbs_draws} draws
after {gibbs_tune}; 2 chains each. ALBP (gradient): one logp + gradient of the one-hot
relaxation per draw (the Potts log density is linear in each site's one-hot vector, so
the ratios are exact); ALBP (exact): 2 colours x 4 values = 9 batched term evaluations.
"4 steps per draw" runs 4 M-H steps per PyMC draw (`steps_per_draw=4`); its tune phase
has a quarter of the draws, so it tunes over the same number of M-H steps. Timing noise:
CategoricalGibbsMetropolis's time per draw has varied by up to 40% between runs on this
VM (64 to 90 ms per draw with the uniform proposal), and every ratio against it with it.

{format_table(rows, baseline="CategoricalGibbsMetropolis (proportional)")}
"""
    write_section("categorical", text)
    print(text)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
