"""Exact against gradient local ratios (issue: exact local differences).

1. Cost of one exact evaluation (log density and all N single-flip ratios) on Ising
   lattices from 20x20 to 100x100 (N = 400 .. 10,000), with the log-log slope of cost
   against N: the colouring keeps it linear for sparse interactions.
2. ALBP with gradient and with exact ratios on the Ising 50x50 (where the gradient ratios
   are already exact) and on a sparse-signal model with a Gaussian likelihood (where they
   are first-order only), inside ``pm.sample`` next to NUTS.

Writes its section of ``benchmarks/RESULTS.md``. Run with ``python -m benchmarks.run_exact``
(part of ``make bench``).
"""

from __future__ import annotations

import datetime
import sys
import time

import arviz as az
import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import (
    format_table,
    machine_description,
    measure,
    median_site_ess,
    write_section,
)
from pymc_discrete.example_models import (
    binarised_digits,
    fhmm_model,
    ising_model,
    rbm_model,
    train_rbm,
)


def _median_call_us(fn, x, repeats: int = 200) -> float:
    fn(x)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - start)
    return 1e6 * float(np.median(times))


def scaling(sides=(20, 40, 60, 80, 100)) -> str:
    lines = ["| lattice | N | colours | terms | exact call (us) | gradient call (us) |",
             "|---|---|---|---|---|---|"]
    ns, costs = [], []
    for side in sides:
        model = ising_model(side, "C2")
        exact = pmd.ALBP([model["x"]], model=model, proposal="exact")
        gradient = pmd.ALBP([model["x"]], model=model)
        x = np.random.default_rng(0).integers(0, 2, side * side)
        t_exact = _median_call_us(exact._logp_and_ratios, x)
        t_grad = _median_call_us(gradient._logp_and_ratios, x)
        s = exact._logp_and_ratios.structure
        lines.append(f"| {side}x{side} | {side * side} | {s.n_colours} | "
                     f"{exact._logp_and_ratios.n_terms} | {t_exact:.0f} | {t_grad:.0f} |")
        ns.append(side * side)
        costs.append(t_exact)
        print(lines[-1], flush=True)
    slope = np.polyfit(np.log(ns), np.log(costs), 1)[0]
    return "\n".join(lines) + f"\n\nLog-log slope of the exact call cost against N: **{slope:.2f}**."


def gradient_vs_exact(model, name: str, shape, draws: int, tune: int) -> str:
    """ALBP with both proposals on a single-variable model, from the same random start."""
    start = {"x": np.random.default_rng(0).integers(0, 2, shape)}
    rows = []
    for label, proposal in [("ALBP gradient", "gradient"), ("ALBP exact", "exact")]:
        print(f"  {name}: {label}", flush=True)
        rows.append(measure(model, label, lambda m, p=proposal: pmd.ALBP([m["x"]], proposal=p),
                            draws=draws, tune=tune, seed=3, initvals=start))
    return format_table(rows, baseline="ALBP gradient")


def signal_model():
    rng = np.random.default_rng(0)
    is_signal = rng.random(500) < 0.1
    data = rng.normal(np.where(is_signal, 3.0, 0.0), 1.0)
    with pm.Model() as model:
        w = pm.Beta("w", 1, 1)
        mu = pm.HalfNormal("mu", 5)
        g = pm.Bernoulli("g", w, shape=500)
        pm.Normal("y", mu=mu * g, sigma=1, observed=data)
    return model


def signal_gradient_vs_exact(draws: int, tune: int) -> str:
    model = signal_model()
    lines = ["| proposal | ratios exact | accept | R | EJD | ms/draw | ESS/s mu | median site ESS/s g |",
             "|---|---|---|---|---|---|---|---|"]
    for proposal in ("gradient", "exact"):
        print(f"  sparse signal: {proposal}", flush=True)
        with model:
            step = pmd.ALBP([model["g"]], proposal=proposal)
            pm.sample(step=[step], draws=50, tune=50, chains=1, random_seed=1,
                      progressbar=False, compute_convergence_checks=False)
            idata = pm.sample(step=[step], draws=draws, tune=tune, chains=2, cores=1,
                              random_seed=1, progressbar=False, compute_convergence_checks=False)
        seconds = float(idata.sample_stats.attrs["sampling_time"])
        per_draw = seconds / (2 * (draws + tune))
        post = per_draw * 2 * draws
        stats = idata.sample_stats
        ess_mu = float(az.ess(idata, var_names=["mu"])["mu"])
        g = idata.posterior["g"].values.astype(float)
        lines.append(
            f"| {proposal} | {step.ratios_are_exact} | {float(stats['accept'].mean()):.3f} | "
            f"{float(stats['scaling'].values[:, -1].mean()):.1f} | "
            f"{float(stats['jump_distance'].mean()):.2f} | {1e3 * per_draw:.3f} | "
            f"{ess_mu / post:.1f} | {median_site_ess(g) / post:.1f} |"
        )
        print(lines[-1], flush=True)
    return "\n".join(lines)


def main(quick: bool = False) -> None:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python -m benchmarks.run_exact" + (" --quick" if quick else "")
    ising_n, fhmm_n, rbm_n = (300, 200, 300) if quick else (5000, 3000, 5000)
    signal_draws, signal_tune = (200, 200) if quick else (2000, 1000)
    print("scaling ...", flush=True)
    scale_table = scaling((20, 40, 60) if quick else (20, 40, 60, 80, 100))
    print("Ising gradient vs exact ...", flush=True)
    ising_table = gradient_vs_exact(ising_model(50, "C2"), "Ising 50x50", (50, 50), ising_n,
                                    ising_n)
    print("FHMM gradient vs exact ...", flush=True)
    fhmm_table = gradient_vs_exact(fhmm_model(1000, 5, 1.0), "FHMM", (1000, 5), fhmm_n, fhmm_n)
    print("RBM gradient vs exact ...", flush=True)
    W, b, c = train_rbm(binarised_digits(), n_hidden=50)
    rbm_table = gradient_vs_exact(rbm_model(W, b, c), "RBM", (64,), rbm_n, rbm_n)
    print("sparse signal gradient vs exact ...", flush=True)
    signal_table = signal_gradient_vs_exact(signal_draws, signal_tune)
    text = f"""## Exact against gradient local ratios

Produced by `{command}` on {stamp}.
Machine: {machine_description()}.

### Cost of the exact ratios against N (Ising lattices, C2)

One call computes the log density and all N exact single-flip log-ratios (median of 200
calls); the gradient call computes the relaxed log density and its gradient.

{scale_table}

### Ising 50x50 (C2): the gradient ratios are exact here

{ising_n} draws after {ising_n} tuning draws per chain, 2 chains.

{ising_table}

### FHMM posterior (L = 1000, K = 5, sigma^2 = 1; Appendix D.3, C2)

K binary Markov chains over 1000 steps (stay probability 0.8), `y_l ~ N(w . x_l + b, 1)`:
the likelihood is quadratic in x, so gradient ratios are first-order. {fhmm_n} draws after
{fhmm_n} tuning draws per chain, 2 chains.

{fhmm_table}

### RBM over binarised scikit-learn digits (64 visible, 50 hidden, CD-1)

Marginal of the visible units, `b . v + sum_j softplus(c_j + (v W)_j)`: every hidden unit
couples all 64 visible units (dense: 64 colours, brute force). {rbm_n} draws after {rbm_n}
tuning draws per chain, 2 chains.

{rbm_table}

### Sparse signal (500 indicators, Gaussian likelihood, w and mu by NUTS)

`y_i ~ N(mu g_i, 1)`: the gradient ratio misses the quadratic term `mu^2 / 2` of the
likelihood. {signal_draws} draws after {signal_tune} tuning draws per chain, 2 chains; ESS/s over the
post-tuning draws.

{signal_table}
"""
    write_section("exact", text)
    print(text)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
