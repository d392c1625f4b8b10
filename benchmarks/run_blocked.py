"""Blocked conditional updates on the lattices: BlockedGibbs against ALBP's best and NumPyro.

On the paper's Ising 50x50 model (C2) and the 30x30 four-state Potts model, the sites
split into two colours (a checkerboard), so a ``BlockedGibbs`` draw is a full Gibbs sweep
in two batched evaluations of the model's terms. Each table measures it next to ALBP's
fastest configuration on that model (the numba-compiled loop of 8 sqrt steps per draw on
the binary lattice, 4 gradient steps per draw on the Potts model) and NumPyro's
``DiscreteHMCGibbs`` (a JAX-compiled Gibbs sweep), all with ``harness.measure``: ESS of
the log density and median site ESS, per second, timed warm.

Writes the section ``blocked`` of ``benchmarks/RESULTS.md``. Run with
``python -m benchmarks.run_blocked`` (``--quick``: fewer draws).
"""

from __future__ import annotations

import datetime
import sys
import warnings

import numpy as np

import pymc_discrete as pmd
from benchmarks.harness import format_table, machine_description, measure, write_section
from benchmarks.run_numpyro import POTTS, numpyro_measure, numpyro_model
from pymc_discrete.example_models import ising_model, potts_model


def _cases(draws: int, gibbs_draws: int) -> list:
    """(kind, title, model, values per site, [(label, step, draws, steps per draw)])."""
    return [
        ("ising", "Ising 50x50 (C2)", ising_model(50, "C2"), 2, [
            ("BlockedGibbs", lambda m: pmd.BlockedGibbs([m["x"]]), gibbs_draws, 1),
            ("ALBP (sqrt, compiled loop, 8 steps per draw)",
             lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=8,
                                compiled_loop=True), draws // 8, 8),
        ]),
        ("potts", "Potts 30x30, K = 4", potts_model(**POTTS), POTTS["n_states"], [
            ("BlockedGibbs", lambda m: pmd.BlockedGibbs([m["x"]]), gibbs_draws, 1),
            ("ALBP (barker, 4 steps per draw)",
             lambda m: pmd.ALBP([m["x"]], steps_per_draw=4), draws // 4, 4),
        ]),
    ]


def main(quick: bool = False) -> None:
    """Measure and write the ``blocked`` section of RESULTS.md."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python -m benchmarks.run_blocked" + (" --quick" if quick else "")
    draws = 400 if quick else 5000
    gibbs_draws = 100 if quick else 1000
    numpyro_draws = 15 if quick else 500
    sections = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for kind, title, model, n_values, runs in _cases(draws, gibbs_draws):
            shape = model.initial_point()["x"].shape
            start = {"x": np.random.default_rng(0).integers(0, n_values, shape)}
            print(f"  {title}: NumPyro", flush=True)
            rows = [numpyro_measure(*numpyro_model(kind), model, numpyro_draws, numpyro_draws)]
            for label, make_step, n_draws, per_draw in runs:
                print(f"  {title}: {label}", flush=True)
                rows.append(measure(model, label, make_step, draws=n_draws,
                                    tune=max(n_draws, 50), seed=6, initvals=start))
            sections.append(
                f"### {title}\n\nNumPyro: {numpyro_draws} sweeps after {numpyro_draws} "
                f"warm-up per chain; BlockedGibbs: {gibbs_draws} sweeps after as many; ALBP: "
                f"{draws} M-H steps after as many.\n\n"
                f"{format_table(rows, baseline='NumPyro DiscreteHMCGibbs')}"
            )
    text = (
        "## Blocked conditional updates on the lattices (BlockedGibbs, ALBP, NumPyro)\n\n"
        f"Produced by `{command}` on {stamp}.\nMachine: {machine_description()}.\n\n"
        "Two colours cover each lattice, so a BlockedGibbs draw is a whole Gibbs sweep in "
        "two batched evaluations of the model's terms (three rows per colour on the "
        "binary lattice, five on the Potts one); `register()` picks it on both. 2 chains, "
        "random start, timed warm (`harness.measure`); ratios against NumPyro.\n\n"
        + "\n\n".join(sections)
    )
    print(text)
    write_section("blocked", text)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
