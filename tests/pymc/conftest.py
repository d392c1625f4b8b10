"""Small PyMC models with enumerable truth, shared across the PyMC-level tests."""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_discrete as pmd
from tests.exact import all_states
from tests.pymc.checks import PRODUCT_P

P_COUPLED = np.array([0.3, 0.6, 0.5, 0.8])
J_COUPLED = np.array(
    [[0.0, 0.6, -0.4, 0.2], [0.6, 0.0, 0.5, -0.3], [-0.4, 0.5, 0.0, 0.4], [0.2, -0.3, 0.4, 0.0]]
)


def coupled_logp(x: np.ndarray) -> float:
    s = 2.0 * x - 1.0
    return float(
        np.sum(x * np.log(P_COUPLED) + (1 - x) * np.log1p(-P_COUPLED)) + 0.5 * s @ J_COUPLED @ s
    )


@pytest.fixture(scope="session")
def coupled_model():
    """Four coupled binary sites (Bernoulli priors plus a pairwise potential)."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", P_COUPLED, shape=4)
        s = 2.0 * x - 1.0
        pm.Potential("coupling", 0.5 * s @ pt.as_tensor(J_COUPLED) @ s)
    return model


@pytest.fixture(scope="session")
def coupled_truth():
    """Exact marginals P(x_i = 1) of the coupled model."""
    states = all_states(4)
    logps = np.array([coupled_logp(x) for x in states])
    p = np.exp(logps - logps.max())
    return (p / p.sum()) @ states


@pytest.fixture(scope="session")
def forbidden_state():
    """Three Bernoulli(0.7) sites with log(1 - prod(x)): the all-ones state has logp -inf
    (and gradient NaN). Returns the model, its exact marginals and a start at all zeros."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.7, shape=3)
        pm.Potential("forbid", pt.log(1.0 - pt.prod(x)))
    states = all_states(3)
    p = np.array([0.0 if s.all() else np.prod(np.where(s == 1, 0.7, 0.3)) for s in states])
    start = model.initial_point()
    start["x"] = np.zeros(3, dtype=np.int64)
    return model, (p / p.sum()) @ states, start


# Indicators g with a Gaussian likelihood and an unknown offset mu sampled by NUTS.
X_MIXED = np.array([[1.0, 0.5, -0.7], [0.2, -1.0, 0.4], [-0.3, 0.8, 1.1], [0.9, 0.1, -0.2], [0.0, -0.6, 0.9]])
Y_MIXED = np.array([1.4, -0.9, 1.3, 0.8, 0.2])


@pytest.fixture(scope="session")
def mixed_model():
    """g ~ Bernoulli(0.5)^3, mu ~ N(0, 1), y ~ N(mu + X g, 1)."""
    with pm.Model() as model:
        g = pm.Bernoulli("g", 0.5, shape=3)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu=mu + pt.as_tensor(X_MIXED) @ g, sigma=1.0, observed=Y_MIXED)
    return model


@pytest.fixture(scope="session")
def mixed_truth():
    """Exact P(g_i = 1 | y) and E[mu | y] (mu integrated out analytically)."""
    n = Y_MIXED.size
    cov = np.eye(n) + np.ones((n, n))
    prec = np.linalg.inv(cov)
    weights, mu_means = [], []
    for g in itertools.product((0, 1), repeat=3):
        r = Y_MIXED - X_MIXED @ np.array(g)
        weights.append(np.exp(-0.5 * r @ prec @ r))
        mu_means.append(r.sum() / (n + 1))
    w = np.array(weights) / np.sum(weights)
    return w @ all_states(3), float(w @ np.array(mu_means))


# A Potts-like model of four 3-category sites: field p and pairwise couplings J.
P_POTTS = np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4], [0.6, 0.2, 0.2]])
J_POTTS = np.array([[0, 0.8, -0.5, 0.3], [0.8, 0, 0.6, 0], [-0.5, 0.6, 0, 0.7], [0.3, 0, 0.7, 0]])


@pytest.fixture(scope="session")
def potts():
    """Four categorical sites with pairwise couplings, and their exact marginals (4, 3)."""
    with pm.Model() as model:
        z = pm.Categorical("z", P_POTTS, shape=4)
        same = pt.eq(z[:, None], z[None, :])
        pm.Potential("coupling", 0.5 * (pt.as_tensor(J_POTTS) * same).sum())
    logps = []
    states = np.array(list(itertools.product(range(3), repeat=4)))
    for s in states:
        lp = np.log(P_POTTS[np.arange(4), s]).sum()
        lp += 0.5 * (J_POTTS * (s[:, None] == s[None, :])).sum()
        logps.append(lp)
    p = np.exp(np.array(logps) - max(logps))
    p /= p.sum()
    truth = np.array([[p[states[:, i] == c].sum() for c in range(3)] for i in range(4)])
    return model, truth


@pytest.fixture(scope="module")
def product_bernoulli():
    """The paper's Bernoulli configuration C2: N = 800, p_i ~ U[0.15, 0.85]."""
    with pm.Model() as model:
        pm.Bernoulli("x", PRODUCT_P, shape=PRODUCT_P.size)
    return model


@pytest.fixture
def registered():
    """``pmd.register()`` for the test, undone afterwards whatever happens."""
    pmd.register()
    try:
        yield
    finally:
        pmd.unregister()
    assert not pmd.is_registered()
