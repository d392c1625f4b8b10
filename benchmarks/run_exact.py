"""Exact against gradient local ratios (issue: exact local differences).

1. Cost of one exact evaluation (log density and all N single-flip ratios) on Ising
   lattices from 20x20 to 100x100 (N = 400 .. 10,000), with the log-log slope of cost
   against N: the colouring keeps it linear for sparse interactions.
2. ALBP with gradient and with exact ratios on the Ising 50x50 (where the gradient ratios
   are already exact) and on a sparse-signal model with a Gaussian likelihood (where they
   are first-order only), inside ``pm.sample`` next to NUTS.

Appends its tables to ``benchmarks/RESULTS_EXACT.md``. Run with
``python benchmarks/run_exact.py``.
"""

from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pymc_discrete as pmd  # noqa: E402
from benchmarks.harness import format_table, machine_description, measure  # noqa: E402
from pymc_discrete.pymc.models import ising_model  # noqa: E402


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


def ising_gradient_vs_exact(draws: int, tune: int) -> str:
    model = ising_model(50, "C2")
    start = {"x": np.random.default_rng(0).integers(0, 2, (50, 50))}
    rows = []
    for label, proposal in [("ALBP gradient", "gradient"), ("ALBP exact", "exact")]:
        print(f"  Ising 50x50: {label}", flush=True)
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
        site_ess = np.asarray(az.ess(g, method="bulk"))
        varying = g.std(axis=(0, 1)) > 0
        lines.append(
            f"| {proposal} | {step.ratios_are_exact} | {float(stats['accept'].mean()):.3f} | "
            f"{float(stats['scaling'].values[:, -1].mean()):.1f} | "
            f"{float(stats['jump_distance'].mean()):.2f} | {1e3 * per_draw:.3f} | "
            f"{ess_mu / post:.1f} | {np.median(site_ess[varying]) / post:.1f} |"
        )
        print(lines[-1], flush=True)
    return "\n".join(lines)


def main() -> None:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print("scaling ...", flush=True)
    scale_table = scaling()
    print("Ising gradient vs exact ...", flush=True)
    ising_table = ising_gradient_vs_exact(5000, 5000)
    print("sparse signal gradient vs exact ...", flush=True)
    signal_table = signal_gradient_vs_exact(2000, 1000)
    text = f"""# Exact against gradient local ratios

Produced by `python benchmarks/run_exact.py` on {stamp}.
Machine: {machine_description()}.

## Cost of the exact ratios against N (Ising lattices, C2)

One call computes the log density and all N exact single-flip log-ratios (median of 200
calls); the gradient call computes the relaxed log density and its gradient.

{scale_table}

## Ising 50x50 (C2): the gradient ratios are exact here

5000 draws after 5000 tuning draws per chain, 2 chains.

{ising_table}

## Sparse signal (500 indicators, Gaussian likelihood, w and mu by NUTS)

`y_i ~ N(mu g_i, 1)`: the gradient ratio misses the quadratic term `mu^2 / 2` of the
likelihood. 2000 draws after 1000 tuning draws per chain, 2 chains; ESS/s over the
post-tuning draws.

{signal_table}
"""
    (ROOT / "benchmarks" / "RESULTS_EXACT.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
