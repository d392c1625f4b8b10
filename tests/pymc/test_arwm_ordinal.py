"""ARWM on ordinal integer variables through pm.sample: random-walk steps near the current
value whose width is learnt while tuning (issue 30: a uniform new value out of 41 left 40
Binomial sites unmixed)."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_discrete as pmd
from pymc_discrete.pymc.steps.arwm import WIDTH_SPREADS, ARWMState
from tests.pymc.checks import N_MCSE, means_within_mcse

N_TRIALS, P_SUCCESS, N_SITES = 40, 0.3, 40
OBSERVED = np.random.default_rng(0).binomial(N_TRIALS, P_SUCCESS, N_SITES)
NOISE = 2.0


def _binomial_sites(likelihood: bool) -> tuple[pm.Model, np.ndarray, float]:
    """40 Binomial(40, 0.3) sites, alone or each observed with Gaussian noise; the exact
    posterior mean of every site (the sites are independent: one sum over 41 values), and
    the pooled posterior standard deviation of a site (root mean of the sites'
    variances: what the width is learnt from)."""
    values = np.arange(N_TRIALS + 1)
    log_post = np.tile(stats.binom.logpmf(values, N_TRIALS, P_SUCCESS), (N_SITES, 1))
    with pm.Model() as model:
        x = pm.Binomial("x", n=N_TRIALS, p=P_SUCCESS, shape=N_SITES)
        if likelihood:
            pm.Normal("y", mu=x, sigma=NOISE, observed=OBSERVED)
            log_post = log_post + stats.norm.logpdf(OBSERVED[:, None], values[None, :], NOISE)
    post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    post /= post.sum(axis=1, keepdims=True)
    mean = post @ values
    variance = post @ values**2 - mean**2
    return model, mean, float(np.sqrt(variance.mean()))


@pytest.mark.slow
@pytest.mark.parametrize("likelihood", [False, True], ids=["prior", "observed"])
def test_forty_binomial_sites_mix_and_match_their_exact_means(likelihood):
    """A random walk moving a few of 40 sites per logp evaluation gains about 1/40 of an
    effective draw per step whatever its proposal (the random-walk optimal scaling), so the
    draw makes 20 steps; the uniform proposal it replaces left r-hat far above 1.05.

    Every site mixes: its bulk ESS is at least 40 of the 2000 draws (per site about 245,
    standard deviation 42; the smallest of 2000 sites over seeds 1-25 was 87). Every
    site's mean lies within 5 MCSE of the exact one (40 sites: Bonferroni for a false
    alarm in about 1e-4 of runs). No r-hat threshold: over 40 sites with ESS near 200 the
    largest r-hat reaches 1.047 (50 runs), so 1.05 had no margin; chains that do not mix
    show a low ESS (ArviZ's ESS counts the disagreement between chains) or wrong means."""
    model, exact, sd = _binomial_sites(likelihood)
    with model:
        step = pmd.ARWM([model["x"]], steps_per_draw=20)
        idata = pm.sample(draws=1000, tune=1000, chains=2, cores=1, step=step,
                          random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    ess = az.ess(idata, var_names=["x"], method="bulk")["x"].values
    assert ess.min() >= 40, ess.min()
    means_within_mcse(idata, "x", exact, 5.0)
    # the width learnt is WIDTH_SPREADS standard deviations of the values over a tuning
    # window, rounded (within 0.5): near WIDTH_SPREADS exact pooled posterior ones
    assert step.widths is not None and np.unique(step.widths).size == 1
    expected = WIDTH_SPREADS * sd  # 8.69 for the prior, 4.94 observed
    assert 0.5 * expected - 0.5 <= step.widths[0] <= 1.5 * expected + 0.5, step.widths[0]


def _switch_point(sd: float) -> pm.Model:
    with pm.Model() as model:
        s = pm.DiscreteUniform("s", 0, 199)
        pm.Potential("around", -0.5 * ((s - 80) / sd) ** 2)
    return model


@pytest.mark.parametrize("sd", [1.5, 25.0])
def test_a_lone_site_learns_a_width_of_its_spread_and_matches_its_mean(sd):
    """One site (R cannot grow): the width must follow the posterior's spread, narrow or
    wide, where a fixed width would crawl or be refused."""
    model = _switch_point(sd)
    values = np.arange(200)
    post = np.exp(-0.5 * ((values - 80) / sd) ** 2)
    post /= post.sum()
    with model:
        step = pmd.ARWM([model["s"]])
        idata = pm.sample(draws=1500, tune=1000, chains=2, cores=1, step=step,
                          random_seed=3, progressbar=False,
                          compute_convergence_checks=False)
    exact_sd = float(np.sqrt(post @ (values - post @ values) ** 2))
    assert 0.5 * WIDTH_SPREADS * exact_sd <= step.widths[0] <= 1.5 * WIDTH_SPREADS * exact_sd
    assert float(az.rhat(idata, var_names=["s"])["s"]) < 1.02
    assert float(az.ess(idata, var_names=["s"])["s"]) > 300
    means_within_mcse(idata, "s", post @ values, N_MCSE)


def test_widths_are_frozen_with_the_scale_and_resumed():
    model = _switch_point(10.0)
    with model:
        step = pmd.ARWM([model["s"]])
        pm.sample(draws=50, tune=200, chains=1, cores=1, step=step, random_seed=2,
                  progressbar=False, compute_convergence_checks=False)
        learnt = step.widths.copy()
        saved = step.sampling_state
        assert isinstance(saved, ARWMState) and np.array_equal(saved._widths, learnt)
        again = pmd.ARWM([model["s"]])
        assert again.widths is None  # log-uniform distances until a width is learnt
        again.resume(saved)
        pm.sample(draws=20, tune=0, chains=1, cores=1, step=again, random_seed=3,
                  progressbar=False, compute_convergence_checks=False)
        assert np.array_equal(again.widths, learnt)


def test_without_adaptation_the_distances_stay_log_uniform():
    model = _switch_point(10.0)
    with model:
        step = pmd.ARWM([model["s"]], adapt=False)
        idata = pm.sample(draws=200, tune=200, chains=1, cores=1, step=step,
                          random_seed=2, progressbar=False,
                          compute_convergence_checks=False)
    assert step.widths is None
    assert float(idata.sample_stats["accepted"].mean()) > 0.1


def test_which_sites_walk():
    """Ordinal integers of at least 3 values walk; Bernoulli, Categorical and integers of
    two values keep their other-value moves."""
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.5, shape=2)
        c = pm.Categorical("c", np.ones(4) / 4, shape=2)
        b = pm.Binomial("b", n=np.array([1, 5]), p=0.5, shape=2)
        u = pm.DiscreteUniform("u", 2, 6)
    step = pmd.ARWM([g, c, b, u], model=model)
    assert step.ordinal.tolist() == [False, False, False, False, False, True, True]
    assert pmd.ARWM([g, c], model=model).ordinal is None
