"""Sample Adaptive MCMC kernel: the fast substitution weights against the paper's formula
computed from scratch, the substitution rule's invariance of pi^N by exact enumeration on
a discrete stand-in, rank-one updates against refits, and moments of a Gaussian."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp

from pymc_discrete.samcmc.kernel import (
    PopulationState,
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


def _explicit_log_weights(points, logps, y, logp_y, proposal, covariance, dof):
    """lambda_n with every S_-n's mean and covariance built by hand and the Gaussian or
    Student-t log density written out (O(N d^3)); -inf where S_-n's covariance is
    singular."""
    n, d = points.shape

    def log_q(x, pop):
        mean = pop.sum(axis=0) / n
        cov = sum(np.outer(p - mean, p - mean) for p in pop) / (n - 1)
        if covariance == "diagonal":
            cov = np.diag(np.diag(cov))
        if np.linalg.matrix_rank(cov) < d:
            return -np.inf
        r = x - mean
        quad = r @ np.linalg.solve(cov, r)
        sign, logdet = np.linalg.slogdet(cov)
        assert sign > 0
        if proposal == "gaussian":
            return -0.5 * (quad + logdet + d * np.log(2 * np.pi))
        return (gammaln((dof + d) / 2) - gammaln(dof / 2) - d / 2 * np.log(dof * np.pi)
                - logdet / 2 - (dof + d) / 2 * np.log1p(quad / dof))

    out = []
    for i in range(n):
        pop = points.copy()
        pop[i] = y
        out.append(log_q(points[i], pop) - logps[i])
    out.append(log_q(y, points) - logp_y)
    return np.array(out)


@pytest.mark.parametrize("proposal", ["gaussian", "student_t"])
@pytest.mark.parametrize("covariance", ["full", "diagonal"])
@pytest.mark.parametrize("d,n", [(1, 5), (2, 5), (3, 30), (5, 12)])
def test_compiled_weights_match_explicit_densities(proposal, covariance, d, n):
    """The compiled kernels (3x3 Woodbury correction in closed form, rank-one updated
    statistics) against every leave-one-in density computed from scratch, for proposals
    near the population and far out in its tails."""
    rng = np.random.default_rng(10 * d + n)
    A = rng.normal(size=(d, d)) + 2.0 * np.eye(d)
    points = rng.normal(size=(n, d)) @ A.T
    state = init_population(points, rng.normal(size=n), covariance)
    for k in range(2 * n):  # statistics from rank-one updates, not from a refit
        y = rng.normal(size=d) @ A.T * 1.5
        state = _substitute(state, k % n, y, float(rng.normal()), covariance, refresh=10**9)
    assert state.updates == 2 * n
    for scale in (0.1, 1.0, 3.0, 20.0):
        y = state.mean + rng.normal(size=d) @ A.T * scale
        logp_y = float(rng.normal())
        fast = substitution_log_weights(state, y, logp_y, proposal, covariance, dof=3.5)
        slow = _explicit_log_weights(state.points, state.logps, y, logp_y, proposal,
                                     covariance, 3.5)
        assert np.all(np.isfinite(slow))
        np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("proposal", ["gaussian", "student_t"])
@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_a_degenerate_leave_one_in_population_gets_weight_zero(proposal, covariance):
    """Replacing the one point off the x axis by a point on it leaves a population on a
    line (full covariance) with a constant second coordinate (diagonal): weight -inf,
    the other weights as computed from scratch. All numbers are dyadic, so the
    determinant of the 3x3 capacitance matrix comes out exactly 0."""
    points = np.array([[-1.0, 0.0], [-1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])
    logps = np.array([-0.5, -0.25, 0.0, -1.0])
    y = np.array([1.0, 0.0])
    if covariance == "full":  # the exact statistics (scatter [[1, 1], [1, 3]])
        state = PopulationState(points, logps, np.array([-0.5, 0.5]),
                                np.array([[1.0, 1.0], [1.0, 3.0]]),
                                np.array([[1.5, -0.5], [-0.5, 0.5]]), float(np.log(2.0)), 0)
    else:
        state = init_population(points, logps, covariance)
    fast = substitution_log_weights(state, y, -0.75, proposal, covariance, dof=4.0)
    slow = _explicit_log_weights(points, logps, y, -0.75, proposal, covariance, 4.0)
    assert fast[3] == -np.inf and slow[3] == -np.inf
    assert np.all(np.isfinite(np.delete(fast, 3)))
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("proposal", ["gaussian", "student_t"])
@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_one_iteration_uses_a_fixed_sequence_of_draws(proposal, covariance):
    """standard_normal(N) (full) or standard_normal(d) (diagonal), a chi-square for a
    Student-t, then one uniform, whatever the outcome (also for a proposal of zero
    density)."""
    rng = np.random.default_rng(5)
    points = rng.normal(size=(8, 3))
    state = init_population(points, -0.5 * (points**2).sum(1), covariance)
    for logp in (lambda t: -0.5 * float(t @ t), lambda t: -np.inf):
        for seed in range(5):
            used, replay = np.random.default_rng(seed), np.random.default_rng(seed)
            samcmc_step(state, used, logp, proposal, covariance, dof=3.0)
            replay.standard_normal(8 if covariance == "full" else 3)
            if proposal == "student_t":
                replay.chisquare(3.0)
            replay.random()
            assert used.random() == replay.random()


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


@pytest.mark.parametrize("logp_y", [np.nan, -np.inf])
def test_a_proposal_without_density_never_enters(logp_y):
    pts = np.random.default_rng(2).normal(size=(8, 2))
    state = init_population(pts, -0.5 * (pts**2).sum(1), "full")
    weights = substitution_log_weights(state, np.zeros(2), logp_y)
    assert np.all(weights[:-1] == -np.inf) and weights[-1] == 0.0
