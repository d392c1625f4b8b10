"""The per-site update of BlockedGibbs (Metropolised Gibbs mixed with heat-bath draws):
reversible with respect to the site's conditional, rows that sum to one, never periodic."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_discrete.kernels.exact_tables import row_total
from pymc_discrete.kernels.gibbs import (
    HEAT_BATH_SHARE,
    draw_rows,
    site_transitions,
    update_colour,
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
        rows.append(site_transitions(table, np.array([a]), HEAT_BATH_SHARE)[0])
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
    t = site_transitions(table, np.array([1]), HEAT_BATH_SHARE)
    assert t[0, 0] == pytest.approx(1 - HEAT_BATH_SHARE / 2, abs=1e-15)


def test_draw_rows_follows_the_transition_probabilities():
    rng = np.random.default_rng(3)
    t = np.array([[0.2, 0.5, 0.3]])
    n = 40_000
    draws = np.array([draw_rows(t, rng.random(1), np.array([0]))[0] for _ in range(n)])
    freq = np.bincount(draws, minlength=3) / n
    se = np.sqrt(t[0] * (1 - t[0]) / n)
    assert (np.abs(freq - t[0]) < 4 * se).all()


@pytest.mark.parametrize("d", [-800.0, -30.0, -1.3, 0.0, 0.7, 25.0, 800.0, -np.inf, np.nan])
@pytest.mark.parametrize("current", [0, 1])
def test_two_valued_sites_take_the_closed_form_of_the_general_update(d, current):
    """A binary row goes through a closed form (one exp); the general update of the same
    site (a third value of probability zero) gives the same probabilities."""
    table = np.zeros((1, 2))
    table[0, 1 - current] = d
    padded = np.concatenate([table, [[-np.inf]]], axis=1)
    binary = site_transitions(table, np.array([current]), HEAT_BATH_SHARE)[0]
    general = site_transitions(padded, np.array([current]), HEAT_BATH_SHARE)[0]
    np.testing.assert_allclose(binary, general[:2], rtol=1e-14, atol=1e-300)
    assert general[2] == 0.0 and binary.sum() == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 127, 128, 129, 255, 1000, 8193, 9900, 100_003])
def test_row_total_is_numpys_sum_to_the_bit(n):
    """The compiled sweep sums the terms as numpy does (pairwise), so its log densities
    equal the Python sweep's exactly."""
    rng = np.random.default_rng(n)
    terms = rng.normal(size=(2, n)) * rng.choice([1e-3, 1.0, 1e3], size=(2, n))
    assert row_total(terms, 1) == terms[1].sum()


@pytest.mark.parametrize("k", [2, 3])
def test_the_update_depends_on_differences_of_the_table_only(k):
    """CollapsedNUTS hands absolute log-probabilities (not 0 at the current value): the
    transitions must be those of the ratios."""
    rng = np.random.default_rng(k)
    table = rng.normal(size=(6, k))
    current = rng.integers(0, k, 6)
    ratios = table - table[np.arange(6), current][:, None]
    np.testing.assert_allclose(site_transitions(table, current, 1.0),
                               site_transitions(ratios, current, 1.0), rtol=1e-13)
    np.testing.assert_allclose(site_transitions(table, current, HEAT_BATH_SHARE),
                               site_transitions(ratios, current, HEAT_BATH_SHARE), rtol=1e-13)


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("share", [HEAT_BATH_SHARE, 0.5, 1.0])
def test_a_colours_update_draws_what_the_transition_rows_give(k, share):
    """A colour is updated without a row of transitions per site (two-valued sites in
    closed form, others by the same arithmetic written out); its draws, changes and
    log-density change are those of drawing from :func:`site_transitions` row by row,
    to the bit, at every kind of log-ratio (-inf, NaN, huge) and at uniforms on the
    rows' cumulative sums."""
    rng = np.random.default_rng(11 + k)
    n = 400
    current = rng.integers(0, k, n)
    table = rng.normal(scale=3.0, size=(n, k))
    table[rng.random((n, k)) < 0.1] = -np.inf
    table[:6, -1] = [-800.0, 800.0, 0.0, np.nan, 1e-300, -1e-300]
    table[6] = -np.inf  # no value possible: the site stays
    table[np.arange(n), current] = 0.0
    table[6, current[6]] = -np.inf
    transitions = site_transitions(table, current, share)
    cumulative = np.cumsum(transitions, axis=1)
    edges = [cumulative[:, v] for v in range(k)]
    for uniforms in (rng.random(n), *edges, *(np.nextafter(e, 0.0) for e in edges),
                     np.full(n, 1.0 - 1e-16)):
        drawn, changed, delta = update_colour(table, current, uniforms, share)
        expected = draw_rows(transitions, uniforms, current)
        moved = expected != current
        assert np.array_equal(drawn, expected)
        assert changed == moved.sum()
        assert delta == sum(table[j, expected[j]] for j in np.flatnonzero(moved))
