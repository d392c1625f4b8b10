"""Assertions shared by the PyMC-level tests."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm

N_MCSE = 4.0  # estimates must lie within this many Monte Carlo standard errors

#: the paper's Bernoulli configuration C2: N = 800 sites, p_i ~ U[0.15, 0.85]
PRODUCT_P = np.random.default_rng(2022).uniform(0.15, 0.85, 800)


def one_hot_means_within_mcse(idata, name, truth, n_mcse: float = N_MCSE):
    """P(z_i = c) from the draws against ``truth`` (n_sites, K), within ``n_mcse`` MCSE."""
    z = idata.posterior[name].values
    k = truth.shape[1]
    one_hot = (z[..., None] == np.arange(k)).astype(float)  # (chain, draw, site, K)
    mean = one_hot.mean(axis=(0, 1))
    mcse = np.asarray(az.mcse(one_hot))
    # a category that is never visited has an estimated MCSE of 0: floor the MCSE at the
    # binomial standard error of independent draws of that probability
    n_draws = z.shape[0] * z.shape[1]
    mcse = np.maximum(mcse, np.sqrt(truth * (1 - truth) / n_draws))
    ok = np.abs(mean - truth) <= n_mcse * mcse + 1e-12
    assert ok.all(), (mean, truth, mcse)


def sample(model, step, **kwargs):
    """``pm.sample`` with the tests' defaults (2 chains of 2000 draws, one core)."""
    kwargs = {"draws": 2000, "tune": 500, "chains": 2, "cores": 1, "random_seed": 42,
              "progressbar": False, "compute_convergence_checks": False} | kwargs
    with model:
        return pm.sample(step=step, **kwargs)


def means_within_mcse(idata, name, truth, n_mcse: float = N_MCSE):
    """Posterior means of ``name`` within ``n_mcse`` Monte Carlo standard errors of
    ``truth``."""
    mean = idata.posterior[name].mean(("chain", "draw")).values
    mcse = az.mcse(idata, var_names=[name])[name].values
    assert np.all(np.abs(mean - truth) <= n_mcse * mcse + 1e-12), (mean, truth, mcse)


#: a tuned acceptance rate must lie within this many standard errors of its target
N_SE_TUNED = 4.5


def assert_acceptance_at_the_tuned_scale_reaches(idata, target: float, tuner_sd: float,
                                                 n_se: float = N_SE_TUNED) -> np.ndarray:
    """Per chain, the mean acceptance probability of the draws run at the tuned scale
    against ``target``; returns those means.

    After tuning one draw in ten runs at a smaller scale (sample_stats ``draw_scale``
    below ``scaling``), which accepts more: only the draws at the tuned scale say what
    the tuned scale accepts. Their mean differs from the target by the Monte Carlo error
    of that mean (ArviZ's MCSE of the chain's acceptance probabilities at the tuned scale,
    in order) and by the tuner's own error: it reads the crossing of the target off a
    finite window of noisy acceptance probabilities, so the frozen scale, and the rate it
    accepts at, varies from chain to chain. ``tuner_sd`` is the standard deviation of that
    rate about the target across chains, net of the Monte Carlo error (each test states
    where its value was measured). Each chain must lie within ``n_se`` standard errors
    ``sqrt(mcse^2 + tuner_sd^2)`` of the target, and the mean of the chains (independent
    tuners) within ``n_se`` standard errors of that mean.
    """
    stats = idata.sample_stats
    accept = stats["accept"].values
    at_tuned = stats["draw_scale"].values == stats["scaling"].values
    means = np.array([accept[c][at_tuned[c]].mean() for c in range(accept.shape[0])])
    mcse = np.array([float(az.mcse(accept[c][at_tuned[c]][None]))
                     for c in range(accept.shape[0])])
    se = np.sqrt(mcse**2 + tuner_sd**2)
    assert np.all(np.abs(means - target) <= n_se * se), (means, target, n_se * se)
    se_mean = np.sqrt(np.sum(se**2)) / se.size
    assert abs(means.mean() - target) <= n_se * se_mean, (means.mean(), target, n_se * se_mean)
    return means
