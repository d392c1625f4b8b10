"""Categorical ALBP and ARWM kernels against their exact transition matrices (every ordered
pick of sites and every new value enumerated)."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_discrete.kernels.albp import albp_step, init_lb_state
from pymc_discrete.kernels.arwm import RWState, arwm_step
from pymc_discrete.kernels.weights import weight_code
from tests.exact import (
    assert_frequencies_match,
    assert_reversible,
    categorical_albp_matrix,
    categorical_arwm_matrix,
    categorical_distribution,
    categorical_index,
    mixture_matrix,
)
from tests.targets import potts_target

KS = (2, 3, 4)
TARGETS = {
    "exact": potts_target(KS, 0, exact=True),
    "distorted": potts_target(KS, 1, exact=False),
}
N_REPEATS = 20_000


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("weight", ["barker", "sqrt"])
@pytest.mark.parametrize("r", [1, 2, 3])
def test_categorical_albp_matrix_is_reversible(name, weight, r):
    target = TARGETS[name]
    P = categorical_albp_matrix(target, KS, r, weight)
    assert_reversible(P, categorical_distribution(target, KS))


@pytest.mark.parametrize("r", [1, 2, 3])
def test_categorical_arwm_matrix_is_reversible(r):
    target = TARGETS["exact"]
    assert_reversible(categorical_arwm_matrix(target, KS, r), categorical_distribution(target, KS))


@pytest.mark.parametrize(
    "name,weight,r,x0",
    [("exact", "barker", 1, [1, 2, 0]), ("distorted", "sqrt", 2, [0, 1, 3]),
     ("distorted", "barker", 3, [1, 0, 2])],
)
def test_categorical_albp_kernel_matches_its_matrix(name, weight, r, x0):
    target = TARGETS[name]
    P = mixture_matrix(lambda k: categorical_albp_matrix(target, KS, k, weight), float(r), len(KS))
    code = weight_code(weight)
    rng = np.random.default_rng(r)
    state0 = init_lb_state(np.array(x0), target, code)
    counts = np.zeros(P.shape[0])
    for _ in range(N_REPEATS):
        new, info = albp_step(state0, float(r), rng, target, code)
        counts[categorical_index(new.x, KS)] += 1
        assert np.sum(new.x != state0.x) == (info.n_proposed if info.accepted else 0)
    assert_frequencies_match(counts, P[categorical_index(x0, KS)])


@pytest.mark.parametrize("r,x0", [(1, [0, 0, 0]), (2, [1, 2, 3])])
def test_categorical_arwm_kernel_matches_its_matrix(r, x0):
    target = TARGETS["exact"]
    P = mixture_matrix(lambda k: categorical_arwm_matrix(target, KS, k), float(r), len(KS))
    rng = np.random.default_rng(11)

    def logp(x):
        return target(x)[0]

    x0 = np.array(x0)
    state0 = RWState(x0, logp(x0))
    counts = np.zeros(P.shape[0])
    ks = np.array(KS)
    for _ in range(N_REPEATS):
        new, _ = arwm_step(state0, float(r), rng, logp, ks)
        counts[categorical_index(new.x, KS)] += 1
    assert_frequencies_match(counts, P[categorical_index(x0, KS)])
