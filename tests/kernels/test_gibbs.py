"""The per-site update of BlockedGibbs (Metropolised Gibbs mixed with heat-bath draws):
reversible with respect to the site's conditional, rows that sum to one, never periodic."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_discrete.kernels.gibbs import (
    HEAT_BATH_SHARE,
    draw_rows,
    log_normalisers,
    site_transitions,
)


def _transition_matrix(log_p: np.ndarray) -> np.ndarray:
    """T[a, v]: the update's probability of moving from value a to v, for a site whose
    conditional is proportional to exp(log_p)."""
    k = log_p.size
    rows = []
    for a in range(k):
        if not log_p[a] > -np.inf:
            rows.append(np.eye(k)[a])  # an impossible value is never the current one
            continue
        table = (log_p - log_p[a])[None, :]
        rows.append(site_transitions(table, log_normalisers(table), np.array([a]),
                                     HEAT_BATH_SHARE)[0])
    return np.array(rows)


@pytest.mark.parametrize("seed", range(20))
def test_detailed_balance_with_the_conditional(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    log_p = rng.normal(0, 3, k)
    if seed % 3 == 0:
        log_p[rng.integers(0, k)] = -np.inf  # a value of probability zero
    if seed % 4 == 1:
        log_p[0] = 45.0  # a value of probability 1 - 1e-19: no cancellation
    p = np.exp(log_p - np.logaddexp.reduce(log_p))
    T = _transition_matrix(log_p)
    possible = p > 0
    np.testing.assert_allclose(T[possible].sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert (T >= 0).all()
    flow = p[:, None] * T
    np.testing.assert_allclose(flow, flow.T, rtol=1e-12, atol=1e-300)
    # the most likely value stays put with positive probability, so the site's chain is
    # aperiodic (a value of probability ~1e-19 may leave with probability 1 in floats)
    assert T[np.argmax(p), np.argmax(p)] > 0
    moderate = possible & (p > 1e-6)
    assert (np.diag(T)[moderate] > 0).all()
    # and moves to impossible values never happen
    assert (T[:, ~possible][possible] == 0).all()


def test_equal_values_move_more_often_than_a_conditional_draw():
    """Fair coin: heat-bath moves with probability 1/2, the mix with 0.95."""
    table = np.zeros((1, 2))
    t = site_transitions(table, log_normalisers(table), np.array([1]), HEAT_BATH_SHARE)
    assert t[0, 0] == pytest.approx(1 - HEAT_BATH_SHARE / 2, abs=1e-15)


def test_draw_rows_follows_the_transition_probabilities():
    rng = np.random.default_rng(3)
    t = np.array([[0.2, 0.5, 0.3]])
    n = 40_000
    draws = np.array([draw_rows(t, rng.random(1), np.array([0]))[0] for _ in range(n)])
    freq = np.bincount(draws, minlength=3) / n
    se = np.sqrt(t[0] * (1 - t[0]) / n)
    assert (np.abs(freq - t[0]) < 4 * se).all()
