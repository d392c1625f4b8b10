r"""
Potts model: ALBP on categorical sites
======================================

A four-state Potts model on a 24 x 5 lattice with free boundaries: every site takes one
of :math:`K = 4` values and

.. math::

    \log \pi(z) = \sum_i h_{i, z_i} + \beta \sum_{i \sim j} [z_i = z_j] + \text{const},

with random fields :math:`h \sim U(-0.5, 0.5)` and a coupling :math:`\beta = 0.8` of equal
nearest neighbours (the critical value of the four-state model is
:math:`\log 3 = 1.10`).

The sites are sampled with ``pmd.ALBP``: its gradient proposal relaxes each site to a
one-hot vector, and since the log density is linear in every site's one-hot encoding
the gradient gives the exact local ratio of every possible change
(``step.ratios_are_exact`` checks it at construction). ALBP then changes several sites
per draw, as many as its tuned scale R allows at the target acceptance 0.574.
(``pmd.register()`` would choose ``BlockedGibbs`` here, as on the
:ref:`Ising page <sphx_glr_gallery_ising_lattice.py>`.)

A lattice 5 sites wide is summed exactly row by row (a transfer matrix over the
:math:`4^5 = 1024` states of a row). What to look for: the sampled probability of every
state at every site agrees with the exact one within its Monte Carlo standard error
(MCSE).
"""

# %%
# The model
# ---------
import itertools

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

import pymc_discrete as pmd


def potts_model(fields: np.ndarray, coupling: float) -> pm.Model:
    """Sites ``x`` with a uniform Categorical prior; ``fields[i, j, k]`` favours state k
    at site (i, j), ``coupling`` equal neighbours."""
    rows, cols, k = fields.shape
    with pm.Model() as model:
        z = pm.Categorical("x", np.full(k, 1.0 / k), shape=(rows, cols))
        one_hot = pt.eq(z[..., None], pt.arange(k))
        pm.Potential("field", (fields * one_hot).sum())
        pm.Potential("coupling",
                     coupling * (pt.eq(z[:, 1:], z[:, :-1]).sum()
                                 + pt.eq(z[1:], z[:-1]).sum()))
    return model


# %%
# The exact answer
# ----------------
# Forward-backward over the rows, as for the Ising model, with :math:`K^{\text{cols}}`
# states per row.


def exact_marginals(fields: np.ndarray, coupling: float) -> np.ndarray:
    """P(z_ij = k), shape (rows, cols, K), by a transfer matrix over the rows."""
    rows, cols, k = fields.shape
    states = np.array(list(itertools.product(range(k), repeat=cols)))  # (K^cols, cols)
    between = np.exp(coupling * (states[:, None, :] == states[None, :, :]).sum(-1))
    within = coupling * (states[:, 1:] == states[:, :-1]).sum(1)
    one_hot = states[..., None] == np.arange(k)                  # (K^cols, cols, K)
    log_rows = np.einsum("scv,rcv->sr", one_hot, fields) + within[:, None]
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
    return np.einsum("sr,scv->rcv", p_rows, one_hot)


# %%
# Sampling and checking
# ---------------------


def main(rows: int = 24, cols: int = 5, n_states: int = 4, coupling: float = 0.8,
         draws: int = 4000, out=None) -> dict:
    """Sample the lattice with ALBP, compare with the exact marginals and plot them;
    returns summary numbers."""
    fields = np.random.default_rng(0).uniform(-0.5, 0.5, (rows, cols, n_states))
    exact = exact_marginals(fields, coupling)
    model = potts_model(fields, coupling)
    with model:
        step = pmd.ALBP([model["x"]])
        idata = pm.sample(step=step, draws=draws, tune=draws, chains=2, cores=1,
                          random_seed=1, progressbar=False, compute_convergence_checks=False)
    z = idata.posterior["x"]
    # one indicator per state: (chain, draw, rows, cols, K)
    states = (z == xr.DataArray(np.arange(n_states), dims="state")).astype(float)
    mean = states.mean(("chain", "draw")).values
    err = mean - exact
    with np.errstate(divide="ignore", invalid="ignore"):  # a state never visited
        within = float((~(np.abs(err / az.mcse(states).values) >= 3)).mean())
    stats = idata.sample_stats
    summary = {
        "accept": float(stats["accept"].mean()),
        "R": float(stats["scaling"].values[:, -1].mean()),
        "jump_distance": float(stats["jump_distance"].mean()),
        "ratios_are_exact": step.ratios_are_exact,
        "ess": float(np.median(az.ess(states).values)),
        "max_error": float(np.abs(err).max()),
        "within_3_mcse": within,
    }
    print(f"\nPotts {rows} x {cols}, K = {n_states}, coupling {coupling}: ALBP, 2 chains x "
          f"{draws} draws after {draws} tuning")
    print(f"  gradient ratios exact: {summary['ratios_are_exact']}")
    print(f"  acceptance {summary['accept']:.3f} at tuned R = {summary['R']:.1f}; "
          f"{summary['jump_distance']:.1f} sites change per draw")
    print(f"  median ESS of the {mean.size} state probabilities: {summary['ess']:.0f}")
    print(f"  largest error against the exact marginals: {summary['max_error']:.3f}; "
          f"within 3 MCSE: {within:.1%}")

    fig = plt.figure(figsize=(10, 3.6), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=[2.2, 1])
    axes = left.subplots(3, 1, sharex=True)
    axes[0].imshow(z.values[0, -1].T, cmap="tab10", vmin=0, vmax=9)
    axes[0].set_title("last draw (4 colours)")
    for ax, (title, image) in zip(axes[1:], [("exact P(state 0)", exact[..., 0]),
                                             ("sampled P(state 0)", mean[..., 0])]):
        im = ax.imshow(image.T, cmap="viridis", vmin=0, vmax=0.6)
        ax.set_title(title)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    left.colorbar(im, ax=axes[1:], shrink=0.9)
    ax = right.subplots()
    ax.plot(exact.ravel(), mean.ravel(), ".", ms=3)
    ax.plot([0, 0.7], [0, 0.7], "k", lw=0.8)
    ax.set_xlabel("exact P(state)")
    ax.set_ylabel("sampled")
    ax.set_title("every site and state")
    ax.set_box_aspect(1)
    if out is not None:
        fig.savefig(out, dpi=100)
    return summary


# %%
# Run
# ---
if __name__ == "__main__":
    summary = main()
    assert summary["ratios_are_exact"]
    assert summary["within_3_mcse"] >= 0.95, summary
    print("\ncheck passed: ALBP's state probabilities agree with the exact ones "
          "(at least 95% within 3 MCSE)")
    plt.show()
