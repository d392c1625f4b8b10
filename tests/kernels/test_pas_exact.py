"""PAS and PAFS kernels against their exact transition matrices.

Every path of every length (L up to 3) is enumerated, by an independent plain-Python
implementation (tests/exact.py), to build the full transition matrix; it must satisfy
detailed balance and stationarity to 1e-10, and the real kernels' one-step frequencies
must match its rows within 5 binomial standard errors (fixed seeds).
"""

from __future__ import annotations

import numpy as np
import pytest

from pymc_discrete.kernels.pas import (
    draw_path_length,
    init_path_state,
    pafs_step,
    pas_step,
    path_logprob,
)
from pymc_discrete.kernels.ratios import potential_table
from pymc_discrete.kernels.weights import weight_code
from tests.exact import (
    assert_frequencies_match,
    assert_reversible,
    categorical_distribution,
    categorical_index,
    path_matrix,
)
from tests.targets import forbidden_state_target, gaussian_target, ising_target, potts_target

TARGETS = {
    "ising4": (ising_target(4, 0), (2, 2, 2, 2)),
    "gaussian4": (gaussian_target(4, 2), (2, 2, 2, 2)),
    "forbidden4": (forbidden_state_target(4, 4), (2, 2, 2, 2)),
    "potts": (potts_target((2, 3, 4), 0, exact=True), (2, 3, 4)),
    "potts-distorted": (potts_target((2, 3, 4), 1, exact=False), (2, 3, 4)),
}
STEPS = {"pas": pas_step, "pafs": pafs_step}
N_REPEATS = 20_000


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("kind", ["pas", "pafs"])
@pytest.mark.parametrize("weight,half", [("sqrt", 1), ("sqrt", 2), ("barker", 2)])
def test_path_matrix_is_reversible(name, kind, weight, half):
    target, ks = TARGETS[name]
    P = path_matrix(target, ks, half, weight, linearised=kind == "pafs")
    assert_reversible(P, categorical_distribution(target, ks))


@pytest.mark.parametrize(
    "name,kind,weight,x0",
    [
        ("ising4", "pafs", "sqrt", [0, 1, 1, 0]),
        ("gaussian4", "pafs", "barker", [1, 0, 0, 1]),
        ("gaussian4", "pas", "sqrt", [0, 0, 1, 1]),
        ("forbidden4", "pafs", "sqrt", [1, 1, 1, 0]),
        ("potts", "pas", "sqrt", [1, 2, 0]),
        ("potts-distorted", "pafs", "sqrt", [0, 1, 3]),
        ("potts-distorted", "pas", "barker", [1, 0, 2]),
    ],
)
@pytest.mark.slow
def test_path_kernel_matches_its_matrix(name, kind, weight, x0):
    """Path lengths 1..3 (X = 2): one-step frequencies of the kernel within 5 standard
    errors of the enumerated row."""
    target, ks = TARGETS[name]
    P = path_matrix(target, ks, 2, weight, linearised=kind == "pafs")
    code = weight_code(weight)
    rng = np.random.default_rng(7)
    state0 = init_path_state(np.array(x0), target, code)
    counts = np.zeros(P.shape[0])
    step = STEPS[kind]
    for _ in range(N_REPEATS):
        new, info = step(state0, 2.0, rng, target, code)
        counts[categorical_index(new.x, ks)] += 1
        assert np.sum(new.x != state0.x) <= info.n_proposed
        assert info.accepted or np.array_equal(new.x, state0.x)
        assert 1 <= info.n_proposed <= 3
    assert_frequencies_match(counts, P[categorical_index(x0, ks)])


def test_exact_ratios_give_the_normaliser_ratio():
    """With exact ratios and a locally balanced g, the path auxiliary ratio is
    Z(x) / Z(y) whatever the path (Property 1 of the paper): the kernel's general formula
    must agree."""
    target, ks = TARGETS["potts"]
    code = weight_code("sqrt")
    rng = np.random.default_rng(3)
    x = np.array([1, 2, 0])
    state = init_path_state(x, target, code)
    for _ in range(200):
        new, info = pas_step(state, 3.0, rng, target, code)
        if np.array_equal(new.x, state.x):
            continue
        log_z = lambda s: np.log(s.site_weights.sum()) + s.log_scale  # noqa: E731
        expected = min(1.0, np.exp(log_z(state) - log_z(new)))
        np.testing.assert_allclose(info.accept_prob, expected, rtol=1e-12)


def test_path_length_prior_is_uniform_with_mean_x():
    rng = np.random.default_rng(0)
    lengths = np.array([draw_path_length(3.0, rng)[0] for _ in range(50_000)])
    counts = np.bincount(lengths, minlength=6)[1:]
    assert set(np.unique(lengths)) == {1, 2, 3, 4, 5}
    assert_frequencies_match(counts, np.full(5, 0.2))
    # a fractional X mixes the priors of its two neighbouring integers, mean X
    lengths = np.array([draw_path_length(2.5, rng)[0] for _ in range(50_000)])
    se = lengths.std() / np.sqrt(lengths.size)
    assert abs(lengths.mean() - 2.5) < 5 * se


def test_linearised_path_probability_survives_extreme_ratios():
    """Ratios of -2000 at x, so the move back has weight e^+1000 relative to x's largest
    (beyond float range unless the tree is rebuilt at a new scale): path probabilities
    stay finite and match a direct log-space computation."""
    x = np.array([0, 0, 0])
    potentials = potential_table(x, np.array([-2000.0, -1990.0, -1995.0]))
    code = weight_code("sqrt")
    logp = path_logprob(potentials, x, [(0, 1), (0, 0)], code)
    log_w = np.array([-1000.0, -995.0, -997.5])
    first = log_w[0] - np.logaddexp.reduce(log_w)
    after = np.array([1000.0, -995.0, -997.5])
    second = after[0] - np.logaddexp.reduce(after)
    np.testing.assert_allclose(logp, first + second, rtol=1e-12)
