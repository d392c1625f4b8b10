"""Ordered sampling without replacement, its log-probability, and the weight functions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pymc_discrete.kernels import (
    gumbel_top_r,
    log_balanced_weights,
    ordered_picks_logprob,
    probabilistic_round,
    weight_code,
)
from tests.exact import assert_frequencies_match


def _plackett_luce(w, order):
    remaining, p = w.sum(), 1.0
    for s in order:
        p *= w[s] / remaining
        remaining -= w[s]
    return p


@pytest.mark.parametrize("r", [1, 2, 3])
def test_gumbel_top_r_draws_ordered_picks_with_plackett_luce_probabilities(r):
    w = np.array([0.5, 2.0, 1.0, 0.1, 3.0])
    orders = list(itertools.permutations(range(5), r))
    probs = np.array([_plackett_luce(w, o) for o in orders])
    index = {o: k for k, o in enumerate(orders)}
    rng = np.random.default_rng(r)
    counts = np.zeros(len(orders))
    for _ in range(30_000):
        picks = gumbel_top_r(np.log(w), rng.random(5), r)
        counts[index[tuple(picks)]] += 1
    assert_frequencies_match(counts, probs)


def test_gumbel_top_r_never_picks_zero_weight_sites_and_refuses_too_few():
    log_w = np.array([0.0, -np.inf, np.log(2.0), -np.inf])
    rng = np.random.default_rng(0)
    for _ in range(200):
        picks = gumbel_top_r(log_w, rng.random(4), 2)
        assert sorted(picks) == [0, 2]
    assert gumbel_top_r(log_w, rng.random(4), 3).size == 0


@pytest.mark.parametrize("reverse", [False, True])
def test_ordered_picks_logprob_is_exact(reverse):
    rng = np.random.default_rng(1)
    w = rng.gamma(1.0, 1.0, 7)
    for order in itertools.permutations(range(7), 3):
        picks = np.array(order, dtype=np.int64)
        expected = _plackett_luce(w, order[::-1] if reverse else order)
        got = ordered_picks_logprob(np.log(w), picks, reverse)
        assert got == pytest.approx(math.log(expected), rel=1e-12, abs=1e-12)


def test_ordered_picks_logprob_is_stable_over_huge_weight_ranges():
    log_w = np.array([800.0, -800.0, 0.0, 700.0])
    picks = np.array([3, 2], dtype=np.int64)
    # pick 3 among {800, -800, 0, 700}: 700 - logsumexp(800, 700, 0, -800) ~ -100
    expected = (700.0 - np.logaddexp(800.0, 700.0)) + (0.0 - 800.0)
    assert ordered_picks_logprob(log_w, picks, False) == pytest.approx(expected, rel=1e-12)
    assert ordered_picks_logprob(np.array([0.0, -np.inf]), np.array([1]), False) == -np.inf


@pytest.mark.parametrize("weight", ["barker", "sqrt"])
def test_log_weights_match_linear_formulas_and_are_locally_balanced(weight):
    d = np.linspace(-30, 30, 121)
    lw = log_balanced_weights(d, weight_code(weight))
    t = np.exp(d)
    expected = t / (1 + t) if weight == "barker" else np.sqrt(t)
    np.testing.assert_allclose(np.exp(lw), expected, rtol=1e-13)
    # g(t) = t g(1/t)  <=>  log g(e^d) = d + log g(e^-d)
    np.testing.assert_allclose(lw, d + lw[::-1], rtol=1e-13, atol=1e-13)


def test_log_weights_do_not_overflow_and_map_nan_to_zero_weight():
    lw = log_balanced_weights(np.array([2000.0, -2000.0, np.nan]), weight_code("sqrt"))
    assert lw[0] == 1000.0 and lw[1] == -1000.0 and lw[2] == -np.inf
    lw = log_balanced_weights(np.array([2000.0, -2000.0]), weight_code("barker"))
    assert lw[0] == 0.0 and lw[1] == -2000.0


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
