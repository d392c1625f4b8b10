"""ALBP and ARWM on the optimal-scaling paper's binary configurations.

1. EJD and acceptance of ALBP (Barker and sqrt weights) and ARWM after tuning, on the
   paper's Bernoulli (N = 800, C2) and Ising (50 x 50, C2) configurations, next to the
   values of the optimal-scaling paper (Table 1, Tables 5 and 8).
2. On the Ising configuration: ESS per second against PyMC's BinaryGibbsMetropolis, and
   time per draw against pm.BinaryMetropolis (one logp per draw, the floor of any M-H step).

Writes the section ``core`` of ``benchmarks/RESULTS.md`` and ``benchmarks/core_ising.png``.
Run with ``python -m benchmarks.run_core [--quick | --smoke]``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    Measurement,
    cli,
    format_table,
    markdown_table,
    measure,
    provenance,
    save_figure,
    size_name,
    subplots,
    write_section,
)
from pymc_discrete.example_models import bernoulli_model, ising_model

#: EJD of the paper (configuration C2): Table 1 (Barker ALBP, ARWM), Tables 5 and 8 (sqrt).
PAPER_EJD = {
    ("Bernoulli N=800", "ALBP (barker)"): 78.63,
    ("Bernoulli N=800", "ALBP (sqrt)"): 72.39,
    ("Bernoulli N=800", "ARWM"): 1.70,
    ("Ising 50x50", "ALBP (barker)"): 96.23,
    ("Ising 50x50", "ALBP (sqrt)"): 105.43,
    ("Ising 50x50", "ARWM"): 1.58,
}
TARGETS = {"ALBP (barker)": 0.574, "ALBP (sqrt)": 0.574, "ARWM": 0.234}
SAMPLERS = {
    "ALBP (barker)": lambda m: pmd.ALBP([m["x"]]),
    "ALBP (sqrt)": lambda m: pmd.ALBP([m["x"]], weight="sqrt"),
    "ARWM": lambda m: pmd.ARWM([m["x"]]),
}


#: M-H steps per draw of the compiled-loop rows
COMPILED_STEPS = 8
LONG_STEPS = 16
COMPILED_LABEL = f"ALBP (sqrt, compiled loop, {COMPILED_STEPS} steps per draw)"
LONG_LABEL = f"ALBP (sqrt, compiled loop, {LONG_STEPS} steps per draw)"
#: M-H steps per PyMC draw of every row (1 unless listed)
STEPS_PER_DRAW = {COMPILED_LABEL: COMPILED_STEPS, LONG_LABEL: LONG_STEPS}


def paper_comparison(draws: int, tune: int) -> tuple[str, list[tuple[str, Measurement]]]:
    """Table of EJD and acceptance next to the paper's."""
    models = {
        "Bernoulli N=800": (bernoulli_model(800, "C2"), (800,)),
        "Ising 50x50": (ising_model(50, "C2"), (50, 50)),
    }
    lines, rows = [], []
    for model_name, (model, shape) in models.items():
        # the paper starts every chain from a uniformly random configuration
        start = {"x": np.random.default_rng(0).integers(0, 2, shape)}
        for label, make_step in SAMPLERS.items():
            print(f"  {model_name}: {label}", flush=True)
            r = measure(model, label, make_step, draws=draws, tune=tune, seed=1, initvals=start)
            paper = PAPER_EJD[(model_name, label)]
            lines.append([model_name, label, f"{r.ejd:.2f}", f"{paper:.2f}",
                          f"{r.ejd / paper:.2f}", f"{r.accept:.3f}", TARGETS[label],
                          f"{r.scale:.1f}"])
            rows.append((model_name, r))
    header = ["model", "sampler", "EJD", "paper EJD", "EJD / paper", "acceptance", "target",
              "tuned R"]
    return markdown_table(header, lines), rows


def ising_against_pymc(draws: int, tune: int, gibbs_draws: int, gibbs_tune: int):
    """ESS/s against BinaryGibbsMetropolis and time per draw against BinaryMetropolis."""
    model = ising_model(50, "C2")
    start = {"x": np.random.default_rng(0).integers(0, 2, (50, 50))}
    per_draw = COMPILED_STEPS
    runs = [
        ("ALBP (barker)", SAMPLERS["ALBP (barker)"], draws, tune),
        ("ALBP (sqrt)", SAMPLERS["ALBP (sqrt)"], draws, tune),
        (COMPILED_LABEL, lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=per_draw,
                                            compiled_loop=True),
         draws // per_draw, tune // per_draw),
        # as many draws as the 8-step row (twice the M-H steps): ESS needs enough draws
        (LONG_LABEL, lambda m: pmd.ALBP([m["x"]], weight="sqrt", steps_per_draw=LONG_STEPS,
                                        compiled_loop=True),
         draws // per_draw, tune // LONG_STEPS),
        ("ARWM", SAMPLERS["ARWM"], draws, tune),
        ("BinaryMetropolis", lambda m: pm.BinaryMetropolis([m["x"]]), draws, tune),
        ("BinaryGibbsMetropolis", lambda m: pm.BinaryGibbsMetropolis([m["x"]]), gibbs_draws,
         gibbs_tune),
    ]
    rows = []
    for label, make_step, n_draws, n_tune in runs:
        print(f"  Ising 50x50: {label}", flush=True)
        rows.append(measure(model, label, make_step, draws=n_draws, tune=n_tune, seed=2,
                            initvals=start))
    return rows


#: draws and tuning draws per chain of ALBP and ARWM, and of BinaryGibbsMetropolis
SIZES = {"full": (10000, 10000, 300, 100), "quick": (1000, 1000, 30, 15),
         "smoke": (80, 80, 4, 4)}


def main(quick: bool = False, smoke: bool = False) -> None:
    size = size_name(quick, smoke)
    draws, tune, gibbs_draws, gibbs_tune = SIZES[size]
    print("EJD against the paper ...", flush=True)
    paper_table, _ = paper_comparison(draws, tune)
    print("Ising 50x50 against PyMC's samplers ...", flush=True)
    rows = ising_against_pymc(draws, tune, gibbs_draws, gibbs_tune)
    metropolis = next(r for r in rows if r.sampler == "BinaryMetropolis")
    time_rows = []
    for r in rows:
        steps = STEPS_PER_DRAW.get(r.sampler, 1)
        gibbs = r.sampler == "BinaryGibbsMetropolis"
        time_rows.append([r.sampler, f"{r.time_per_draw_ms:.3f}",
                          f"{r.time_per_draw_ms / metropolis.time_per_draw_ms:.2f}x",
                          "-" if gibbs else steps,
                          "-" if gibbs else f"{r.time_per_draw_ms / steps:.3f}"])
    time_table = markdown_table(["sampler", "ms/draw", "ms/draw vs BinaryMetropolis",
                                 "M-H steps per draw", "ms per M-H step"], time_rows)

    fig, axes = subplots(1, 3, figsize=(13, 4))
    labels = [r.sampler for r in rows]
    for ax, values, ylabel in zip(
        axes,
        [[r.ess_logp_per_s for r in rows], [r.ess_site_per_s for r in rows],
         [r.time_per_draw_ms for r in rows]],
        ["ESS/s of the log density", "median site ESS/s", "ms per draw"],
    ):
        ax.bar(labels, values)
        ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle("Ising 50x50 (C2)")
    fig.tight_layout()
    save_figure(fig, "core_ising.png")

    text = f"""## Core: ALBP and ARWM on the paper's configurations

{provenance("run_core", size)}

Definitions (see `benchmarks/harness.py`): every sampler runs through `pm.sample` with
`cores=1`, 2 chains, from the same uniformly random start; EJD is the mean number of sites
that change between consecutive post-tuning draws; ESS is ArviZ's bulk ESS of the log
density and the median over sites (at most 400, chosen at random) of the per-site bulk ESS; ESS/s divides by the time of
the post-tuning draws; ms/draw is sampling time over all iterations (tuning included).

### EJD and acceptance against the optimal-scaling paper (configuration C2)

{draws} draws after {tune} tuning draws per chain (the paper: 20,000 after 20,000 burn-in;
ARWM moves about two sites per draw and needs thousands of draws to forget its start).
Paper values: Table 1 (ALBP with Barker weights, ARWM) and Tables 5 and 8 (ALBP with sqrt
weights).

{paper_table}

### Ising 50x50 (C2): ESS per second against PyMC's default

ALBP/ARWM/BinaryMetropolis: {draws} draws after {tune} tuning per chain;
"{COMPILED_LABEL}" (`ALBP(weight="sqrt", steps_per_draw={COMPILED_STEPS}, compiled_loop=True)`:
{COMPILED_STEPS} M-H steps per PyMC draw inside one numba-compiled loop that calls the
model's NUMBA-mode log density and gradient) the same number of M-H steps, in
{draws // COMPILED_STEPS} draws after {tune // COMPILED_STEPS}; "{LONG_LABEL}": the same
number of draws ({draws // COMPILED_STEPS}, so twice the M-H steps, for an ESS estimate
from as many draws) after {tune // LONG_STEPS}: PyMC's per-draw work (about 0.3 ms on
2500 sites) is spread over twice the steps;
BinaryGibbsMetropolis (one logp per site, a sweep per draw): {gibbs_draws} draws after
{gibbs_tune}.

{format_table(rows, baseline="BinaryGibbsMetropolis")}

### Ising 50x50 (C2): time per draw against pm.BinaryMetropolis

{time_table}

![Ising 50x50](core_ising.png)
"""
    write_section("core", text)
    print(text)


if __name__ == "__main__":
    cli(main)
