"""The 4-ary sum tree: totals exact after many updates, draws proportional to the leaves."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from pymc_discrete.kernels.sum_tree import (
    tree_draw,
    tree_from_leaves,
    tree_leaf,
    tree_set,
    tree_total,
)
from tests.exact import assert_frequencies_match


@numba.njit
def _draw_many(tree, n, seed):
    np.random.seed(seed)
    counts = np.zeros(n, np.int64)
    for _ in range(200_000):
        counts[tree_draw(tree)] += 1
    return counts


@pytest.mark.parametrize("n", [1, 3, 4, 5, 17, 70])
def test_tree_draws_are_proportional_to_the_leaves(n):
    rng = np.random.default_rng(n)
    leaves = rng.exponential(size=n) * (rng.random(n) < 0.8)
    leaves[0] = 1.0
    tree = tree_from_leaves(leaves)
    for _ in range(3 * n):  # updates, including to and from zero
        i = int(rng.integers(n))
        leaves[i] = rng.exponential() if rng.random() < 0.7 else 0.0
        tree_set(tree, i, leaves[i])
    assert tree_total(tree) == pytest.approx(leaves.sum(), rel=1e-14)
    assert all(tree_leaf(tree, i) == leaves[i] for i in range(n))
    if leaves.sum() == 0.0:
        return
    counts = _draw_many(tree, n, 1)
    assert counts[leaves == 0.0].sum() == 0
    assert_frequencies_match(counts, leaves / leaves.sum())
