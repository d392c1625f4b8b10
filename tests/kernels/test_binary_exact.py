"""ALBP and ARWM binary kernels against their exact transition matrices.

For small targets every ordered pick is enumerated to build the full transition matrix;
it must satisfy detailed balance and stationarity to 1e-10, and the real (numba) kernel's
one-step frequencies must match its rows within 5 binomial standard errors (fixed seeds,
so the tests are deterministic).
"""

from __future__ import annotations

import numpy as np
import pytest

from pymc_discrete.kernels import (
    BinaryRWState,
    albp_step,
    arwm_step,
    init_lb_state,
    weight_code,
)
from tests.exact import (
    albp_matrix,
    all_states,
    arwm_matrix,
    assert_frequencies_match,
    assert_reversible,
    state_index,
    target_distribution,
)
from tests.targets import exact_ratios, forbidden_state_target, gaussian_target, ising_target


def _with_exact_ratios(base):
    def target(x):
        return base(x)[0], exact_ratios(base, x)

    return target


TARGETS = {
    "ising5": (ising_target(5, 0), 5),
    "ising6": (ising_target(6, 1), 6),
    "gaussian4": (gaussian_target(4, 2), 4),
    "gaussian6": (gaussian_target(6, 3), 6),
    "forbidden4": (forbidden_state_target(4, 4), 4),
    "gaussian5-exact-ratios": (_with_exact_ratios(gaussian_target(5, 5)), 5),
}
N_REPEATS = 20_000


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("weight", ["barker", "sqrt"])
@pytest.mark.parametrize("r", [1, 2, 3])
def test_albp_matrix_is_reversible(name, weight, r):
    target, n = TARGETS[name]
    P = albp_matrix(target, n, r, weight)
    assert_reversible(P, target_distribution(target, n))


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("r", [1, 2, 3])
def test_arwm_matrix_is_reversible(name, r):
    target, n = TARGETS[name]
    assert_reversible(arwm_matrix(target, n, r), target_distribution(target, n))


def test_enumeration_detects_a_wrong_acceptance_ratio():
    """The checks have teeth: dropping the reverse-path probability breaks detailed balance."""
    target, n = TARGETS["gaussian4"]
    pi = target_distribution(target, n)
    states = all_states(n)
    P = np.zeros((2**n, 2**n))
    for a, x in enumerate(states):
        _, d = target(x)
        w = np.exp(d) / (1 + np.exp(d))
        for i in range(n):
            y = x.copy()
            y[i] = 1 - y[i]
            b = state_index(y)
            P[a, b] += w[i] / w.sum() * min(1.0, pi[b] / pi[a])  # no q(y->x)/q(x->y)
        P[a, a] += 1 - P[a].sum()
    with pytest.raises(AssertionError):
        assert_reversible(P, pi)


def _albp_counts(target, n, x0, scale, weight, seed):
    code = weight_code(weight)
    rng = np.random.default_rng(seed)
    state0 = init_lb_state(np.asarray(x0, dtype=np.int64), target, code)
    counts = np.zeros(2**n)
    for _ in range(N_REPEATS):
        new, info = albp_step(state0, scale, rng, target, code)
        counts[state_index(new.x)] += 1
        assert info.jump_distance == (info.n_proposed if info.accepted else 0)
        assert np.sum(new.x != state0.x) == info.jump_distance
    return counts


@pytest.mark.parametrize(
    "name,weight,r,x0",
    [
        ("ising5", "barker", 1, [0, 1, 0, 1, 1]),
        ("ising5", "sqrt", 2, [1, 1, 0, 0, 1]),
        ("gaussian6", "barker", 3, [0, 0, 1, 0, 1, 1]),
        ("gaussian6", "sqrt", 2, [1, 0, 1, 1, 0, 0]),
        ("gaussian4", "barker", 2, [1, 0, 0, 1]),
        ("forbidden4", "barker", 1, [1, 1, 1, 0]),
        ("forbidden4", "sqrt", 3, [0, 1, 0, 0]),
        ("gaussian5-exact-ratios", "barker", 2, [1, 0, 1, 0, 0]),
        ("gaussian5-exact-ratios", "sqrt", 3, [0, 1, 1, 0, 1]),
    ],
)
def test_albp_kernel_matches_its_matrix(name, weight, r, x0):
    target, n = TARGETS[name]
    P = albp_matrix(target, n, r, weight)
    counts = _albp_counts(target, n, x0, float(r), weight, seed=r + 10 * n)
    assert_frequencies_match(counts, P[state_index(np.asarray(x0))])


def test_albp_kernel_with_fractional_scale_mixes_neighbouring_sizes():
    """R_t = 1.3: R = 2 with probability 0.3 and R = 1 otherwise (probabilistic rounding)."""
    target, n = TARGETS["gaussian4"]
    P = 0.7 * albp_matrix(target, n, 1, "barker") + 0.3 * albp_matrix(target, n, 2, "barker")
    assert_reversible(P, target_distribution(target, n))
    x0 = [0, 1, 1, 0]
    counts = _albp_counts(target, n, x0, 1.3, "barker", seed=7)
    assert_frequencies_match(counts, P[state_index(np.asarray(x0))])


@pytest.mark.parametrize("name,r,x0", [("ising6", 1, [0] * 6), ("gaussian6", 2, [1, 0, 0, 1, 1, 0]),
                                       ("forbidden4", 2, [1, 1, 0, 0])])
def test_arwm_kernel_matches_its_matrix(name, r, x0):
    target, n = TARGETS[name]
    P = arwm_matrix(target, n, r)
    rng = np.random.default_rng(3)

    def logp(x):
        return target(x)[0]

    x0 = np.asarray(x0, dtype=np.int64)
    state0 = BinaryRWState(x0, logp(x0))
    counts = np.zeros(2**n)
    for _ in range(N_REPEATS):
        new, _ = arwm_step(state0, float(r), rng, logp)
        counts[state_index(new.x)] += 1
    assert_frequencies_match(counts, P[state_index(x0)])


def test_albp_chain_reaches_the_target_marginals():
    """A long chain of the real kernel: site marginals within 5 Monte Carlo standard errors
    (batch means) of enumeration, on the target with inexact gradient ratios."""
    target, n = TARGETS["gaussian6"]
    pi = target_distribution(target, n)
    truth = pi @ all_states(n)
    code = weight_code("barker")
    rng = np.random.default_rng(11)
    state = init_lb_state(np.zeros(n, dtype=np.int64), target, code)
    draws = np.empty((40_000, n))
    for t in range(draws.shape[0]):
        state, _ = albp_step(state, 1.5, rng, target, code)
        draws[t] = state.x
    batches = draws.reshape(100, -1, n).mean(axis=1)
    mcse = batches.std(axis=0, ddof=1) / np.sqrt(batches.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - truth) < 5 * mcse)
