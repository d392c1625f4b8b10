"""Bayesian variable selection (spike-and-slab) on scikit-learn's diabetes data.

The 10 standardised predictors are expanded with their 45 pairwise interactions (55 in
all). Inclusion indicators ``g`` are sampled by ALBP with exact local ratios (the Gaussian
likelihood is quadratic in ``g``, so a gradient would only estimate them), the
coefficients, intercept and noise scale by NUTS in the same ``pm.sample`` call. Prints and
plots the posterior inclusion probabilities. Run:
``.venv/bin/python examples/spike_and_slab.py`` (about a minute).
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import arviz as az  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_discrete as pmd  # noqa: E402

HERE = Path(__file__).resolve().parent


def design() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Standardised main effects and pairwise interactions, the centred response, names."""
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    X, names = data.data, list(data.feature_names)
    columns, labels = [X[:, j] for j in range(X.shape[1])], names[:]
    for a, b in combinations(range(X.shape[1]), 2):
        columns.append(X[:, a] * X[:, b])
        labels.append(f"{names[a]}:{names[b]}")
    Z = np.column_stack(columns)
    Z = (Z - Z.mean(0)) / Z.std(0)
    y = (data.target - data.target.mean()) / data.target.std()
    return Z, y, labels


def spike_and_slab_model(Z: np.ndarray, y: np.ndarray) -> pm.Model:
    """Linear regression with inclusion indicators ``g`` (prior 0.1 each), coefficients
    ``beta ~ N(0, 0.5)``, intercept ``alpha`` and noise scale ``sigma``."""
    p = Z.shape[1]
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.1, shape=p)
        beta = pm.Normal("beta", 0.0, 0.5, shape=p)
        sigma = pm.HalfNormal("sigma", 1.0)
        alpha = pm.Normal("alpha", 0.0, 1.0)
        pm.Normal("y", mu=alpha + pm.math.dot(Z, g * beta), sigma=sigma, observed=y)
    return model


def main(draws: int = 1000, tune: int = 1000, out: Path = HERE / "spike_and_slab.png",
         chains: int = 2) -> dict[str, float]:
    """Sample the model; returns the posterior inclusion probability of every predictor."""
    Z, y, labels = design()
    p = Z.shape[1]
    with spike_and_slab_model(Z, y) as model:
        g = model["g"]
        idata = pm.sample(step=[pmd.ALBP([g], proposal="exact")], draws=draws, tune=tune,
                          chains=chains, random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    pip = idata.posterior["g"].mean(("chain", "draw")).values
    n_active = idata.posterior["g"].sum("g_dim_0")
    print(f"ALBP: acceptance {float(idata.sample_stats['accept'].mean()):.3f}, "
          f"{float(idata.sample_stats['jump_distance'].mean()):.2f} indicators change per draw; "
          f"active predictors {float(n_active.mean()):.1f} "
          f"(bulk ESS {float(az.ess(n_active, method='bulk')):.0f})")
    order = np.argsort(pip)[::-1]
    for j in order[:10]:
        print(f"  {labels[j]:>10s}  P(included) = {pip[j]:.3f}")
    fig, ax = plt.subplots(figsize=(12, 4))
    ax.bar(range(p), pip[order])
    ax.set_xticks(range(p), [labels[j] for j in order], rotation=90, fontsize=7)
    ax.set_ylabel("posterior inclusion probability")
    ax.set_title("diabetes: main effects and pairwise interactions")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"saved {out}")
    return dict(zip(labels, pip.tolist()))


if __name__ == "__main__":
    main()
