r"""
Restricted Boltzmann machine: sampling digits
=============================================

A binary restricted Boltzmann machine (RBM) with 64 visible units (the pixels of
scikit-learn's 8 x 8 digits, thresholded at half intensity) and 16 hidden units is
trained by contrastive divergence. Summing out the hidden units leaves the distribution
of the visible units,

.. math::

    \log p(v) = b^\top v + \sum_j \operatorname{softplus}(c_j + (v^\top W)_j)
    + \text{const},

which the page samples. Every hidden unit couples all 64 pixels, so after
``pmd.register()`` a plain ``pm.sample()`` picks ``ALBP``: a Gibbs sweep would cost one
evaluation per pixel, ALBP proposes many pixel flips from one gradient (the log below
says why, with the acceptance it measured for gradient and exact ratios). The softplus
makes the gradient ratios first-order estimates only, which the Metropolis-Hastings
correction makes exact. The page also runs ``pmd.PAS``, which moves along a path of
single-pixel flips.

With 16 hidden units the sum over their :math:`2^{16}` states is cheap, and given the
hidden units the pixels are independent, so every pixel's exact marginal
:math:`P(v_i = 1)` is known. What to look for: both samplers' pixel marginals agree with
the exact ones within their Monte Carlo standard errors (MCSE), and the draws look like
digits.
"""

# %%
# Training the RBM
# ----------------
# ``pymc_discrete.example_models`` holds the data, the contrastive-divergence trainer and
# the model (the two potentials of the formula above).
import itertools

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm

import pymc_discrete as pmd
from pymc_discrete.example_models import binarised_digits, rbm_model, train_rbm

# %%
# The exact answer
# ----------------
# :math:`p(h) \propto \exp(c^\top h) \prod_i (1 + e^{b_i + (W h)_i})` and
# :math:`P(v_i = 1 \mid h) = \sigma(b_i + (W h)_i)`: a sum over the hidden states.


def exact_pixel_marginals(W: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """P(v_i = 1) of the RBM, by summing over its 2^n_hidden hidden states."""
    hidden = np.array(list(itertools.product((0.0, 1.0), repeat=W.shape[1])))
    activation = hidden @ W.T + b                          # (2^n_hidden, n_visible)
    log_weight = hidden @ c + np.logaddexp(0.0, activation).sum(1)
    weight = np.exp(log_weight - log_weight.max())
    return weight @ (1.0 / (1.0 + np.exp(-activation))) / weight.sum()


# %%
# Sampling and checking
# ---------------------


def main(draws: int = 3000, epochs: int = 30, n_hidden: int = 16, n_images: int = 8,
         out=None) -> dict[str, dict]:
    """Train the RBM, sample its visible units with register()'s choice and with PAS,
    compare with the exact pixel marginals and plot draws; returns each run's numbers."""
    data = binarised_digits()
    W, b, c = train_rbm(data, n_hidden=n_hidden, epochs=epochs, seed=0)
    exact = exact_pixel_marginals(W, b, c)
    model = rbm_model(W, b, c)
    idatas = {}
    pmd.register()  # plain pm.sample() now lets the package choose the discrete step
    try:
        with model:
            idatas["register()"] = pm.sample(
                draws=draws, tune=draws, chains=2, cores=1, random_seed=5,
                progressbar=False, compute_convergence_checks=False,
                initvals={"x": data[0]})
    finally:
        pmd.unregister()
    with model:
        idatas["PAS"] = pm.sample(
            step=pmd.PAS([model["x"]]), draws=draws, tune=draws, chains=2, cores=1,
            random_seed=5, progressbar=False, compute_convergence_checks=False,
            initvals={"x": data[0]})

    print(f"\nRBM with {n_hidden} hidden units, 2 chains x {draws} draws after {draws} "
          f"tuning, both from the first digit of the data")
    print(f"{'step':<12}{'accept':>8}{'pixels moved':>14}{'median ESS':>12}"
          f"{'max |error|':>13}{'within 3 MCSE':>15}")
    runs = {}
    for name, idata in idatas.items():
        x = idata.posterior["x"]
        mean = x.mean(("chain", "draw")).values
        with np.errstate(divide="ignore", invalid="ignore"):  # a pixel that never moved
            z = (mean - exact) / az.mcse(x).values
        stats = idata.sample_stats
        runs[name] = {
            "draws": x.values[0],
            "mean": mean,
            "accept": float(stats["accept"].mean()),
            "jump_distance": float(stats["jump_distance"].mean()),
            "ess": float(np.median(az.ess(x).values)),
            "max_error": float(np.abs(mean - exact).max()),
            "within_3_mcse": float((~(np.abs(z) >= 3)).mean()),  # 0 / 0 counts as within
        }
        r = runs[name]
        print(f"{name:<12}{r['accept']:>8.2f}{r['jump_distance']:>14.1f}{r['ess']:>12.0f}"
              f"{r['max_error']:>13.3f}{r['within_3_mcse']:>15.1%}")

    fig = plt.figure(figsize=(11, 3.2), layout="constrained")
    grids = fig.subfigures(1, 2, width_ratios=[2.6, 1])
    axes = grids[0].subplots(len(runs), n_images)
    for row, (name, r) in zip(np.atleast_2d(axes), runs.items()):
        every = max(1, len(r["draws"]) // n_images)
        for ax, image in zip(row, r["draws"][every - 1::every]):
            ax.imshow(image.reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
        row[0].set_ylabel(name)
    grids[0].suptitle("draws spaced through the first chain")
    ax = grids[1].subplots()
    for name, r in runs.items():
        ax.plot(exact, r["mean"], ".", ms=4, label=name)
    ax.plot([0, 1], [0, 1], "k", lw=0.8)
    ax.set_xlabel("exact P(pixel on)")
    ax.set_ylabel("sampled")
    ax.legend(fontsize=8)
    if out is not None:
        fig.savefig(out, dpi=100)
    return runs


# %%
# Run
# ---
if __name__ == "__main__":
    runs = main()
    for name, r in runs.items():
        assert r["within_3_mcse"] >= 0.95, (name, r["within_3_mcse"])
    print("\ncheck passed: both samplers' pixel marginals agree with the exact ones "
          "(at least 95% of the pixels within 3 MCSE)")
    plt.show()
