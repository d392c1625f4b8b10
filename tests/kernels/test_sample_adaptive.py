"""Sample Adaptive MCMC kernel: the fast substitution weights against the paper's formula
computed from scratch, the substitution rule's invariance of pi^N by exact enumeration on
a discrete stand-in, rank-one updates against refits, and moments of a Gaussian."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from pymc_discrete.kernels.sample_adaptive import (
    _substitute,
    init_population,
    samcmc_step,
    substitution_log_weights,
)


def _reference_log_weights(points, logps, y, logp_y, proposal, covariance, dof):
    """lambda_n straight from Algorithm 1: refit mean and covariance of every S_-n."""
    n, d = points.shape

    def log_q(x, pop):
        mean = pop.mean(axis=0)
        cov = np.cov(pop, rowvar=False).reshape(d, d)
        if covariance == "diagonal":
            cov = np.diag(np.diag(cov))
        if proposal == "gaussian":
            return stats.multivariate_normal(mean, cov).logpdf(x)
        return stats.multivariate_t(mean, cov, df=dof).logpdf(x)

    out = []
    for i in range(n):
        pop = points.copy()
        pop[i] = y
        out.append(log_q(points[i], pop) - logps[i])
    out.append(log_q(y, points) - logp_y)
    return np.array(out)


@pytest.mark.parametrize("proposal", ["gaussian", "student_t"])
@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_substitution_weights_match_the_formula(proposal, covariance):
    rng = np.random.default_rng(0)
    d, n = 4, 9
    A = rng.normal(size=(d, d))
    points = rng.normal(size=(n, d)) @ A
    logps = rng.normal(size=n)
    state = init_population(points, logps, covariance)
    for _ in range(5):
        y = rng.normal(size=d) @ A * 1.5
        fast = substitution_log_weights(state, y, -1.3, proposal, covariance, dof=4.0)
        slow = _reference_log_weights(points, logps, y, -1.3, proposal, covariance, 4.0)
        np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_rank_one_updates_match_a_refit(covariance):
    rng = np.random.default_rng(1)
    points = rng.normal(size=(7, 3))
    state = init_population(points, np.zeros(7), covariance)
    for k in range(40):
        y = rng.normal(size=3) * 2.0
        state = _substitute(state, k % 7, y, 0.0, covariance, refresh=10**9)
    refit = init_population(state.points, state.logps, covariance)
    for name in ("mean", "scatter", "precision"):
        np.testing.assert_allclose(getattr(state, name), getattr(refit, name), rtol=1e-9,
                                   atol=1e-10)
    np.testing.assert_allclose(state.logdet, refit.logdet, rtol=1e-10)


def test_substitution_rule_leaves_the_product_target_invariant():
    """Discrete stand-in: d = 1, the points live on 4 values, the proposal is a discretised
    Gaussian with the population's mean and variance (any family indexed by the mean and
    variance works). With N = 3 points the chain on the 4^3 populations is enumerated:
    pi^N must be stationary and detailed balance must hold, to 1e-12."""
    values = np.array([-1.0, 0.0, 0.5, 2.0])
    log_pi = np.array([0.2, 1.0, 0.6, -0.4])
    n = 3

    def log_q(x_index, pop):
        pop_values = values[list(pop)]
        mean, var = pop_values.mean(), pop_values.var(ddof=1) + 0.3  # + 0.3: never 0
        logits = -0.5 * (values - mean) ** 2 / var
        return logits[x_index] - logsumexp(logits)

    populations = list(itertools.product(range(4), repeat=n))
    index = {p: i for i, p in enumerate(populations)}
    T = np.zeros((len(populations),) * 2)
    for pop in populations:
        for y in range(4):
            q_y = np.exp(log_q(y, pop))
            log_w = []
            for i in range(n + 1):
                new = list(pop)
                if i < n:
                    new[i] = y
                removed = pop[i] if i < n else y
                log_w.append(log_q(removed, tuple(new)) - log_pi[removed])
            probs = np.exp(np.array(log_w) - logsumexp(log_w))
            for i in range(n + 1):
                new = list(pop)
                if i < n:
                    new[i] = y
                T[index[pop], index[tuple(new)]] += q_y * probs[i]
    target = np.array([np.exp(sum(log_pi[list(p)])) for p in populations])
    target /= target.sum()
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(target @ T, target, atol=1e-12)
    flow = target[:, None] * T
    np.testing.assert_allclose(flow, flow.T, atol=1e-12)


@pytest.mark.parametrize("proposal,covariance", [("gaussian", "full"), ("student_t", "diagonal")])
def test_moments_of_a_correlated_gaussian(proposal, covariance):
    """Population averages over iterations: mean and covariance within Monte Carlo error
    (batch means over 20 batches, 5 standard errors)."""
    rng = np.random.default_rng(3)
    cov = np.array([[1.0, 0.8, 0.0], [0.8, 1.5, -0.4], [0.0, -0.4, 0.7]])
    prec = np.linalg.inv(cov)
    mean = np.array([1.0, -2.0, 0.5])

    def logp(t):
        r = t - mean
        return -0.5 * float(r @ prec @ r)

    pts = mean + rng.normal(size=(20, 3)) * 3.0
    state = init_population(pts, [logp(p) for p in pts], covariance)
    for _ in range(2000):  # burn-in
        state, _ = samcmc_step(state, rng, logp, proposal, covariance)
    first, second = [], []
    for _ in range(20):
        m1, m2 = np.zeros(3), np.zeros((3, 3))
        for _ in range(1000):
            state, _ = samcmc_step(state, rng, logp, proposal, covariance)
            m1 += state.points.mean(0)
            m2 += np.einsum("ni,nj->ij", state.points, state.points) / 20
        first.append(m1 / 1000)
        second.append(m2 / 1000)
    first, second = np.array(first), np.array(second)
    est_mean = first.mean(0)
    se = first.std(0, ddof=1) / np.sqrt(20)
    assert np.all(np.abs(est_mean - mean) < 5 * se), (est_mean, se)
    est_cov = second.mean(0) - np.outer(est_mean, est_mean)
    se2 = second.std(0, ddof=1) / np.sqrt(20)
    assert np.all(np.abs(est_cov - cov) < 5 * se2), (est_cov, cov, se2)
