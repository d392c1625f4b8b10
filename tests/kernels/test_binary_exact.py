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
    RWState,
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
    assert_irreducible_and_aperiodic,
    assert_reversible,
    mean_standard_error,
    mixture_matrix,
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
        # without replacement: an accepted proposal changes exactly n_proposed sites
        assert np.sum(new.x != state0.x) == (info.n_proposed if info.accepted else 0)
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
@pytest.mark.slow
def test_albp_kernel_matches_its_matrix(name, weight, r, x0):
    """One step at scale r: the mixture over the random number of changes of the exact
    fixed-R matrices."""
    target, n = TARGETS[name]
    P = mixture_matrix(lambda k: albp_matrix(target, n, k, weight), float(r), n)
    counts = _albp_counts(target, n, x0, float(r), weight, seed=r + 10 * n)
    assert_frequencies_match(counts, P[state_index(np.asarray(x0))])


def test_albp_kernel_with_fractional_scale_mixes_sizes():
    """R_t = 1.3: R - 1 is Poisson with mean 0.3, and R > N stays."""
    target, n = TARGETS["gaussian4"]
    P = mixture_matrix(lambda k: albp_matrix(target, n, k, "barker"), 1.3, n)
    assert_reversible(P, target_distribution(target, n))
    x0 = [0, 1, 1, 0]
    counts = _albp_counts(target, n, x0, 1.3, "barker", seed=7)
    assert_frequencies_match(counts, P[state_index(np.asarray(x0))])


def _pinned_target(n_pinned: int, n_free: int):
    """Free fair coins among sites pinned at 0 (log-odds -20.7, p = 1e-9): the block
    that a fixed number of changes made reducible (R = 2 flipped both free coins)."""
    log_odds = np.r_[np.full(n_pinned, np.log(1e-9)), np.zeros(n_free)]

    def target(x):
        x = np.asarray(x)
        return float(log_odds @ x), log_odds * (1 - 2 * x)

    return target


@pytest.mark.parametrize("scale", [1.0, 2.0, 2.5])
@pytest.mark.parametrize("weight", ["barker", "sqrt"])
def test_albp_is_irreducible_and_aperiodic_with_pinned_sites(scale, weight):
    """Exact transition matrices: with a random number of changes every scale gives an
    irreducible, aperiodic chain on 2 free sites among 3 pinned ones (a fixed R = 2 does
    not: the joint state of the free pair could never change)."""
    n = 5
    target = _pinned_target(3, 2)
    pi = target_distribution(target, n)
    fixed = albp_matrix(target, n, 2, weight)
    free_pair = [state_index(np.array([0, 0, 0, a, b])) for a, b in ((0, 0), (0, 1))]
    assert fixed[free_pair[0], free_pair[1]] < 1e-8  # (0, 0) -> (0, 1): one flip only
    P = mixture_matrix(lambda k: albp_matrix(target, n, k, weight), scale, n)
    assert_reversible(P, pi)
    assert_irreducible_and_aperiodic(P, pi)
    assert P[free_pair[0], free_pair[1]] > 0.05


@pytest.mark.parametrize("scale", [1.0, 2.0])
def test_arwm_is_irreducible_and_aperiodic_on_fair_coins(scale):
    """Uniform target: with R fixed every move is accepted and the parity of the ones
    alternates (period 2); the random number of changes breaks the period."""
    n = 4
    target = _pinned_target(0, n)
    pi = target_distribution(target, n)
    P = mixture_matrix(lambda k: arwm_matrix(target, n, k), scale, n)
    assert_reversible(P, pi)
    assert_irreducible_and_aperiodic(P, pi)


def test_a_single_fair_coin_is_aperiodic():
    """One site: R is 1, or 0 (stay) with probability 1 - exp(-1/20)."""
    target = _pinned_target(0, 1)
    pi = target_distribution(target, 1)
    P = mixture_matrix(lambda k: albp_matrix(target, 1, k, "barker"), 1.0, 1)
    assert_irreducible_and_aperiodic(P, pi)
    assert 0.9 < P[0, 1] < 1.0


@pytest.mark.parametrize("name,r,x0", [("ising6", 1, [0] * 6), ("gaussian6", 2, [1, 0, 0, 1, 1, 0]),
                                       ("forbidden4", 2, [1, 1, 0, 0])])
def test_arwm_kernel_matches_its_matrix(name, r, x0):
    target, n = TARGETS[name]
    P = mixture_matrix(lambda k: arwm_matrix(target, n, k), float(r), n)
    rng = np.random.default_rng(3)

    def logp(x):
        return target(x)[0]

    x0 = np.asarray(x0, dtype=np.int64)
    state0 = RWState(x0, logp(x0))
    counts = np.zeros(2**n)
    for _ in range(N_REPEATS):
        new, _ = arwm_step(state0, float(r), rng, logp)
        counts[state_index(new.x)] += 1
    assert_frequencies_match(counts, P[state_index(x0)])


@pytest.mark.slow
def test_albp_chain_reaches_the_target_marginals():
    """A long chain of the real kernel: site marginals within 5 standard errors of
    enumeration, on the target with inexact gradient ratios; the standard errors are the
    exact ones of this chain (from its transition matrix), not batch-means estimates."""
    target, n = TARGETS["gaussian6"]
    pi = target_distribution(target, n)
    states = all_states(n)
    truth = pi @ states
    code = weight_code("barker")
    rng = np.random.default_rng(11)
    state = init_lb_state(np.zeros(n, dtype=np.int64), target, code)
    draws = np.empty((40_000, n))
    for t in range(draws.shape[0]):
        state, _ = albp_step(state, 1.5, rng, target, code)
        draws[t] = state.x
    P = mixture_matrix(lambda k: albp_matrix(target, n, k, "barker"), 1.5, n)
    se = mean_standard_error(P, pi, states, draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - truth) < 5 * se)
