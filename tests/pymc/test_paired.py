"""PairedFlip: a binary indicator flipped with a fresh draw of the coefficients it
switches. Checked against exact posteriors: conjugate regressions (the indicators'
joint distribution in closed form, the coefficients' means too), a pairing that is not a
switch (the scale mixture) and a logistic regression (quadrature), each per chain; the
automatic choice through ``recommend`` and ``register``; refused proposals; seeds."""

from __future__ import annotations

import itertools
import logging

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy.special import expit, log_expit, logsumexp

import pymc_discrete as pmd
from pymc_discrete.kernels.paired import log_density, metropolis_log_ratio
from pymc_discrete.pymc.paired import scaled_coefficients, switched_coefficients
from tests.pymc.joint import assert_joint_frequencies_match

#: means must lie within this many Monte Carlo standard errors of the exact ones
N_MCSE = 4.0
PATTERNS = np.array(list(itertools.product((0, 1), repeat=3)))
INCLUSION, SLAB, SPIKE = 0.3, 0.7, 0.05


def _design(seed: int = 3, n: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """Three correlated predictors and a weak signal: every inclusion pattern has a
    noticeable posterior probability."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 1))
    X = 0.7 * z + 0.7 * rng.normal(size=(n, 3))
    y = X @ np.array([0.45, 0.0, -0.3]) + rng.normal(size=n)
    return X, y


def _switched_model(X, y) -> pm.Model:
    """``g * beta`` with the noise scale known: beta's conditional is Gaussian."""
    with pm.Model() as model:
        g = pm.Bernoulli("g", INCLUSION, shape=3)
        beta = pm.Normal("beta", 0.0, SLAB, shape=3)
        pm.Normal("y", pm.math.dot(X, g * beta), 1.0, observed=y)
    return model


def _scale_mixture_model(X, y) -> pm.Model:
    """The indicator picks beta's prior scale (no switch: beta is always in the
    likelihood)."""
    with pm.Model() as model:
        g = pm.Bernoulli("g", INCLUSION, shape=3)
        beta = pm.Normal("beta", 0.0, pt.switch(g, SLAB, SPIKE), shape=3)
        pm.Normal("y", pm.math.dot(X, beta), 1.0, observed=y)
    return model


def _conjugate_truth(X, y, scales_of) -> tuple[np.ndarray, np.ndarray]:
    """Exact P(pattern) over PATTERNS and E[beta] for ``y ~ N(X beta, I)``, ``beta ~ N(0,
    diag(scales_of(g))^2)``; a scale of 0 is an excluded coefficient under the ``g *
    beta`` model, whose own prior N(0, SLAB^2) then gives its mean 0."""
    log_post, means = [], []
    for g in PATTERNS:
        d = scales_of(g)
        cov = np.eye(len(y)) + (X * d**2) @ X.T
        sign, logdet = np.linalg.slogdet(cov)
        log_post.append(-0.5 * (logdet + y @ np.linalg.solve(cov, y))
                        + np.sum(np.where(g, np.log(INCLUSION), np.log1p(-INCLUSION))))
        inside = d > 0
        mean = np.zeros(3)
        Xg = X[:, inside]
        precision = Xg.T @ Xg + np.diag(1.0 / d[inside] ** 2)
        mean[inside] = np.linalg.solve(precision, Xg.T @ y)
        means.append(mean)
    log_post = np.array(log_post)
    probs = np.exp(log_post - logsumexp(log_post))
    return probs, probs @ np.array(means)


def _assert_means(idata, name: str, truth: np.ndarray) -> None:
    draws = idata.posterior[name].values  # (chain, draw, 3)
    for j, exact in enumerate(truth):
        x = draws[..., j]
        se = float(az.mcse(x))
        assert abs(x.mean() - exact) <= N_MCSE * se, (
            f"{name}[{j}]: {x.mean()} against {exact} (MCSE {se})")


def _sample(model, step, *, draws=2000, tune=300, chains=2, seed=5, cores=1, **kwargs):
    with model:
        return pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, step=step,
                         random_seed=seed, progressbar=False,
                         compute_convergence_checks=False, **kwargs)


def test_switched_indicators_and_coefficients_match_the_conjugate_posterior():
    """PairedFlip alone (its refresh moves beta when no flip does) on ``g * beta``: the
    joint distribution of the 8 inclusion patterns per chain and beta's means are the
    exact ones; it finds beta by itself, and one Newton step (the fit is exact)."""
    X, y = _design()
    model = _switched_model(X, y)
    probs, beta_mean = _conjugate_truth(X, y, lambda g: np.where(g, SLAB, 0.0))
    assert probs.min() > 0.005 and probs.max() < 0.5  # every pattern matters
    with model:
        step = pmd.PairedFlip([model["g"]])
    assert step.coefficients_name == "beta" and step.newton_steps == 1
    idata = _sample(model, [step])
    assert_joint_frequencies_match(idata, ["g"], PATTERNS, probs, n_mcse=N_MCSE)
    _assert_means(idata, "beta", beta_mean)
    # the collapsed flips move: most draws flip some site
    assert float((idata.sample_stats["jump_distance"] > 0).mean()) > 0.3
    with model, pytest.raises(ValueError, match="swaps must be at least 0"):
        pmd.PairedFlip([model["g"]], swaps=-1)


def test_a_swap_chooses_every_included_excluded_pair_alike():
    """The swap proposal is symmetric because it picks each (included, excluded) pair
    with probability 1 / (|in| |out|), which the swapped pattern shares: frequencies of
    the 2 x 3 swaps of one pattern within 4 standard errors of 1/6; none where every
    site is in."""
    X, y = _design()
    model = _switched_model(X, y)
    with model:
        step = pmd.PairedFlip([model["g"]], rng=np.random.default_rng(3))
    assert step.swaps == 3  # one per site by default
    g = np.array([1, 0, 1, 0, 0])
    draws = 6000
    counts = {}
    for _ in range(draws):
        swapped = step._swap(g)
        assert swapped.sum() == g.sum()
        key = (int(np.flatnonzero(g > swapped)[0]), int(np.flatnonzero(swapped > g)[0]))
        counts[key] = counts.get(key, 0) + 1
    assert sorted(counts) == [(i, j) for i in (0, 2) for j in (1, 3, 4)]
    freq = np.array(list(counts.values())) / draws
    assert np.all(np.abs(freq - 1 / 6) < 4 * np.sqrt(1 / 6 * 5 / 6 / draws))
    assert step._swap(np.ones(5, dtype=np.int64)) is None


def test_a_pairing_that_is_not_a_switch_is_still_exact():
    """Forced on the scale mixture (beta is in the likelihood whatever g), with NUTS on
    beta too: the flips are Metropolis-Hastings moves, exact whatever the pairing."""
    X, y = _design()
    model = _scale_mixture_model(X, y)
    probs, beta_mean = _conjugate_truth(X, y, lambda g: np.where(g, SLAB, SPIKE))
    assert probs.min() > 0.01
    with model:
        assert switched_coefficients(model, model["g"])[0] is None
        step = pmd.PairedFlip([model["g"]], coefficients=model["beta"])
        nuts = pm.NUTS([model["beta"]])
    idata = _sample(model, [step, nuts])
    assert_joint_frequencies_match(idata, ["g"], PATTERNS, probs, n_mcse=N_MCSE)
    _assert_means(idata, "beta", beta_mean)


def _logistic():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(30, 2))
    y = (rng.random(30) < expit(X @ np.array([0.6, 0.0]))).astype(int)
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.5, shape=2)
        beta = pm.Normal("beta", 0.0, 1.5, shape=2)
        pm.Bernoulli("y", logit_p=pm.math.dot(X, g * beta), observed=y)
    # quadrature: beta on a grid, every pattern (an excluded beta integrates its prior)
    grid = np.linspace(-6, 6, 401)
    b0, b1 = np.meshgrid(grid, grid, indexing="ij")
    log_prior = -0.5 * (b0**2 + b1**2) / 1.5**2
    patterns = np.array(list(itertools.product((0, 1), repeat=2)))
    log_mass, means = [], []
    for g_ in patterns:
        eta = X[:, :1, None] * (g_[0] * b0)[None] + X[:, 1:, None] * (g_[1] * b1)[None]
        loglik = (y[:, None, None] * log_expit(eta)
                  + (1 - y[:, None, None]) * log_expit(-eta)).sum(0)
        logw = loglik + log_prior
        w = np.exp(logw - logw.max())
        log_mass.append(np.log(w.sum()) + logw.max())
        means.append([(w * b0).sum() / w.sum(), (w * b1).sum() / w.sum()])
    log_mass = np.array(log_mass)
    probs = np.exp(log_mass - logsumexp(log_mass))
    return model, patterns, probs, probs @ np.array(means)


def test_a_logistic_regression_matches_quadrature():
    """A likelihood that is not Gaussian in beta: two Newton steps, the fit approximate,
    the chain exact (patterns per chain and beta's means against quadrature)."""
    model, patterns, probs, beta_mean = _logistic()
    assert probs.min() > 0.1
    with model:
        step = pmd.PairedFlip([model["g"]])
        nuts = pm.NUTS([model["beta"]])
    assert step.newton_steps == 2
    idata = _sample(model, [step, nuts], seed=9)
    assert_joint_frequencies_match(idata, ["g"], patterns, probs, n_mcse=N_MCSE)
    _assert_means(idata, "beta", beta_mean)


def test_proposals_of_impossible_or_nan_density_are_refused():
    """A potential forbids beta[0] > 0.2: no draw ever has it, and the chain still moves."""
    X, y = _design()
    model = _switched_model(X, y)
    with model:
        pm.Potential("cut", pt.switch(model["beta"][0] > 0.2, -np.inf, 0.0))
        step = pmd.PairedFlip([model["g"]])
    idata = _sample(model, [step], draws=300, tune=0, initvals={"beta": np.zeros(3)})
    beta = idata.posterior["beta"].values
    assert beta[..., 0].max() <= 0.2
    assert np.unique(beta[..., 0]).size > 50


def test_the_fit_is_the_exact_conditional_of_a_gaussian_regression():
    """With the density quadratic in beta, the fit at any indicators is beta's exact
    conditional (mean and precision), its log density is the Gaussian's, and the proposal
    is mean + L^-T z."""
    X, y = _design()
    model = _switched_model(X, y)
    with model:
        step = pmd.PairedFlip([model["g"]])
    for g in ([1, 0, 1], [0, 0, 0], [1, 1, 1]):
        g = np.array(g)
        z = np.array([0.3, -1.1, 0.4])
        b, logp, log_q, fit = step.proposal(g, z)
        Xg = X * g  # an excluded coefficient keeps its prior
        precision = Xg.T @ Xg + np.eye(3) / SLAB**2
        mean = np.linalg.solve(precision, Xg.T @ y)
        np.testing.assert_allclose(fit.mean, mean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fit.chol_precision @ fit.chol_precision.T, precision,
                                   rtol=1e-10)
        d = b - mean
        exact = (-0.5 * d @ precision @ d + 0.5 * np.linalg.slogdet(precision)[1]
                 - 1.5 * np.log(2 * np.pi))
        assert log_q == pytest.approx(exact, abs=1e-9)
        assert log_density(b, fit) == pytest.approx(exact, abs=1e-9)
        assert logp == pytest.approx(model.compile_logp()({"g": g, "beta": b}), abs=1e-9)
    assert metropolis_log_ratio(0.0, -np.inf, 0.0, 0.0) == -np.inf
    assert metropolis_log_ratio(np.nan, 1.0, 0.0, 0.0) == -np.inf
    assert metropolis_log_ratio(-1.0, -2.0, 0.5, 0.25) == pytest.approx(-0.75)


def test_the_fit_falls_back_to_the_anchor_where_the_density_is_not_concave():
    """Where the log density is flat or convex in the coefficients (precision not
    positive definite), the fit keeps the anchor with unit precision."""
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.5, shape=2)
        beta = pm.Normal("beta", 0.0, 1.0, shape=2)
        # flat in beta where g = 1 (the prior's curvature cancelled), convex with weight 2
        weight = pm.Data("weight", 0.5)
        pm.Potential("bend", weight * ((g * beta) ** 2).sum())
    for w in (0.5, 2.0):
        with model:
            pm.set_data({"weight": w})
            step = pmd.PairedFlip([g], coefficients=beta)
        b, logp, log_q, fit = step.proposal(np.array([1, 1]), np.array([0.5, -0.5]))
        np.testing.assert_array_equal(fit.mean, [0.0, 0.0])
        np.testing.assert_array_equal(fit.chol_precision, np.eye(2))
        np.testing.assert_allclose(b, [0.5, -0.5])
        # where g = 0 the density is the prior's: the fit is exact there
        _, _, _, fit = step.proposal(np.array([0, 0]), np.zeros(2))
        np.testing.assert_allclose(fit.chol_precision, np.eye(2), atol=1e-12)


def test_recommend_and_register_pair_the_indicator_with_its_coefficients(caplog):
    """recommend() says PairedFlip on ``g * beta`` (several colours: the sites share the
    likelihood) and on the scale mixture (one colour, which CollapsedNUTS would otherwise
    sum out into a spike-on-slab density per coefficient), not on a block whose sites act
    on a per-site variable through the likelihood (summed out); register() builds
    PairedFlip with NUTS on the rest (beta left to the exact flips: its conditional is
    Gaussian)."""
    X, y = _design()
    with pm.Model() as model:
        g = pm.Bernoulli("g", INCLUSION, shape=3)
        beta = pm.Normal("beta", 0.0, SLAB, shape=3)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", pm.math.dot(X, g * beta), sigma, observed=y)
    choice = pmd.recommend([g], model=model)
    assert choice.step is pmd.PairedFlip and choice.coefficients.name == "beta"
    assert "beta" in choice.reason
    scale = _scale_mixture_model(X, y)
    choice = pmd.recommend([scale["g"]], model=scale)
    assert choice.step is pmd.PairedFlip and choice.coefficients.name == "beta"
    assert "acts on element j of beta alone" in choice.reason
    assert scaled_coefficients(model, model["g"])[0] is None  # g * beta: a switch instead
    with pm.Model() as occupancy:  # z_j and u_j meet in the likelihood: summed out
        z = pm.Bernoulli("z", 0.6, shape=3)
        u = pm.Normal("u", 0.0, 1.0, shape=3)
        pm.Bernoulli("y", z * pm.math.sigmoid(u), observed=[1, 0, 0])
    assert scaled_coefficients(occupancy, occupancy["z"])[0] is None
    assert pmd.recommend([occupancy["z"]], model=occupancy).step is pmd.CollapsedNUTS
    pmd.register()
    try:
        with caplog.at_level(logging.INFO, logger="pymc"):
            idata = _sample(model, None, draws=200, tune=200, chains=1)
    finally:
        pmd.unregister()
    assert "pymc_discrete chose PairedFlip for [g] with NUTS for [sigma_log__]" in caplog.text
    assert "jump_distance" in idata.sample_stats and "diverging" in idata.sample_stats


def test_refusals():
    X, y = _design()
    with pm.Model() as model:
        k = pm.Categorical("k", np.ones(3) / 3, shape=3)
        g = pm.Bernoulli("g", 0.5, shape=2)
        b = pm.Normal("b", 0, 1, shape=3)
        pm.Normal("y", pm.math.dot(X, b) + k.sum() + g.sum(), 1.0, observed=y)
    with model:
        with pytest.raises(ValueError, match="binary variable with values 0 and 1"):
            pmd.PairedFlip([k])
        with pytest.raises(ValueError, match="one indicator variable"):
            pmd.PairedFlip([g, k])
        with pytest.raises(ValueError, match="found nothing to pair with g"):
            pmd.PairedFlip([g])
        with pytest.raises(TypeError, match="must be continuous"):
            pmd.PairedFlip([g], coefficients=k)


def test_same_seed_same_draws_on_one_and_two_cores():
    X, y = _design()
    model = _switched_model(X, y)

    def run(cores):
        with model:
            step = pmd.PairedFlip([model["g"]])
        return _sample(model, [step], draws=100, tune=50, chains=2, seed=11, cores=cores)

    runs = [run(1), run(1), run(2)]
    for other in runs[1:]:
        for name in ("g", "beta"):
            np.testing.assert_array_equal(runs[0].posterior[name].values,
                                          other.posterior[name].values)
    assert np.unique(runs[0].posterior["beta"].values[..., 0]).size > 50
