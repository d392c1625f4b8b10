"""The joint Gibbs kernel on enumerated targets: the draw's distribution is the target
to machine precision (read off the draw itself, by the lengths of the uniforms that give
each state), so its transition matrix leaves the target invariant, is irreducible on the
possible states and aperiodic; sampled frequencies agree within 4 standard errors."""

from __future__ import annotations

import doctest
import itertools
from fractions import Fraction

import numpy as np
import pytest

import pymc_discrete.kernels.joint as joint_module
from pymc_discrete.kernels.joint import (
    JOINT_MAX_STATES,
    count_joint_states,
    draw_from_cumulative,
    init_joint_state,
    joint_gibbs_step,
    joint_index,
    joint_probabilities,
    joint_states,
)

#: sampled frequencies must lie within this many standard errors
N_SE = 4.0
#: the draw's probabilities and the target may differ by rounding alone: the cumulative
#: sums of at most a few dozen weights and the product u * total, a few ulps of 1
MACHINE = 1e-14

#: site value counts of the enumerated targets: binary, categorical, mixed
SHAPES = [(2, 2), (2, 3, 2), (3, 4), (2, 2, 2, 2), (5,)]


def _target(n_values: tuple, seed: int) -> np.ndarray:
    """Log densities of every joint state: normal draws, some states impossible (-inf or
    NaN), one state far above the rest for some seeds."""
    rng = np.random.default_rng(seed)
    s = count_joint_states(n_values)
    logps = rng.normal(0.0, 2.0, s)
    if seed % 2 == 0:
        logps[rng.choice(s, size=max(1, s // 4), replace=False)] = -np.inf
    if seed % 3 == 0:
        logps[rng.integers(0, s)] = np.nan
    if seed % 5 == 4:
        logps[rng.integers(0, s)] = 30.0  # probability 1 - 1e-13: no cancellation
    return logps


def _reference(logps: np.ndarray) -> np.ndarray:
    """The normalised target in extended precision, independently of the kernel."""
    lp = np.where(np.isnan(logps), -np.inf, logps).astype(np.longdouble)
    w = np.exp(lp - lp[np.isfinite(lp)].max())
    return (w / w.sum()).astype(np.float64)


def _float_bits(u: float) -> int:
    return int(np.array(u, dtype=np.float64).view(np.int64))


def _bits_float(b: int) -> float:
    return float(np.array(b, dtype=np.int64).view(np.float64))


def draw_distribution(cumulative: np.ndarray) -> np.ndarray:
    """P(draw = s) for u uniform on [0, 1), read off :func:`draw_from_cumulative` itself.

    The draw is nondecreasing in u, so each state is drawn on an interval of uniforms:
    its lower end, the smallest float u that draws state s or later, is found by
    bisection over the (ordered) bit patterns of the floats in [0, 1), and the
    probability is the interval's length."""
    lo_bits, hi_bits = _float_bits(0.0), _float_bits(1.0)
    s_max = cumulative.size
    starts = []
    for s in range(s_max + 1):
        if s == 0:
            starts.append(0.0)
            continue
        lo, hi = lo_bits, hi_bits  # the answer lies in [lo, hi]; hi stands for 1.0
        while lo < hi:
            mid = (lo + hi) // 2
            if draw_from_cumulative(cumulative, _bits_float(mid)) >= s:
                hi = mid
            else:
                lo = mid + 1
        starts.append(_bits_float(lo))
    return np.diff(np.array(starts))


def test_the_states_are_every_combination_in_product_order():
    ks = (2, 3, 2)
    states = joint_states(ks)
    expected = np.array(list(itertools.product(*(range(k) for k in ks))))
    np.testing.assert_array_equal(states, expected)
    assert count_joint_states(ks) == len(states) == 12
    assert [joint_index(x, ks) for x in states] == list(range(12))
    assert joint_states([]).shape == (1, 0) and joint_index(np.zeros(0, np.int64), []) == 0


def test_too_many_states_are_refused_with_the_count():
    assert joint_states([2] * 12).shape == (JOINT_MAX_STATES, 12)
    with pytest.raises(ValueError, match=r"13 sites with 8,192 joint states.*4096"):
        joint_states([2] * 13)
    # the count is exact where 64-bit products overflow
    assert count_joint_states([2] * 64) == 2**64
    with pytest.raises(ValueError, match=r"about 10\^30"):
        joint_states([2] * 100)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", range(6))
def test_the_draw_is_the_target_to_machine_precision(shape, seed):
    logps = _target(shape, seed)
    truth = _reference(logps)
    np.testing.assert_allclose(joint_probabilities(logps), truth, rtol=0, atol=MACHINE)
    states = joint_states(shape)
    # from every state, possible or not, the draw's distribution is the target:
    # T(x, y) = p(y)
    matrix = np.array([
        draw_distribution(init_joint_state(x, logps, shape).cumulative) for x in states
    ])
    np.testing.assert_allclose(matrix, np.broadcast_to(truth, matrix.shape), rtol=0,
                               atol=MACHINE)
    possible = truth > 0
    assert (matrix[:, ~possible] == 0.0).all()  # impossible states are never drawn
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, rtol=0, atol=MACHINE)
    # stationary, irreducible on the possible states (every one reached in one step)
    # and aperiodic (every possible state may stay)
    np.testing.assert_allclose(truth @ matrix, truth, rtol=0, atol=1e-12)
    assert (matrix[np.ix_(possible, possible)] > 0).all()
    assert (np.diag(matrix)[possible] > 0).all()


@pytest.mark.parametrize("weights", [(1, 2, 3, 4), (0, 5, 0, 1, 7, 0), (1, 10**6, 3)])
def test_rational_targets_are_drawn_exactly(weights):
    """Integer weights: the exact probabilities are fractions."""
    with np.errstate(divide="ignore"):
        logps = np.log(np.array(weights, dtype=float))  # log 0 = -inf
    total = sum(weights)
    exact = np.array([float(Fraction(w, total)) for w in weights])
    cumulative = init_joint_state(np.array([0]), logps, [len(weights)]).cumulative
    np.testing.assert_allclose(draw_distribution(cumulative), exact, rtol=0, atol=MACHINE)


def test_a_uniform_next_to_one_draws_the_last_possible_state():
    cumulative = np.cumsum([1.0, 2.0, 0.0, 0.0])
    assert draw_from_cumulative(cumulative, np.nextafter(1.0, 0.0)) == 1
    assert draw_from_cumulative(cumulative, 0.0) == 0
    cumulative = np.cumsum([0.0, 0.0, 3.0])
    assert draw_from_cumulative(cumulative, 0.0) == 2


@pytest.mark.parametrize("shape,seed", [((2, 3, 2), 0), ((2, 2, 2, 2), 5), ((3, 4), 3)])
def test_sampled_frequencies_match_the_target(shape, seed):
    logps = _target(shape, seed)
    truth = _reference(logps)
    states = joint_states(shape)
    rng = np.random.default_rng(100 + seed)
    start = states[int(np.argmax(truth))]
    state = init_joint_state(start, logps, shape)
    n = 20_000
    visits = np.zeros(len(states), dtype=np.int64)
    changed = 0
    for _ in range(n):
        old = state.x
        state, info = joint_gibbs_step(state, rng, states)
        visits[joint_index(state.x, shape)] += 1
        assert info.accept_prob == 1.0 and info.accepted
        assert info.n_proposed == int(np.count_nonzero(state.x != old))
        changed += info.n_proposed > 0
        assert state.logp == logps[joint_index(state.x, shape)]
    freq = visits / n
    se = np.sqrt(truth * (1.0 - truth) / n)  # independent draws: binomial errors
    assert (visits[truth == 0] == 0).all()
    assert (np.abs(freq - truth) <= N_SE * se + 1e-12).all(), (freq, truth, se)
    assert changed > 0


def test_each_step_draws_one_uniform_from_the_generator():
    shape = (2, 3)
    logps = _target(shape, 1)
    states = joint_states(shape)
    state = init_joint_state(states[0], logps, shape)
    rng, twin = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(50):
        state, _ = joint_gibbs_step(state, rng, states)
        assert joint_index(state.x, shape) == draw_from_cumulative(state.cumulative,
                                                                   twin.random())
    assert rng.random() == twin.random()


def test_same_seed_same_draws():
    shape = (2, 2, 3)
    logps = _target(shape, 2)
    states = joint_states(shape)

    def run(seed):
        state = init_joint_state(states[0], logps, shape)
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(200):
            state, _ = joint_gibbs_step(state, rng, states)
            out.append(state.x)
        return np.array(out)

    np.testing.assert_array_equal(run(3), run(3))
    assert not np.array_equal(run(3), run(4))


def test_a_conditional_without_a_possible_state_is_refused():
    with pytest.raises(ValueError, match="no state of positive probability"):
        joint_probabilities(np.array([-np.inf, np.nan, -np.inf]))
    with pytest.raises(ValueError, match="no state of positive probability"):
        init_joint_state(np.array([0, 0]), np.full(4, -np.inf), [2, 2])
    with pytest.raises(ValueError, match=r"\+inf at joint state 1"):
        init_joint_state(np.array([0]), np.array([0.0, np.inf]), [2])


def test_an_impossible_current_state_is_left_at_the_first_step():
    """The draw does not depend on the current state."""
    shape = (2, 2)
    logps = np.array([-np.inf, 0.0, 0.0, 5.0])
    states = joint_states(shape)
    state = init_joint_state(np.array([0, 0]), logps, shape)
    assert state.logp == -np.inf
    new, info = joint_gibbs_step(state, np.random.default_rng(0), states)
    assert np.isfinite(new.logp) and info.n_proposed > 0


def test_the_examples_in_the_module_run():
    result = doctest.testmod(joint_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
