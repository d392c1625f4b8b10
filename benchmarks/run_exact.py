"""Exact against gradient local ratios: what the exact ratios cost, and what they buy.

Section ``exact`` of ``benchmarks/RESULTS.md``:

1. Cost of one exact evaluation (log density and all N single-flip ratios) on Ising
   lattices from 20x20 to 100x100 (N = 400 .. 10,000), with the log-log slope of cost
   against N: the colouring keeps it linear for sparse interactions.
2. ALBP with gradient and with exact ratios on the Ising 50x50 (where the gradient ratios
   are already exact), an FHMM posterior and an RBM (where they are first-order only),
   and on a sparse-signal model with a Gaussian likelihood inside ``pm.sample`` next to
   NUTS.

Section ``exact_setup``: the set-up time of ``proposal="exact"`` against the number of
sites, from 10^3 to 10^5, on an Ising lattice and on indicators in a Gaussian likelihood
(one observation a site: ``g_i ~ Bernoulli(w)``, ``y_i ~ N(mu g_i, 1)``, w and mu
continuous): the stages of the exact ratios' set-up as the step reports them
(``step.exact_ratios.setup_report``) and the whole ``pmd.ALBP(..., proposal="exact")``
construction, each built twice on a fresh model, the second time measured (PyTensor's
compilation cache is then warm: a first-ever compilation is not what grows with N).

Run with ``python -m benchmarks.run_exact`` (``--quick``, ``--smoke``: smaller sizes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import arviz as az
import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    cell,
    cli,
    format_table,
    markdown_table,
    measure,
    median_site_ess,
    provenance,
    size_name,
    write_section,
)
from pymc_discrete.example_models import (
    binarised_digits,
    fhmm_model,
    ising_model,
    rbm_model,
    train_rbm,
)


def signal_model(n: int = 500) -> pm.Model:
    """``n`` indicators, each with one Gaussian observation of mean ``mu g_i``."""
    rng = np.random.default_rng(0)
    data = rng.normal(np.where(rng.random(n) < 0.1, 3.0, 0.0), 1.0)
    with pm.Model() as model:
        w = pm.Beta("w", 1, 1)
        mu = pm.HalfNormal("mu", 5)
        g = pm.Bernoulli("g", w, shape=n)
        pm.Normal("y", mu=mu * g, sigma=1, observed=data)
    return model


def _median_call_us(fn, x, repeats: int = 200) -> float:
    fn(x)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - start)
    return 1e6 * float(np.median(times))


def _slope(ns, values) -> float:
    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])


def call_costs(sides) -> str:
    """The exact and the gradient call (``step.kernel.target``) against N."""
    rows, ns, costs = [], [], []
    for side in sides:
        model = ising_model(side, "C2")
        # the Python path of both (no compiled loop): the same kind of call at every size
        exact = pmd.ALBP([model["x"]], model=model, proposal="exact", compiled_loop=False)
        gradient = pmd.ALBP([model["x"]], model=model, compiled_loop=False)
        x = np.random.default_rng(0).integers(0, 2, side * side)
        t_exact = _median_call_us(exact.kernel.target, x)
        t_grad = _median_call_us(gradient.kernel.target, x)
        ratios = exact.exact_ratios
        rows.append([f"{side}x{side}", side * side, ratios.structure.n_colours,
                     ratios.n_terms, f"{t_exact:.0f}", f"{t_grad:.0f}"])
        ns.append(side * side)
        costs.append(t_exact)
        print(f"  {side}x{side}: exact {t_exact:.0f} us, gradient {t_grad:.0f} us", flush=True)
    table = markdown_table(["lattice", "N", "colours", "terms", "exact call (us)",
                            "gradient call (us)"], rows)
    return (f"{table}\n\nLog-log slope of the exact call cost against N: "
            f"**{_slope(ns, costs):.2f}**.")


def gradient_vs_exact(model, name: str, draws: int) -> str:
    """ALBP with both proposals on a single-variable model, from the same random start,
    ``draws`` draws after as many tuning draws."""
    shape = model.initial_point()["x"].shape
    start = {"x": np.random.default_rng(0).integers(0, 2, shape)}
    rows = []
    for label, proposal in [("ALBP gradient", "gradient"), ("ALBP exact", "exact")]:
        print(f"  {name}: {label}", flush=True)
        rows.append(measure(model, label, lambda m, p=proposal: pmd.ALBP([m["x"]], proposal=p),
                            draws=draws, tune=draws, seed=3, initvals=start))
    return format_table(rows, baseline="ALBP gradient")


def signal_gradient_vs_exact(n: int, draws: int, tune: int) -> str:
    """ALBP with both proposals for the indicators of :func:`signal_model`, NUTS for the
    rest: ESS/s of ``mu`` and of the median indicator."""
    model = signal_model(n)
    rows = []
    for proposal in ("gradient", "exact"):
        print(f"  sparse signal: {proposal}", flush=True)
        with model:
            step = pmd.ALBP([model["g"]], proposal=proposal)
            pm.sample(step=[step], draws=min(50, draws), tune=min(50, tune), chains=1,
                      random_seed=1, progressbar=False, compute_convergence_checks=False)
            idata = pm.sample(step=[step], draws=draws, tune=tune, chains=2, cores=1,
                              random_seed=1, progressbar=False, compute_convergence_checks=False)
        seconds = float(idata.sample_stats.attrs["sampling_time"])
        per_draw = seconds / (2 * (draws + tune))
        post = per_draw * 2 * draws
        stats = idata.sample_stats
        ess_mu = float(az.ess(idata, var_names=["mu"])["mu"])
        g = idata.posterior["g"].values.astype(float)
        rows.append([proposal, step.ratios_are_exact, f"{float(stats['accept'].mean()):.3f}",
                     f"{float(stats['scaling'].values[:, -1].mean()):.1f}",
                     f"{float(stats['jump_distance'].mean()):.2f}", f"{1e3 * per_draw:.3f}",
                     f"{ess_mu / post:.1f}", f"{median_site_ess(g) / post:.1f}"])
    return markdown_table(["proposal", "ratios exact", "accept", "R", "EJD", "ms/draw",
                           "ESS/s mu", "median site ESS/s g"], rows)


# --------------------------------------------------------------------------------------
# set-up against N
# --------------------------------------------------------------------------------------


@dataclass
class Setup:
    """What building ``pmd.ALBP(..., proposal="exact")`` once took."""

    n: int
    terms: int
    colours: int
    groups: object
    rows: object
    seconds: dict  # the set-up's stages, and "total"
    albp: float  # the whole construction


def measure_setup(build, var: str) -> Setup:
    """Build ALBP with exact ratios on ``build()`` twice (a fresh model each time); the
    second build's set-up."""
    for _ in range(2):
        model = build()
        began = time.perf_counter()
        step = pmd.ALBP([model[var]], model=model, proposal="exact")
        albp = time.perf_counter() - began
    exact = step.exact_ratios
    report = exact.setup_report
    return Setup(int(model.initial_point()[var].size), int(exact.n_terms),
                 int(exact.structure.n_colours), report.get("groups"), report.get("rows"),
                 dict(report["seconds"]), albp)


def setup_table(title: str, setups: list[Setup]) -> str:
    stages = list(dict.fromkeys(k for s in setups for k in s.seconds if k != "total"))
    rows = [[s.n, s.terms, s.groups if s.groups is not None else "-", s.colours,
             s.rows if s.rows is not None else "-",
             *(cell(s.seconds.get(k, float("nan")), ".2f") for k in stages),
             cell(s.seconds["total"], ".2f"), cell(s.albp, ".2f")] for s in setups]
    table = markdown_table(["N", "terms M", "groups", "colours", "rows evaluated",
                            *(f"{k} s" for k in stages), "set-up s", "ALBP() s"], rows)
    ns = [s.n for s in setups]
    slopes = (f"the exact ratios' set-up **{_slope(ns, [s.seconds['total'] for s in setups]):.2f}**, "
              f"the whole `ALBP()` construction **{_slope(ns, [s.albp for s in setups]):.2f}**")
    return f"### {title}\n\n{table}\n\nLog-log slope against N: {slopes}."


def setup_section(size: str, ising_sides, signal_sizes) -> str:
    parts = []
    for title, build, var, sizes in (
            (f"Ising lattices (C2), {ising_sides[0]}x{ising_sides[0]} to "
             f"{ising_sides[-1]}x{ising_sides[-1]}", ising_model, "x", ising_sides),
            ("Indicators in a Gaussian likelihood (one observation a site)", signal_model,
             "g", signal_sizes)):
        setups = []
        for s in sizes:
            print(f"  set-up: {var} of {s}", flush=True)
            setups.append(measure_setup(lambda s=s, build=build: build(s), var))
        parts.append(setup_table(title, setups))
    body = "\n\n".join(parts)
    return f"""## Exact-ratio set-up against N (grouped discovery of the term structure)

{provenance("run_exact", size)}

`pmd.ALBP([x], proposal="exact")` on sparse models. Columns: the number of elementwise
terms M; the groups of sites probed together (sites that share no term the graph says
they may depend on) and the colours of the final structure; the batched term
evaluations (rows) the discovery made; the stages of the exact ratios' set-up in seconds,
as the step reports them (`step.exact_ratios.setup_report`), and their total; the whole
`ALBP()` construction (it also checks the ratios against single flips at up to 200 sites).
Each number is from the second of two constructions on fresh models (PyTensor's
compilation cache is warm; a first-ever compilation of the batched terms takes 5-60 s
more, whatever the discovery).

{body}
"""


@dataclass(frozen=True)
class Budget:
    """Sizes and draws of one run size."""

    sides: tuple  # the cost of one call
    ising: int  # lattice side of the gradient-vs-exact runs
    ising_draws: int
    fhmm: int  # FHMM length
    fhmm_draws: int
    rbm_draws: int
    signal: int  # indicators of the sparse signal
    signal_draws: int
    signal_tune: int
    setup_sides: tuple
    setup_sizes: tuple


BUDGETS = {
    "full": Budget((20, 40, 60, 80, 100), 50, 5000, 1000, 3000, 5000, 500, 2000, 1000,
                   (32, 100, 178, 316), (1000, 10000, 31623, 100000)),
    "quick": Budget((20, 40, 60), 50, 300, 1000, 200, 300, 500, 200, 200, (32, 100),
                    (1000, 10000)),
    "smoke": Budget((6, 10), 8, 30, 30, 30, 30, 50, 30, 30, (6, 10), (50, 100)),
}


def main(quick: bool = False, smoke: bool = False) -> None:
    size = size_name(quick, smoke)
    b = BUDGETS[size]
    print("cost of a call ...", flush=True)
    scale_table = call_costs(b.sides)
    print("Ising gradient vs exact ...", flush=True)
    ising_table = gradient_vs_exact(ising_model(b.ising, "C2"), "Ising", b.ising_draws)
    print("FHMM gradient vs exact ...", flush=True)
    fhmm_table = gradient_vs_exact(fhmm_model(b.fhmm, 5, 1.0), "FHMM", b.fhmm_draws)
    print("RBM gradient vs exact ...", flush=True)
    W, bias, c = train_rbm(binarised_digits(), n_hidden=50)
    rbm_table = gradient_vs_exact(rbm_model(W, bias, c), "RBM", b.rbm_draws)
    print("sparse signal gradient vs exact ...", flush=True)
    signal_table = signal_gradient_vs_exact(b.signal, b.signal_draws, b.signal_tune)
    text = f"""## Exact against gradient local ratios

{provenance("run_exact", size)}

### Cost of the exact ratios against N (Ising lattices, C2)

One call computes the log density and all N exact single-flip log-ratios (median of 200
calls); the gradient call computes the relaxed log density and its gradient. Both are
the function the step's kernel evaluates (`step.kernel.target`), built without the
compiled loop (`compiled_loop=False`).

{scale_table}

### Ising {b.ising}x{b.ising} (C2): the gradient ratios are exact here

{b.ising_draws} draws after {b.ising_draws} tuning draws per chain, 2 chains.

{ising_table}

### FHMM posterior (L = {b.fhmm}, K = 5, sigma^2 = 1; Appendix D.3, C2)

K binary Markov chains over {b.fhmm} steps (stay probability 0.8), `y_l ~ N(w . x_l + b, 1)`:
the likelihood is quadratic in x, so gradient ratios are first-order. {b.fhmm_draws} draws
after {b.fhmm_draws} tuning draws per chain, 2 chains.

{fhmm_table}

### RBM over binarised scikit-learn digits (64 visible, 50 hidden, CD-1)

Marginal of the visible units, `b . v + sum_j softplus(c_j + (v W)_j)`: every hidden unit
couples all 64 visible units (dense: 64 colours, brute force). {b.rbm_draws} draws after
{b.rbm_draws} tuning draws per chain, 2 chains.

{rbm_table}

### Sparse signal ({b.signal} indicators, Gaussian likelihood, w and mu by NUTS)

`y_i ~ N(mu g_i, 1)`: the gradient ratio misses the quadratic term `mu^2 / 2` of the
likelihood. {b.signal_draws} draws after {b.signal_tune} tuning draws per chain, 2 chains;
ESS/s over the post-tuning draws.

{signal_table}
"""
    write_section("exact", text)
    print(text)
    print("set-up against N ...", flush=True)
    setup = setup_section(size, b.setup_sides, b.setup_sizes)
    write_section("exact_setup", setup)
    print(setup)


if __name__ == "__main__":
    cli(main)
