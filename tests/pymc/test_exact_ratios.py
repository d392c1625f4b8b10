"""proposal="exact": every single-flip log-ratio exactly, at (colours + 1) evaluations of
the model's elementwise terms per draw."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_discrete as pmd
from pymc_discrete.kernels.structure import greedy_colouring
from pymc_discrete.pymc.models import ising_model
from tests.exact import albp_matrix, all_states, assert_reversible, target_distribution


def _brute_force_ratios(model, step, x, point):
    """Exact log-ratios from the model's own compiled logp, one flip at a time."""
    fn = model.compile_logp()
    name = step.vars[0].name
    shape = point[name].shape

    def logp(z):
        p = dict(point)
        p[name] = z.reshape(shape)
        return fn(p)

    base = logp(x)
    out = []
    for i in range(x.size):
        y = x.copy()
        y[i] = 1 - y[i]
        out.append(logp(y) - base)
    return np.array(out)


@pytest.fixture(scope="module")
def regression_model():
    """Indicators in a Gaussian likelihood with continuous coefficients: gradient ratios
    are first-order only."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 6))
    y = X @ np.array([1.5, 0, -2.0, 0, 0, 1.0]) + rng.normal(0, 0.5, 12)
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.3, shape=6)
        beta = pm.Normal("beta", 0, 2, shape=6)
        pm.Normal("y", mu=pt.as_tensor(X) @ (g * beta), sigma=0.5, observed=y)
    return model


def test_exact_ratios_match_brute_force_at_random_points(regression_model):
    model = regression_model
    step = pmd.ALBP([model["g"]], model=model, proposal="exact")
    gradient = pmd.ALBP([model["g"]], model=model)
    assert step.ratios_are_exact
    rng = np.random.default_rng(2)
    for _ in range(4):
        point = model.initial_point()
        point["beta"] = rng.normal(0, 2, 6)
        point["g"] = rng.integers(0, 2, 6)
        for s in (step, gradient):
            s.shared["beta"].set_value(point["beta"])
        x = point["g"].astype(np.int64)
        truth = _brute_force_ratios(model, step, x, point)
        np.testing.assert_allclose(step._logp_and_ratios(x)[1], truth, rtol=1e-9, atol=1e-9)
        # the gradient estimate misses the quadratic term of the likelihood
        assert not np.allclose(gradient._logp_and_ratios(x)[1], truth, atol=1e-3)
    assert not gradient.ratios_are_exact


def test_ising_needs_few_colours_and_matches_the_gradient_ratios():
    """Multilinear model: the gradient ratios are exact too, and the lattice is coloured
    with a handful of colours (cost independent of N)."""
    model = ising_model(12)
    exact = pmd.ALBP([model["x"]], model=model, proposal="exact")
    gradient = pmd.ALBP([model["x"]], model=model)
    assert exact._logp_and_ratios.structure.n_colours <= 5
    assert exact.ratios_are_exact and gradient.ratios_are_exact
    x = np.random.default_rng(3).integers(0, 2, 144)
    np.testing.assert_allclose(exact._logp_and_ratios(x)[1], gradient._logp_and_ratios(x)[1],
                               rtol=1e-9, atol=1e-9)


def test_greedy_colouring_separates_sites_that_share_a_term():
    terms = [np.array([0]), np.array([0, 1]), np.array([1, 2]), np.array([3]), np.array([2])]
    colour, n = greedy_colouring(terms, 4)
    for k in range(4):
        sharing = [i for i, t in enumerate(terms) if k in t]
        assert len({colour[i] for i in sharing}) == len(sharing)
    assert n == 2


@pytest.mark.parametrize("potential,op", [
    (lambda g: pt.switch(pt.eq(g[0] + g[1], 1), 0.8, -0.3) + 0.5 * g[2] * g[0], "eq"),
    (lambda g: 0.9 * pt.mod(g.sum(), 2), "mod"),
])
def test_fallback_to_exact_samples_the_right_marginals(potential, op):
    with pm.Model() as model:
        g = pm.Bernoulli("g", np.array([0.3, 0.6, 0.45]), shape=3)
        pm.Potential("term", potential(g))
    with pytest.warns(pmd.RelaxationWarning, match=op):
        step = pmd.ALBP([g], model=model)
    assert step.proposal == "exact" and step.ratios_are_exact
    fn = model.compile_logp()
    states = all_states(3)
    p = np.exp([fn({"g": s}) for s in states])
    truth = (p / p.sum()) @ states
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        idata = pm.sample(step=step, draws=3000, tune=500, chains=2, cores=1, random_seed=5,
                          progressbar=False, compute_convergence_checks=False)
    import arviz as az

    mean = idata.posterior["g"].mean(("chain", "draw")).values
    mcse = az.mcse(idata, var_names=["g"])["g"].values
    assert np.all(np.abs(mean - truth) <= 4 * mcse), (mean, truth, mcse)


def test_albp_with_exact_ratios_is_reversible_on_a_gaussian_target():
    """Transition matrix of ALBP driven by the exact ratios of a target whose gradient
    ratios are inexact (the enumeration takes the ratios as given)."""
    from tests.targets import exact_ratios, gaussian_target

    base = gaussian_target(5, 8)

    def target(x):
        return base(x)[0], exact_ratios(base, x)

    for r in (1, 2, 3):
        for weight in ("barker", "sqrt"):
            assert_reversible(albp_matrix(target, 5, r, weight), target_distribution(target, 5))


def test_fhmm_and_rbm_exact_ratios():
    """The paper's FHMM (sparse: few colours) and an RBM (dense: one colour per site)."""
    from pymc_discrete.pymc.models import fhmm_model, rbm_model

    fhmm = fhmm_model(40, 3, 1.0, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the FHMM relaxes: no fallback warning
        gradient = pmd.ALBP([fhmm["x"]], model=fhmm)
    exact = pmd.ALBP([fhmm["x"]], model=fhmm, proposal="exact")
    assert exact.ratios_are_exact and not gradient.ratios_are_exact
    assert exact._logp_and_ratios.structure.n_colours <= 8  # independent of L
    rng = np.random.default_rng(4)
    W, b, c = rng.normal(0, 1, (8, 5)), rng.normal(0, 1, 8), rng.normal(0, 1, 5)
    rbm = rbm_model(W, b, c)
    exact = pmd.ALBP([rbm["x"]], model=rbm, proposal="exact")
    assert exact.ratios_are_exact
    assert exact._logp_and_ratios.structure.n_colours == 8
    x = rng.integers(0, 2, 8)

    def logp(v):
        v = v.astype(float)
        return b @ v + np.logaddexp(0, c + v @ W).sum()

    flips = [logp(np.where(np.arange(8) == i, 1 - x, x)) - logp(x) for i in range(8)]
    np.testing.assert_allclose(exact._logp_and_ratios(x)[1], flips, rtol=1e-9, atol=1e-9)
