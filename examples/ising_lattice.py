r"""
Ising model: sampled marginals against the exact ones
=====================================================

An Ising model on a 16 x 10 lattice with free boundaries: binary spins
:math:`x_i \in \{0, 1\}`, :math:`s_i = 2 x_i - 1`, and

.. math::

    \log \pi(x) = \sum_i \alpha_i s_i + \lambda \sum_{i \sim j} s_i s_j + \text{const},

with external fields :math:`\alpha` positive inside a central disc and negative outside
(the optimal-scaling paper's configuration C2: :math:`\mu = 0.15`, :math:`\sigma = 0.45`)
and a coupling :math:`\lambda = 0.3` between nearest neighbours, twice the paper's so
that neighbours visibly agree.

A lattice only 10 sites wide can be summed exactly, row by row (a transfer matrix over
the :math:`2^{10}` states of a row), so every site's marginal :math:`P(x_i = 1)` is known.
The page samples the model twice, the two ways the package is meant to be used:

* ``pmd.register()`` and a plain ``pm.sample()``: the package reads the model's
  structure, finds that two colours (a checkerboard) cover the lattice and picks
  ``BlockedGibbs`` (the log below says so);
* ``pm.sample(step=pmd.ALBP([x]))``: the locally balanced proposal, whose gradient
  ratios are exact here because the log density is multilinear in the spins.

What to look for: both estimates agree with the exact marginals within their Monte
Carlo standard errors (MCSE), and the blocked Gibbs sweep, which redraws all 160 spins
per draw, gives many more effective draws than ALBP, which moves a few spins per draw.
"""

# %%
# The model
# ---------
import itertools

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm

import pymc_discrete as pmd


def ising_fields(rows: int, cols: int, mu: float = 0.15, sigma: float = 0.45,
                 seed: int = 0) -> np.ndarray:
    """U(mu - sigma, mu + sigma) inside a central disc of half the lattice's area,
    U(-mu - sigma, -mu + sigma) outside."""
    i, j = np.meshgrid(np.arange(rows) / rows, np.arange(cols) / cols, indexing="ij")
    inside = (i - 0.5) ** 2 + (j - 0.5) ** 2 < 0.5 / np.pi
    noise = np.random.default_rng(seed).uniform(-sigma, sigma, (rows, cols))
    return noise + np.where(inside, mu, -mu)


def ising_model(alpha: np.ndarray, coupling: float) -> pm.Model:
    """Spins ``x`` with a flat Bernoulli(0.5) prior; fields and couplings as potentials."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.5, shape=alpha.shape)
        s = 2 * x - 1
        pm.Potential("field", (alpha * s).sum())
        pm.Potential("coupling",
                     coupling * ((s[:, 1:] * s[:, :-1]).sum() + (s[1:] * s[:-1]).sum()))
    return model


# %%
# The exact answer
# ----------------
# The lattice is a chain of rows: the forward-backward algorithm over the
# :math:`2^{\text{cols}}` states of a row gives every row's exact distribution, hence
# every site's marginal.


def exact_marginals(alpha: np.ndarray, coupling: float) -> np.ndarray:
    """P(x_ij = 1) of the Ising model, by a transfer matrix over the rows."""
    rows, cols = alpha.shape
    states = 2.0 * np.array(list(itertools.product((0, 1), repeat=cols))) - 1.0  # spins
    between = np.exp(coupling * states @ states.T)        # coupling of consecutive rows
    within = coupling * (states[:, 1:] * states[:, :-1]).sum(1)
    log_rows = states @ alpha.T + within[:, None]         # (2^cols, rows)
    rows_weight = np.exp(log_rows - log_rows.max(0))
    forward, backward = np.empty_like(rows_weight), np.ones_like(rows_weight)
    forward[:, 0] = rows_weight[:, 0] / rows_weight[:, 0].sum()
    for r in range(1, rows):
        f = (forward[:, r - 1] @ between) * rows_weight[:, r]
        forward[:, r] = f / f.sum()
    for r in range(rows - 2, -1, -1):
        b = between @ (backward[:, r + 1] * rows_weight[:, r + 1])
        backward[:, r] = b / b.sum()
    p_rows = forward * backward
    p_rows /= p_rows.sum(0)
    return p_rows.T @ (states > 0)                        # (rows, cols)


# %%
# Sampling and checking
# ---------------------
# ``compare`` measures, for each run, how far the posterior means are from the exact
# marginals in units of their MCSE: for a correct sampler about 99.7% of the sites lie
# within 3 MCSE.


def compare(idata, exact: np.ndarray) -> dict[str, float]:
    """Errors of the sampled marginals, in absolute terms and in MCSE."""
    x = idata.posterior["x"]
    mean = x.mean(("chain", "draw")).values
    with np.errstate(divide="ignore", invalid="ignore"):  # a spin that never moved
        z = (mean - exact) / az.mcse(x).values
    stats = idata.sample_stats
    return {
        "mean": mean,
        "seconds": float(stats.attrs["sampling_time"]),
        "accept": float(stats["accept"].mean()) if "accept" in stats else float("nan"),
        "changed": float(stats["jump_distance"].mean()),
        "ess": float(np.median(az.ess(x).values)),
        "max_error": float(np.abs(mean - exact).max()),
        "within_3_mcse": float((~(np.abs(z) >= 3)).mean()),  # 0 / 0 counts as within
    }


def main(rows: int = 16, cols: int = 10, coupling: float = 0.3, draws: int = 1000,
         out=None) -> dict[str, dict]:
    """Sample the lattice both ways, print the comparison with the exact marginals and
    plot it; returns the numbers of each run."""
    alpha = ising_fields(rows, cols)
    exact = exact_marginals(alpha, coupling)
    model = ising_model(alpha, coupling)
    runs = {}
    pmd.register()  # plain pm.sample() now lets the package choose the discrete step
    try:
        with model:
            idata = pm.sample(draws=draws, tune=draws, chains=2, cores=1, random_seed=1,
                              progressbar=False, compute_convergence_checks=False)
    finally:
        pmd.unregister()
    runs["register()"] = compare(idata, exact)
    with model:
        idata = pm.sample(step=pmd.ALBP([model["x"]]), draws=draws, tune=draws, chains=2,
                          cores=1, random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    runs["ALBP"] = compare(idata, exact)

    print(f"\n{rows} x {cols} Ising model, 2 chains x {draws} draws after {draws} tuning")
    print(f"{'step':<12}{'sampling s':>11}{'accept':>8}{'spins moved':>13}"
          f"{'median ESS':>12}{'max |error|':>13}{'within 3 MCSE':>15}")
    for name, r in runs.items():
        print(f"{name:<12}{r['seconds']:>11.1f}{r['accept']:>8.2f}{r['changed']:>13.1f}"
              f"{r['ess']:>12.0f}{r['max_error']:>13.3f}{r['within_3_mcse']:>15.1%}")

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), layout="constrained")
    for ax, (title, image) in zip(axes, [("exact P(x = 1)", exact),
                                         ("ALBP's estimate", runs["ALBP"]["mean"])]):
        im = ax.imshow(image, cmap="RdBu_r", vmin=0, vmax=1)
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes[:2], shrink=0.8)
    for name, r in runs.items():
        axes[2].plot(exact.ravel(), r["mean"].ravel(), ".", ms=4, label=name)
    axes[2].plot([0, 1], [0, 1], "k", lw=0.8)
    axes[2].set_xlabel("exact")
    axes[2].set_ylabel("sampled")
    axes[2].legend()
    axes[2].set_box_aspect(1)
    if out is not None:
        fig.savefig(out, dpi=100)
    return runs


# %%
# Run
# ---
# The log names the step ``register()`` chose and why; the table compares both runs
# with the exact marginals.
if __name__ == "__main__":
    runs = main()
    for name, r in runs.items():
        assert r["within_3_mcse"] >= 0.95, (name, r["within_3_mcse"])
    print("\ncheck passed: both samplers agree with the exact marginals "
          "(at least 95% of the sites within 3 MCSE)")
    plt.show()
