"""Ordered sampling without replacement, its log-probability, and the weight functions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pymc_discrete.kernels import (
    balanced_weights,
    ordered_picks_logprob,
    probabilistic_round,
    sample_ordered,
    weight_code,
)
from pymc_discrete.kernels.common import sum_unmasked
from pymc_discrete.kernels.weights import rebalanced_weights
from tests.exact import assert_frequencies_match


def _plackett_luce(w, order):
    remaining, p = w.sum(), 1.0
    for s in order:
        p *= w[s] / remaining
        remaining -= w[s]
    return p


@pytest.mark.parametrize("r", [1, 2, 3])
def test_sample_ordered_draws_with_plackett_luce_probabilities(r):
    w = np.array([0.5, 2.0, 1.0, 0.1, 3.0])
    orders = list(itertools.permutations(range(5), r))
    probs = np.array([_plackett_luce(w, o) for o in orders])
    index = {o: k for k, o in enumerate(orders)}
    rng = np.random.default_rng(r)
    counts = np.zeros(len(orders))
    for _ in range(30_000):
        picks = sample_ordered(w, r, rng)
        counts[index[tuple(picks)]] += 1
    assert_frequencies_match(counts, probs)


def test_sample_ordered_never_picks_zero_weight_sites_and_refuses_too_few():
    w = np.array([1.0, 0.0, 2.0, 0.0])
    rng = np.random.default_rng(0)
    for _ in range(200):
        picks = sample_ordered(w, 2, rng)
        assert sorted(picks) == [0, 2]
    assert sample_ordered(w, 3, rng).size == 0


def test_sample_ordered_with_weight_concentrated_on_few_sites_rebuilds_and_stays_exact():
    """Two sites hold almost all the weight: after they are drawn the cumulative sums are
    rebuilt; the order of the remaining draws still follows Plackett-Luce."""
    w = np.array([1000.0, 500.0, 1.0, 2.0, 3.0])
    orders = list(itertools.permutations(range(5), 4))
    probs = np.array([_plackett_luce(w, o) for o in orders])
    index = {o: k for k, o in enumerate(orders)}
    rng = np.random.default_rng(9)
    counts = np.zeros(len(orders))
    for _ in range(30_000):
        counts[index[tuple(sample_ordered(w, 4, rng))]] += 1
    assert_frequencies_match(counts, probs)


@pytest.mark.parametrize("reverse", [False, True])
def test_ordered_picks_logprob_is_exact(reverse):
    rng = np.random.default_rng(1)
    w = rng.gamma(1.0, 1.0, 7)
    for order in itertools.permutations(range(7), 3):
        picks = np.array(order, dtype=np.int64)
        expected = _plackett_luce(w, order[::-1] if reverse else order)
        got = ordered_picks_logprob(w / w.max(), picks, reverse)  # any common scale
        assert got == pytest.approx(math.log(expected), rel=1e-12, abs=1e-12)


def test_ordered_picks_logprob_of_zero_weight_site_is_minus_inf():
    assert ordered_picks_logprob(np.array([1.0, 0.0]), np.array([1]), False) == -np.inf
    assert ordered_picks_logprob(np.array([1.0, 0.0, 3.0]), np.array([2, 1]), True) == -np.inf


@pytest.mark.parametrize("weight", ["barker", "sqrt"])
def test_weights_match_linear_formulas_and_are_locally_balanced(weight):
    d = np.linspace(-30, 30, 121)
    w, log_scale = balanced_weights(d, weight_code(weight))
    t = np.exp(d)
    expected = t / (1 + t) if weight == "barker" else np.sqrt(t)
    np.testing.assert_allclose(w * np.exp(log_scale), expected, rtol=1e-13)
    assert w.max() == pytest.approx(1.0)
    # g(t) = t g(1/t)  <=>  log g(e^d) = d + log g(e^-d)
    lw = np.log(w) + log_scale
    np.testing.assert_allclose(lw, d + lw[::-1], rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("weight", ["barker", "sqrt"])
def test_weights_do_not_overflow_and_map_nan_to_zero(weight):
    w, log_scale = balanced_weights(np.array([2000.0, 1990.0, -2000.0, np.nan]), weight_code(weight))
    assert np.isfinite(log_scale) and w[0] == 1.0 and w[2] == 0.0 and w[3] == 0.0
    # sqrt: exp((1990 - 2000) / 2); barker: sigmoid(1990) / sigmoid(2000) rounds to 1
    expected = np.exp(-5.0) if weight == "sqrt" else 1.0
    assert w[1] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("weight", ["barker", "sqrt"])
def test_weights_of_uniformly_tiny_ratios_are_rescaled_not_zero(weight):
    """All moves very unfavourable: the weights keep their ratios via the scale."""
    w, log_scale = balanced_weights(np.array([-1000.0, -1001.0]), weight_code(weight))
    ratio = np.exp(-1.0) if weight == "barker" else np.exp(-0.5)
    assert w[0] == 1.0 and w[1] == pytest.approx(ratio, rel=1e-10)
    assert log_scale == pytest.approx(-1000.0 if weight == "barker" else -500.0)


def test_weights_of_only_impossible_moves():
    w, log_scale = balanced_weights(np.array([np.nan, -np.inf]), 0)
    assert log_scale == -np.inf and not w.any()


def test_unknown_weight_names_the_choices():
    with pytest.raises(ValueError, match="barker"):
        weight_code("linear")


def test_probabilistic_round_is_unbiased_and_clipped():
    rng = np.random.default_rng(5)
    draws = np.array([probabilistic_round(2.3, u, 10) for u in rng.random(40_000)])
    assert set(draws) == {2, 3}
    se = math.sqrt(0.3 * 0.7 / draws.size)
    assert abs(draws.mean() - 2.3) < 5 * se
    assert probabilistic_round(0.2, 0.9, 10) == 1
    assert probabilistic_round(50.0, 0.1, 10) == 10


@pytest.mark.parametrize("weight", ["barker", "sqrt"])
def test_rebalanced_weights_equal_fresh_weights_on_the_old_scale(weight):
    """Reused and recomputed entries together equal g(exp(d)) up to the common scale."""
    code = weight_code(weight)
    rng = np.random.default_rng(4)
    old = rng.normal(0.0, 3.0, (50, 3))
    old[rng.random(old.shape) < 0.1] = np.nan
    w_old, s_old = balanced_weights(old, code)
    new = old.copy()
    new[rng.random(old.shape) < 0.2] = rng.normal(0.0, 3.0)
    new[0, 0] = -np.inf
    w_new, s_new = rebalanced_weights(new, old, w_old, s_old, code)
    w_fresh, s_fresh = balanced_weights(new, code)
    assert s_new == s_old
    np.testing.assert_allclose(w_new * np.exp(s_new - s_fresh), w_fresh, rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "new_value", [1500.0, -1500.0], ids=["overflow-rescales", "underflow-rescales"]
)
def test_rebalanced_weights_rescale_when_the_old_scale_no_longer_fits(new_value):
    code = weight_code("sqrt")
    old = np.array([0.0, -1.0])
    w_old, s_old = balanced_weights(old, code)
    new = np.array([new_value, -1500.0])
    w_new, s_new = rebalanced_weights(new, old, w_old, s_old, code)
    w_fresh, s_fresh = balanced_weights(new, code)
    np.testing.assert_array_equal(w_new, w_fresh)
    assert s_new == s_fresh


def _searchsorted_cases():
    rng = np.random.default_rng(3)
    lognormal = np.exp(rng.normal(0.0, 3.0, 997))
    sparse = np.where(rng.random(500) < 0.7, 0.0, rng.gamma(0.5, 1.0, 500))  # ties
    concentrated = np.concatenate([np.full(300, 1e-12), [1.0], np.full(300, 1e-12)])
    return [lognormal, sparse, concentrated, np.array([2.0]), np.array([0.0, 1.0, 0.0])]


@pytest.mark.parametrize("case", range(5))
def test_batched_search_is_searchsorted_right(case):
    """The side-by-side bisections find ``np.searchsorted(cumulative, u * total,
    side="right")`` for every uniform of the batch from ``start`` on (and leave the
    entries before ``start`` alone), including at the cumulative sums themselves (ties
    from zero weights), at 0 and at the total."""
    from pymc_discrete.kernels.sampling import _locate

    weights = _searchsorted_cases()[case]
    cumulative = np.cumsum(weights)
    total = float(cumulative[-1])
    rng = np.random.default_rng(case)
    uniforms = np.concatenate([rng.random(5000), cumulative / total,
                               [0.0, 1.0, np.nextafter(1.0, 0.0)]])
    expected = np.searchsorted(cumulative, uniforms * total, side="right")
    for batch in (1, 3, 8):
        for first in range(0, uniforms.size - batch + 1, batch):
            chunk = uniforms[first:first + batch]
            for start in (0, batch - 1):
                sites = np.full(batch, -1, np.int64)
                _locate(cumulative, chunk, total, start, sites)
                np.testing.assert_array_equal(sites[start:], expected[first + start:first + batch])
                assert (sites[:start] == -1).all()


def test_sum_unmasked_matches_a_compensated_sum():
    rng = np.random.default_rng(8)
    for n in (0, 1, 3, 4, 5, 1001):
        values = np.exp(rng.normal(0.0, 5.0, n))
        mask = rng.random(n) < 0.3
        assert sum_unmasked(values, mask) == pytest.approx(math.fsum(values[~mask]), rel=1e-14)
        assert sum_unmasked(values, np.zeros(0, np.bool_)) == pytest.approx(
            math.fsum(values), rel=1e-14)


def test_ordered_picks_logprob_over_many_draws_and_extreme_weights():
    """Long paths whose probabilities span hundreds of orders of magnitude: the batched
    products must match the sum of the per-draw logs (no underflow, no lost draw)."""
    rng = np.random.default_rng(5)
    weights = np.exp(rng.uniform(-700.0, 0.0, 400))
    weights[:3] = [5e-324, 1e-310, 1.0]  # a subnormal weight and a tiny one
    for reverse in (False, True):
        picks = rng.permutation(400)[:300].astype(np.int64)
        picks[:2] = [0, 1]
        order = picks[::-1] if reverse else picks
        never_drawn = np.ones(weights.size, bool)
        never_drawn[picks] = False
        pool = math.fsum(weights[never_drawn])
        terms = []
        for site in order[::-1]:  # the pool grows as the draws are undone
            pool += weights[site]
            terms.append(math.log(weights[site]) - math.log(pool))
        expected = math.fsum(terms)
        got = ordered_picks_logprob(weights, picks, reverse)
        assert got == pytest.approx(expected, rel=1e-13)
