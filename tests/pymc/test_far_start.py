"""Tuning from PyMC's initial point, far from the typical set.

PyMC starts a Bernoulli block at its mode (the moment of each site rounded), the most
probable state, which is nowhere near the typical set of N = 800 independent sites (about
260 of them away from their mode). ARWM moves about two sites per draw, so its chain
approaches the typical set with a relaxation time of about 600 draws; while it does, its
acceptance at a given R is lower than at stationarity (R = 5 reaches 0.234 with 200 sites
off their mode, R = 8 with 260). No tuner can find the stationary scale from a chain that
has not reached stationarity: with PyMC's default 1000 tuning draws the chain is still
at about 210 sites, and the frozen R gives an acceptance of about 0.32 afterwards (0.35
before the tuner's windows). Given tuning long enough for the transient (four relaxation
times here), the windows make the frozen scale that of the stationary chain. ALBP
reaches the typical set within a few draws, and its default tuning suffices.

The draws at the tuned scale (after tuning one draw in ten runs at a smaller scale, which
accepts more) accept at the target within 4.5 standard errors, chain by chain and on
average over the two chains: the chain's Monte Carlo standard error and the tuner's
spread (``tests.pymc.checks``), 0.0175 for ARWM and 0.0306 for ALBP across 120 chains
(seeds 100-159), taken as 0.020 and 0.034. For ARWM the mean of the two chains must then
lie within about 0.07 of 0.234: this shows that long enough tuning reaches the target;
it does not reliably tell apart the 0.28-0.34 (mean over two chains) of PyMC's default
1000 tuning draws.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_discrete as pmd
from tests.pymc.checks import PRODUCT_P, assert_acceptance_at_the_tuned_scale_reaches


@pytest.mark.parametrize(
    "make_step,target,tune,tuner_sd",
    [
        (lambda m: pmd.ARWM([m["x"]], model=m), 0.234, 4000, 0.020),
        (lambda m: pmd.ALBP([m["x"]], model=m), 0.574, 1000, 0.034),
    ],
    ids=["arwm", "albp"],
)
def test_tuning_from_the_mode_reaches_the_target_at_stationarity(
    product_bernoulli, make_step, target, tune, tuner_sd
):
    start = product_bernoulli.initial_point()["x"]
    p = PRODUCT_P
    np.testing.assert_array_equal(start, (p > 0.5).astype(start.dtype))  # the mode
    with product_bernoulli:
        idata = pm.sample(
            step=make_step(product_bernoulli), draws=2000, tune=tune, chains=2, cores=1,
            random_seed=3, progressbar=False, compute_convergence_checks=False,
        )
    x = idata.posterior["x"].values
    # the draws are in the typical set: sites off their mode as many as expected
    # (within four standard deviations of one draw's count)
    off = (x != (p > 0.5)).sum(axis=-1)
    q = np.minimum(p, 1 - p)
    assert abs(off.mean() - q.sum()) < 4 * np.sqrt((q * (1 - q)).sum())
    assert_acceptance_at_the_tuned_scale_reaches(idata, target, tuner_sd)
