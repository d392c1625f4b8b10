r"""
Site occupancy: how many sites are occupied?
============================================

The single-season occupancy model of MacKenzie et al. (2002, *Ecology* 83: 2248-2255):
a species occupies each of 200 sites with probability :math:`\psi`; each site is visited
5 times and an occupied site yields a detection at each visit with probability
:math:`p`. A site where the species was never detected may be empty, or occupied and
missed:

.. code-block:: text

    psi, p ~ Beta(1, 1)
    z_i ~ Bernoulli(psi)               (200 latent occupancy indicators)
    y_ij ~ Bernoulli(z_i * p)          (5 visits per site)

The data are simulated with :math:`\psi = 0.6` and :math:`p = 0.3`, so the truth is
known. ``pmd.register()`` and a plain ``pm.sample()``: the indicators depend on each
other only through :math:`\psi` and :math:`p` (they share no term), and ``register()``
picks ``CollapsedNUTS``: the indicators are summed out of the density NUTS samples
:math:`(\psi, p)` from, exactly and site by site, and all 200 are then drawn afresh from
their exact conditionals at every draw.

The posterior of :math:`(\psi, p)` with the indicators summed out is a two-dimensional
density, so it is computed exactly on a grid. What to look for: the sampled posterior
means of :math:`\psi`, :math:`p` and of the number of occupied sites agree with the
exact ones within a few Monte Carlo standard errors (MCSE), and the posterior covers
the simulated truth.
"""

# %%
# Data and model
# --------------
import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm

import pymc_discrete as pmd


def simulate(n_sites: int = 200, n_visits: int = 5, psi: float = 0.6, p: float = 0.3,
             seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Detection histories (n_sites, n_visits) of 0/1 and the true occupancy."""
    rng = np.random.default_rng(seed)
    occupied = rng.random(n_sites) < psi
    y = (rng.random((n_sites, n_visits)) < p) & occupied[:, None]
    return y.astype(np.int64), occupied


def occupancy_model(y: np.ndarray) -> pm.Model:
    with pm.Model() as model:
        psi = pm.Beta("psi", 1.0, 1.0)
        p = pm.Beta("p", 1.0, 1.0)
        z = pm.Bernoulli("z", psi, shape=y.shape[0])
        pm.Bernoulli("y", z[:, None] * p, observed=y)
    return model


# %%
# The exact answer
# ----------------
# Summing out :math:`z_i`: a site with :math:`k_i > 0` detections in :math:`J` visits
# contributes :math:`\psi p^{k_i} (1 - p)^{J - k_i}`, a site never detected
# :math:`\psi (1 - p)^J + 1 - \psi`. On a 400 x 400 grid of :math:`(\psi, p)` this gives
# the posterior, and the expected number of occupied sites: the detected ones, plus each
# undetected site's probability :math:`\psi (1 - p)^J / (\psi (1 - p)^J + 1 - \psi)`.


def exact_posterior(y: np.ndarray, n_grid: int = 400):
    """Grid, posterior weights of (psi, p), and the exact posterior means."""
    n_visits = y.shape[1]
    k = y.sum(1)
    grid = (np.arange(n_grid) + 0.5) / n_grid
    psi, p = np.meshgrid(grid, grid, indexing="ij")
    missed = psi * (1 - p) ** n_visits                     # occupied, never detected
    log_post = ((k > 0).sum() * np.log(psi) + k.sum() * np.log(p)
                + (n_visits * (k > 0).sum() - k.sum()) * np.log1p(-p)
                + (k == 0).sum() * np.log(missed + 1 - psi))
    weight = np.exp(log_post - log_post.max())
    weight /= weight.sum()
    occupied = (k > 0).sum() + (k == 0).sum() * missed / (missed + 1 - psi)
    means = {"psi": (weight * psi).sum(), "p": (weight * p).sum(),
             "occupied sites": (weight * occupied).sum()}
    return grid, weight, means


# %%
# Sampling and checking
# ---------------------


def main(draws: int = 1000, tune: int = 500, out=None) -> dict[str, dict]:
    """Sample the model, print the posterior against the exact one and the truth, and
    plot them; returns the table's numbers."""
    y, occupied = simulate()
    grid, weight, exact = exact_posterior(y)
    model = occupancy_model(y)
    pmd.register()  # plain pm.sample() now lets the package choose the discrete step
    try:
        with model:
            idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=1,
                              progressbar=False, compute_convergence_checks=False)
    finally:
        pmd.unregister()
    post = idata.posterior
    sampled = {"psi": post["psi"], "p": post["p"], "occupied sites": post["z"].sum("z_dim_0")}
    truth = {"psi": 0.6, "p": 0.3, "occupied sites": int(occupied.sum())}
    print(f"\n{y.shape[0]} sites x {y.shape[1]} visits; detected at {int(y.any(1).sum())} "
          f"sites; 2 chains x {draws} draws after {tune}")
    print(f"{'':<16}{'truth':>7}{'exact mean':>12}{'sampled':>10}{'MCSE':>8}{'ESS':>7}"
          f"{'94% interval':>18}")
    table = {}
    for name, draws_ in sampled.items():
        mean, mcse = float(draws_.mean()), float(az.mcse(draws_))
        low, high = np.quantile(draws_.values, [0.03, 0.97])
        table[name] = {"truth": truth[name], "exact": float(exact[name]), "mean": mean,
                       "mcse": mcse, "ess": float(az.ess(draws_)), "interval": (low, high)}
        print(f"{name:<16}{truth[name]:>7}{exact[name]:>12.3f}{mean:>10.3f}{mcse:>8.3f}"
              f"{table[name]['ess']:>7.0f}{f'[{low:.3g}, {high:.3g}]':>18}")

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    axes[0].contour(grid, grid, weight.T, levels=6, colors="k", linewidths=0.8)
    axes[0].plot(post["psi"].values.ravel(), post["p"].values.ravel(), ".", ms=2, alpha=0.3,
                 label="draws")
    axes[0].plot(0.6, 0.3, "r*", ms=12, label="truth")
    axes[0].set_xlim(0.35, 0.85)
    axes[0].set_ylim(0.15, 0.45)
    axes[0].set_xlabel(r"$\psi$")
    axes[0].set_ylabel(r"$p$")
    axes[0].set_title("draws over the exact posterior (contours)")
    axes[0].legend()
    n_occ = sampled["occupied sites"].values.ravel()
    axes[1].hist(n_occ, bins=np.arange(n_occ.min(), n_occ.max() + 2) - 0.5, density=True)
    axes[1].axvline(truth["occupied sites"], color="r", label="truth")
    axes[1].set_xlabel("occupied sites")
    axes[1].legend()
    if out is not None:
        fig.savefig(out, dpi=100)
    return table


# %%
# Run
# ---
if __name__ == "__main__":
    table = main()
    for name, row in table.items():
        assert abs(row["mean"] - row["exact"]) < 4 * row["mcse"], (name, row)
        assert row["interval"][0] <= row["truth"] <= row["interval"][1], (name, row)
    print("\ncheck passed: every posterior mean within 4 MCSE of the exact one, every 94% "
          "interval covers the truth")
    plt.show()
