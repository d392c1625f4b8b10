"""Posterior of a factorial hidden Markov model, sampled with ALBP and PAS.

K binary Markov chains over L time steps generate ``y_l ~ N(w . x_l + b, 1)`` (the
optimal-scaling paper's Appendix D.3). Both samplers use exact local ratios (the
likelihood is quadratic in x). Prints how often the posterior modal state matches the
simulated one, and plots the truth against the posterior means. Run:
``.venv/bin/python examples/fhmm_posterior.py`` (about a minute).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_discrete as pmd  # noqa: E402
from pymc_discrete.example_models import fhmm_model  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(length: int = 200, n_chains: int = 3, draws: int = 2000,
         out: Path = HERE / "fhmm_posterior.png") -> dict[str, float]:
    """Sample the posterior with both steps; returns each one's share of correctly
    recovered hidden states."""
    model = fhmm_model(length, n_chains, sigma2=0.5, seed=3)
    truth = model.truth
    samplers = {
        "ALBP": lambda: pmd.ALBP([model["x"]], proposal="exact"),
        "PAS": lambda: pmd.PAS([model["x"]], proposal="exact"),
    }
    means, recovered = {}, {}
    for name, make in samplers.items():
        with model:
            idata = pm.sample(step=make(), draws=draws, tune=draws, chains=2, random_seed=4,
                              progressbar=False, compute_convergence_checks=False)
        means[name] = idata.posterior["x"].mean(("chain", "draw")).values
        recovered[name] = float(((means[name] > 0.5) == truth).mean())
        stats = idata.sample_stats
        print(f"{name}: acceptance {float(stats['accept'].mean()):.3f}, scale "
              f"{float(stats['scaling'].values[:, -1].mean()):.1f}, "
              f"{float(stats['jump_distance'].mean()):.2f} sites change per draw; "
              f"hidden states recovered: {recovered[name]:.1%}")
    fig, axes = plt.subplots(n_chains, 1, figsize=(10, 1.6 * n_chains), sharex=True)
    for k, ax in enumerate(np.atleast_1d(axes)):
        ax.step(range(length), truth[:, k], where="mid", color="k", lw=1, label="truth")
        for name, mean in means.items():
            ax.plot(mean[:, k], lw=1, label=f"P(x = 1), {name}")
        ax.set_ylabel(f"chain {k}")
    np.atleast_1d(axes)[0].legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"saved {out}")
    return recovered


if __name__ == "__main__":
    main()
