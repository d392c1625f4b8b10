"""SAMCMC, the tuning-free step method for continuous variables, against PyMC's
gradient-free samplers.

ESS per logp evaluation and per second of SAMCMC against PyMC's gradient-free samplers,
`pm.Metropolis` (its scale tuned during the tune phase) and `pm.DEMetropolisZ`:

1. correlated Gaussians of dimension 2 to 50 (covariance with eigenvalues log-uniform on
   [0.1, 10], a random rotation);
2. the paper's Bayesian logistic regression on digits 7 vs 9 reduced to 10 principal
   components (scikit-learn's 8x8 digits stand in for MNIST, which is not shipped
   offline), standard normal prior, 11 coefficients.

PyMC's samplers do one logp evaluation per draw; SAMCMC does ``steps_per_draw`` (and N
for its initial population), and runs fewer draws for a similar number of evaluations.
ESS per evaluation counts the post-tuning evaluations. Writes the section ``samcmc`` of
``benchmarks/RESULTS.md``. Run with ``python -m benchmarks.run_samcmc`` (``--quick``,
``--smoke``: fewer draws and dimensions).
"""

from __future__ import annotations

import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

import pymc_discrete as pmd
from benchmarks.harness import cli, markdown_table, provenance, size_name, write_section

SAMPLERS = {
    "SAMCMC": lambda m: pmd.SAMCMC(model=m),
    "Metropolis": lambda m: pm.Metropolis(),
    "DEMetropolisZ": lambda m: pm.DEMetropolisZ(),
}


def correlated_gaussian(d: int, seed: int = 0) -> pm.Model:
    """MvNormal with a random covariance of condition number 100."""
    rng = np.random.default_rng(seed + d)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    cov = q @ np.diag(np.exp(rng.uniform(np.log(0.1), np.log(10.0), d))) @ q.T
    with pm.Model() as model:
        pm.MvNormal("x", np.zeros(d), cov=cov)
    return model


def digits_logistic_regression() -> pm.Model:
    """Logistic regression of 7 vs 9 on 10 principal components of the 8x8 digits."""
    from sklearn.datasets import load_digits

    data = load_digits()
    keep = np.isin(data.target, (7, 9))
    X = data.data[keep] / 16.0
    X = X - X.mean(0)
    _, _, vt = np.linalg.svd(X, full_matrices=False)
    Z = X @ vt[:10].T
    Z = (Z - Z.mean(0)) / Z.std(0)
    y = (data.target[keep] == 9).astype(int)
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=10)
        b = pm.Normal("b", 0.0, 1.0)
        pm.Bernoulli("y", logit_p=Z @ w + b, observed=y)
    return model


def run(model: pm.Model, make_step, draws: int, tune: int, chains: int = 2,
        evals_per_draw: int = 1, least: tuple[int, int] = (1000, 200)) -> dict:
    """Sample and measure; SAMCMC (``steps_per_draw`` iterations a draw) runs
    ``max(least[0], draws / steps_per_draw)`` draws after
    ``max(least[1], tune / steps_per_draw)``."""
    with model:
        step = make_step(model)
        per_draw = getattr(step, "steps_per_draw", 1)  # SAMCMC: iterations per draw
        if per_draw > 1:
            evals_per_draw *= per_draw
            draws = max(least[0], draws // per_draw)
            tune = max(least[1], tune // per_draw)
        start = time.perf_counter()
        idata = pm.sample(step=step, draws=draws, tune=tune, chains=chains, cores=1,
                          random_seed=1, progressbar=False, compute_convergence_checks=False)
        seconds = time.perf_counter() - start
    ess = az.ess(idata, method="bulk")
    min_ess = min(float(ess[v].min()) for v in ess.data_vars)
    sampling_seconds = seconds * draws / (draws + tune)
    stats = idata.sample_stats
    # the fraction of accepted proposals: PyMC's Metropolis steps report the M-H ratio
    # (not capped at 1) as "accept", so use "accepted" for every sampler
    accept = float(np.mean(stats["accepted"].values)) if "accepted" in stats else float("nan")
    return {"min_ess": min_ess, "draws": draws, "evals_per_draw": evals_per_draw,
            "per_eval": min_ess / (chains * draws * evals_per_draw),
            "per_s": min_ess / sampling_seconds, "accept": accept, "seconds": seconds}


def table(rows: list[tuple[str, str, dict]]) -> str:
    base = {m: r for m, s, r in rows if s == "Metropolis"}
    return markdown_table(
        ["model", "sampler", "draws", "evals per draw", "accepted", "min ESS",
         "min ESS per 1000 evals", "min ESS/s", "per eval vs Metropolis"],
        [[model, sampler, r["draws"], r["evals_per_draw"], f"{r['accept']:.3f}",
          f"{r['min_ess']:.0f}", f"{1000 * r['per_eval']:.1f}", f"{r['per_s']:.1f}",
          f"{r['per_eval'] / base[model]['per_eval']:.1f}x"] for model, sampler, r in rows])


#: dimensions of the Gaussians, draws and tuning draws, SAMCMC's least draws and tuning
BUDGETS = {"full": ((2, 5, 10, 20, 50), 10000, 5000, (1000, 200)),
           "quick": ((2, 10), 2000, 1000, (1000, 200)),
           "smoke": ((2,), 60, 30, (30, 20))}


def main(quick: bool = False, smoke: bool = False) -> None:
    size = size_name(quick, smoke)
    dims, draws, tune, least = BUDGETS[size]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for d in dims:
            model = correlated_gaussian(d)
            for label, make_step in SAMPLERS.items():
                print(f"  Gaussian d={d}: {label}", flush=True)
                rows.append((f"Gaussian d={d}", label,
                             run(model, make_step, draws, tune, least=least)))
        model = digits_logistic_regression()
        for label, make_step in SAMPLERS.items():
            print(f"  logistic regression: {label}", flush=True)
            # pm.Metropolis is not blocked: one step, one evaluation, per variable (w, b)
            evals = len(model.value_vars) if label == "Metropolis" else 1
            rows.append(("logistic regression (11 dims)", label,
                         run(model, make_step, draws, tune, evals_per_draw=evals,
                             least=least)))
    text = f"""## SAMCMC: Sample Adaptive MCMC against PyMC's gradient-free samplers

{provenance("run_samcmc", size)}

PyMC's samplers: {draws} draws after {tune} tuning draws per chain; SAMCMC:
max({least[0]}, {draws} / steps_per_draw) draws after max({least[1]}, {tune} / steps_per_draw); 2
chains, `cores=1`. "min ESS" is the smallest bulk ESS over the coordinates (ArviZ).
PyMC's samplers evaluate the log density once per draw, except pm.Metropolis on the
logistic regression, which updates its two variables (w, b) in two steps; SAMCMC
evaluates it steps_per_draw times per draw. "per 1000 evals" counts the evaluations of
the post-tuning draws (SAMCMC also spends N evaluations on its initial population).
SAMCMC uses its defaults (Gaussian proposal, full covariance, N = max(20, 10 d), a point
of the population drawn at random reported after every steps_per_draw iterations; ArviZ's
MCSE of these draws is honest, tests/samcmc/test_step.py); pm.Metropolis tunes its
proposal scale during the tune phase;
pm.DEMetropolisZ tunes its scale and uses its default history. Gaussians: covariance
with eigenvalues log-uniform on [0.1, 10] and a random rotation. Logistic regression:
digits 7 vs 9 of scikit-learn's 8x8 digits, 10 principal components (the paper used
MNIST), standard normal prior on the 11 coefficients.

{table(rows)}
"""
    write_section("samcmc", text)
    print(text)


if __name__ == "__main__":
    cli(main)
