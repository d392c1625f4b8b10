"""SAMCMC inside pm.sample: moments of correlated Gaussian and banana-shaped targets,
refusal to share the model with other steps, chains on several cores, reproducibility."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest

import pymc_discrete as pmd

COV = np.array([[1.0, 0.9, 0.3], [0.9, 2.0, 0.5], [0.3, 0.5, 0.8]])
MEAN = np.array([1.0, -1.0, 3.0])


@pytest.fixture(scope="module")
def gaussian():
    with pm.Model() as model:
        pm.MvNormal("x", MEAN, cov=COV)
    return model


def _sample(model, step, **kwargs):
    kwargs = {"draws": 4000, "tune": 1000, "chains": 2, "cores": 1, "random_seed": 3,
              "progressbar": False, "compute_convergence_checks": False} | kwargs
    with model:
        return pm.sample(step=step, **kwargs)


@pytest.mark.parametrize(
    "options",
    [{}, {"proposal": "student_t"}, {"covariance": "diagonal", "proposal": "student_t"}],
    ids=["gaussian-full", "student-t-full", "student-t-diagonal"],
)
def test_correlated_gaussian_moments(gaussian, options):
    # the population starts 3 standard deviations from the mean: the tune phase (200 x N
    # iterations of burn-in) keeps the transient out of the draws
    idata = _sample(gaussian, pmd.SAMCMC(model=gaussian, **options), draws=1000, tune=200)
    x = idata.posterior["x"]
    mcse = az.mcse(idata, var_names=["x"])["x"].values
    assert np.all(np.abs(x.mean(("chain", "draw")).values - MEAN) < 4 * mcse)
    # second moments: E[x_i x_j] with their own MCSE
    draws = x.values.reshape(-1, 3)
    second = np.einsum("ni,nj->nij", draws, draws).reshape(2, -1, 9)
    se2 = np.asarray(az.mcse(second)).reshape(3, 3)
    truth2 = COV + np.outer(MEAN, MEAN)
    assert np.all(np.abs(second.reshape(-1, 3, 3).mean(0) - truth2) < 4 * se2)
    stats = idata.sample_stats
    assert stats["accept"].dtype == np.float64 and stats["reported"].dtype == np.int64
    assert 0.2 < float(stats["accept"].mean()) <= 1.0
    assert np.all((0.0 <= stats["accepted"].values) & (stats["accepted"].values <= 1.0))
    # a point of the population at random per draw; "changed" says whether the draw
    # differs from the previous one
    reported = stats["reported"].values
    assert reported.min() >= 0 and reported.max() < 30 and np.unique(reported).size == 30
    same = np.all(x.values[:, 1:] == x.values[:, :-1], axis=-1)
    np.testing.assert_array_equal(stats["changed"].values[:, 1:] == 0.0, same)


@pytest.mark.slow
def test_reported_uncertainty_is_honest_on_a_correlated_10d_gaussian():
    """The error of every posterior mean stays within 4 of ArviZ's MCSE, over 3 seeds.

    Reporting a point of the population chosen at random after every iteration made the
    draws look nearly independent while the population changes by one point at a time:
    errors reached 4 times the reported MCSE. N / 5 iterations per draw (the default)
    give draws whose autocorrelation ArviZ sees. The mean squared ratio error/MCSE
    over the 30 coordinates-and-seeds is also bounded (1 when honest; an MCSE too small
    by half gives 4)."""
    d = 10
    rng = np.random.default_rng(20)
    factor = rng.normal(size=(d, d))
    cov = factor @ factor.T / d + 0.5 * np.eye(d)
    mean = np.linspace(-2.0, 2.0, d)
    with pm.Model() as model:
        pm.MvNormal("x", mean, cov=cov)
    ratios = []
    for seed in (1, 2, 3):
        idata = _sample(model, pmd.SAMCMC(model=model), draws=500, tune=100, cores=2,
                        random_seed=seed)
        error = idata.posterior["x"].mean(("chain", "draw")).values - mean
        mcse = az.mcse(idata, var_names=["x"])["x"].values
        ratios.append(error / mcse)
    ratios = np.concatenate(ratios)
    assert np.all(np.abs(ratios) < 4.0), ratios
    assert np.mean(ratios**2) < 2.5, ratios


@pytest.mark.slow
def test_banana_shaped_target():
    """x1 ~ N(0, 1), x2 | x1 ~ N(x1^2, 0.5^2): E[x2] = 1, Var[x2] = 2.25, Var[x1] = 1,
    Cov[x1, x2] = 0 (the dependence is not linear). The tails of x2
    make a single chain's MCSE estimate unreliable (it moves by a factor of 5 between
    seeds), so the standard error comes from the spread of 8 independent chains."""
    with pm.Model() as model:
        x1 = pm.Normal("x1", 0.0, 1.0)
        pm.Normal("x2", x1**2, 0.5)
    idata = _sample(model, pmd.SAMCMC(model=model, proposal="student_t", n_points=40),
                    draws=1500, tune=750, chains=8)
    post = idata.posterior
    for name, values, truth in (
        ("E[x1]", post["x1"], 0.0),
        ("E[x2]", post["x2"], 1.0),
        ("Var[x2]", (post["x2"] - 1.0) ** 2, 2.25),
        ("Var[x1]", post["x1"] ** 2, 1.0),
        ("Cov[x1, x2]", post["x1"] * (post["x2"] - 1.0), 0.0),  # E[x1^3] = 0
    ):
        chain_means = values.mean("draw").values
        se = chain_means.std(ddof=1) / np.sqrt(chain_means.size)
        assert abs(chain_means.mean() - truth) < 4 * se, (name, chain_means, se)


def test_constrained_variables_are_sampled_on_the_unconstrained_space():
    with pm.Model() as model:
        pm.HalfNormal("s", 1.0)
        pm.Beta("p", 2.0, 5.0)
    idata = _sample(model, pmd.SAMCMC(model=model), draws=1000, tune=100)
    post = idata.posterior
    assert float(post["s"].min()) > 0 and 0 < float(post["p"].min()) < float(post["p"].max()) < 1
    for name, mean in (("s", np.sqrt(2 / np.pi)), ("p", 2 / 7)):
        assert abs(float(post[name].mean()) - mean) < 4 * float(az.mcse(post[name])), name


def test_refuses_part_of_the_model_discrete_variables_and_other_steps(gaussian):
    with pm.Model() as model:
        a = pm.Normal("a")
        pm.Normal("b")
    with pytest.raises(ValueError, match=r"must own every free variable.*\['b'\]"):
        pmd.SAMCMC([a], model=model)
    with pm.Model() as mixed:
        pm.Normal("c")
        pm.Bernoulli("g", 0.5)
    with pytest.raises(TypeError, match="all continuous"):
        pmd.SAMCMC(model=mixed)
    with model:
        steps = [pmd.SAMCMC(model=model), pm.Metropolis([model["b"]])]
        with pytest.raises(RuntimeError, match="must be the only step"):
            pm.sample(step=steps, draws=20, tune=10, chains=1, progressbar=False,
                      compute_convergence_checks=False)


def test_bad_options(gaussian):
    with pytest.raises(ValueError, match="n_points must be at least 5"):
        pmd.SAMCMC(model=gaussian, n_points=4)
    with pytest.raises(ValueError, match="Unknown proposal"):
        pmd.SAMCMC(model=gaussian, proposal="cauchy")
    with pytest.raises(ValueError, match="Unknown covariance"):
        pmd.SAMCMC(model=gaussian, covariance="banded")
    with pytest.raises(ValueError, match="init_spread"):
        pmd.SAMCMC(model=gaussian, init_spread=0.0)
    with pm.Model() as model:
        pm.Uniform("u", 0.0, 1.0, initval=0.5)
        pm.Potential("cut", pm.math.switch(model["u"] > 0.9, 0.0, -np.inf))
    with pytest.raises(ValueError, match="initial point has log density"):
        _sample(model, pmd.SAMCMC(model=model), draws=5, tune=5, chains=1)


def test_reproducible_with_one_or_two_cores(gaussian):
    step = pmd.SAMCMC(model=gaussian)
    runs = [_sample(gaussian, step, draws=200, tune=100, cores=c, random_seed=9) for c in (1, 2)]
    np.testing.assert_array_equal(runs[0].posterior["x"].values, runs[1].posterior["x"].values)
    other = _sample(gaussian, step, draws=200, tune=100, random_seed=10)
    assert not np.array_equal(runs[0].posterior["x"].values, other.posterior["x"].values)
