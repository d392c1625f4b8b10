"""The window of a latent count: the tail bound against exact tails, and the window
search on conditionals whose tails are known."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import binom, geom, nbinom, poisson

from pymc_discrete.kernels.counts import TAIL_MASS, count_window, tail_mass_bound


def _exact_tail(logp: np.ndarray, end: int) -> float:
    """Mass of values >= end relative to the mass below, from a table long enough that
    what it leaves out is negligible."""
    return float(np.exp(logsumexp(logp[end:]) - logsumexp(logp[:end])))


@pytest.mark.parametrize("end", [3, 8, 20])
def test_tail_bound_is_exact_for_a_geometric(end):
    values = np.arange(1, end + 1)
    bound = tail_mass_bound(geom.logpmf(values, 0.3)[None, :])[0]
    exact = geom.sf(end, 0.3) / geom.cdf(end, 0.3)
    assert bound == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("logpmf", [
    lambda v: poisson.logpmf(v, 7.5),
    lambda v: nbinom.logpmf(v, 3, 0.3),
    # a latent abundance given three counts of it: Poisson prior times Binomial likelihoods
    lambda v: poisson.logpmf(v, 12.0) + binom.logpmf(np.array([[4], [6], [5]]), v, 0.4).sum(0),
])
def test_tail_bound_holds_past_the_mode(logpmf):
    """For log-concave conditionals the bound is never below the true tail."""
    logp = logpmf(np.arange(400))
    mode = int(np.argmax(logp))
    for end in range(mode + 2, mode + 40):
        bound = tail_mass_bound(logp[None, :end])[0]
        assert bound >= _exact_tail(logp, end) * (1 - 1e-9)


def test_tail_bound_marks_rising_and_ended_windows():
    rising = np.log(np.array([[0.1, 0.2, 0.3]]))
    ended = np.array([[0.0, -1.0, -np.inf]])
    assert np.isinf(tail_mass_bound(rising)[0])
    assert tail_mass_bound(ended)[0] == 0.0


@pytest.mark.parametrize("rate", [0.3, 3.0, 30.0, 300.0])
def test_window_of_a_poisson_leaves_at_most_the_tolerance(rate):
    lower, width = count_window(lambda v: poisson.logpmf(v, rate)[None, :], 1)
    logp = poisson.logpmf(np.arange(4000), rate)
    assert lower[0] == 0
    assert _exact_tail(logp, int(width[0])) <= TAIL_MASS
    # and it is not much wider than needed: one value fewer would not always do, but a
    # quarter fewer would leave more than the tolerance
    assert _exact_tail(logp, int(0.75 * width[0])) > TAIL_MASS or width[0] < 20


def test_window_of_thinned_counts_starts_at_the_largest_count():
    """N ~ Poisson(lambda_i), three counts ~ Binomial(N, p): no value below the largest
    count is possible, and the window holds all but the tolerance of every site."""
    counts = np.array([[0, 1, 0], [7, 12, 9], [30, 41, 35]])
    rates = np.array([2.0, 15.0, 60.0])

    def site_logp(v):
        prior = poisson.logpmf(v[None, :], rates[:, None])
        like = binom.logpmf(counts[:, :, None], v[None, None, :], 0.6).sum(1)
        return prior + like

    lower, width = count_window(site_logp, 3)
    np.testing.assert_array_equal(lower, counts.max(axis=1))
    full = site_logp(np.arange(3000))
    for i in range(3):
        assert _exact_tail(full[i], int(lower[i] + width[i])) <= TAIL_MASS
        assert np.isneginf(full[i, : lower[i]]).all()


def test_window_refuses_what_it_cannot_cover():
    with pytest.raises(ValueError, match="no possible value"):
        count_window(lambda v: np.full((1, v.size), -np.inf), 1, max_count=256)
    with pytest.raises(ValueError, match="more than the tolerated mass"):
        count_window(lambda v: np.zeros((1, v.size)), 1, max_count=256)


# ---- the locally balanced count step ------------------------------------------------

from pymc_discrete.kernels.counts import (  # noqa: E402
    MAX_COUNT_STEP,
    count_lbp_step,
    count_sizes,
    tune_count_sizes,
)
from tests.exact import assert_irreducible_and_aperiodic, assert_reversible  # noqa: E402

#: a latent abundance given three counts (lowest possible value 6), cut at 40 values
#: for enumeration: values past the cut are impossible, as values below 6 are
_VALUES = np.arange(0, 46)
_LOGP = poisson.logpmf(_VALUES, 9.0) + binom.logpmf(np.array([[4], [6], [5]]), _VALUES,
                                                     0.5).sum(0)


def _table_at(x, size: int) -> np.ndarray:
    """The kernel's input at x (a value or an array of sites' values, one row each):
    log pi at x - 2S .. x + 2S (-inf off the values)."""
    e = np.asarray(x)[..., None] + np.arange(-2 * size, 2 * size + 1)
    inside = (e >= 0) & (e < _VALUES.size)
    return np.where(inside, _LOGP[np.clip(e, 0, _VALUES.size - 1)], -np.inf).reshape(-1, e.shape[-1])


def _transition_matrix(size: int) -> np.ndarray:
    """Every transition of the step with step size ``size``, read off the kernel: for
    each state and each move, a proposal uniform inside that move's share (the shares
    are sqrt(pi(y) / pi(x)), normalised) must give that move, and the kernel's
    acceptance probability times the share is the transition probability."""
    n = _VALUES.size
    P = np.zeros((n, n))
    for x in range(n):
        if not np.isfinite(_LOGP[x]):
            P[x, x] = 1.0
            continue
        table = _table_at(x, size)
        moves = [d for d in range(-size, size + 1) if d and 0 <= x + d < n
                 and np.isfinite(_LOGP[x + d])]
        shares = np.array([np.exp(0.5 * (_LOGP[x + d] - _LOGP[x])) for d in moves])
        cdf = np.cumsum(shares) / shares.sum()
        for j, d in enumerate(moves):
            u = 0.5 * ((cdf[j - 1] if j else 0.0) + cdf[j])
            move, accept = count_lbp_step(table, np.array([size]), np.array([[u, 0.0]]))
            assert move[0] == d
            P[x, x + d] = (shares[j] / shares.sum()) * accept[0]
        P[x, x] = 1.0 - P[x].sum()
    return P


@pytest.mark.parametrize("size", [1, 2, 5])
def test_count_step_is_reversible_and_irreducible(size):
    pi = np.exp(_LOGP - logsumexp(_LOGP))
    P = _transition_matrix(size)
    assert_reversible(P, pi, atol=1e-13)
    np.testing.assert_allclose(pi @ P, pi, atol=1e-13)
    assert_irreducible_and_aperiodic(P, pi)


def test_count_step_draws_the_conditional():
    """Many sites at once, each its own chain on the same conditional: the pooled
    frequencies after 2000 steps are within 5 standard errors of pi."""
    rng = np.random.default_rng(4)
    pi = np.exp(_LOGP - logsumexp(_LOGP))
    x = np.full(400, 10)
    sizes = np.full(400, 3)
    seen = np.zeros(_VALUES.size)
    for t in range(2000):
        table = _table_at(x, 3)
        moves, _ = count_lbp_step(table, sizes, rng.random((x.size, 2)))
        x = x + moves
        if t >= 200:
            seen += np.bincount(x, minlength=_VALUES.size)
    freq = seen / seen.sum()
    # 400 independent chains of 1800 draws: the per-chain autocorrelation is mild at
    # these sizes; an effective sample of a tenth of the draws is a generous bound
    se = np.sqrt(pi * (1 - pi) / (seen.sum() / 10))
    assert np.all(np.abs(freq - pi) <= 5 * se + 1e-12)


def test_step_sizes_tune_toward_the_target_and_stay_in_range():
    log_sizes = np.zeros(3)
    for t in range(200):
        log_sizes = tune_count_sizes(log_sizes, np.array([1.0, 0.0, 0.574]), t)
    sizes = count_sizes(log_sizes)
    assert sizes[0] == MAX_COUNT_STEP and sizes[1] == 1 and sizes[2] == 1


# ---- fitting and widening a window during sampling ----------------------------------

from pymc_discrete.kernels.counts import needed_width, window_extension  # noqa: E402


@pytest.mark.parametrize("rate", [2.0, 20.0, 200.0])
def test_needed_width_is_the_shortest_window_that_holds_the_tolerance(rate):
    """Read off a wider table, the width leaves at most the tolerance beyond (exact tail)
    and is what the window search finds from scratch."""
    logp = poisson.logpmf(np.arange(2000), rate)
    width = needed_width(logp[None, :1500])
    assert _exact_tail(logp, width) <= TAIL_MASS
    _, searched = count_window(lambda v: poisson.logpmf(v, rate)[None, :], 1)
    assert width == searched[0]
    assert needed_width(logp[None, : max(2, width // 2)]) is None  # too narrow to tell


@pytest.mark.parametrize("rate, width", [(20.0, 25), (20.0, 32), (200.0, 215), (3.0, 6)])
def test_window_extended_in_steps_reaches_the_tolerance_near_the_shortest(rate, width):
    """A window whose bound fails, extended step by step as the draws extend it, holds
    the tolerance at its end (Poisson tails are log-concave), within a few steps, and
    is at most twice the shortest window that would."""
    logp = poisson.logpmf(np.arange(4000), rate)
    assert tail_mass_bound(logp[None, :width])[0] > TAIL_MASS
    steps = 0
    while tail_mass_bound(logp[None, :width])[0] > TAIL_MASS:
        extension = window_extension(logp[None, :width])
        assert 1 <= extension <= width
        width += extension
        steps += 1
    assert steps <= 4
    assert _exact_tail(logp, width) <= TAIL_MASS
    assert width <= 2 * needed_width(logp[None, :3000])


def test_window_extension_doubles_a_window_that_still_rises():
    logp = poisson.logpmf(np.arange(10), 30.0)[None, :]  # the mode lies beyond
    assert window_extension(logp) == 10
