"""A sum tree over non-negative weights: draw an index with probability proportional to
its weight and change one weight, each in O(log N).

The tree is 4-ary and stored as one array in heap order: node k has children
``4k + 1 .. 4k + 4``, the root (node 0) holds the total, and the leaves (padded with
zeros to a power of four) start at ``(size - 1) // 4``. Four children per node halve the
depth of a binary tree, and a descent reads one cache line per level. Every internal node
is recomputed as the sum of its children (never updated by differences), so no
cancellation error builds up however many updates are made.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.jit import njit_cached

__all__ = ["tree_draw", "tree_from_leaves", "tree_leaf", "tree_set", "tree_total"]

_ARITY = 4


@njit_cached
def _leaf_offset(tree: np.ndarray) -> int:
    return (tree.size - 1) // _ARITY


@njit_cached
def _children_sum(tree: np.ndarray, k: int) -> float:
    first = _ARITY * k + 1
    return tree[first] + tree[first + 1] + tree[first + 2] + tree[first + 3]


@njit_cached
def tree_from_leaves(leaves: np.ndarray) -> np.ndarray:
    """The tree over ``leaves`` (a new array)."""
    n_leaves = 1
    while n_leaves < leaves.size:
        n_leaves *= _ARITY
    offset = (n_leaves - 1) // (_ARITY - 1)
    tree = np.zeros(offset + n_leaves)
    tree[offset:offset + leaves.size] = leaves
    for k in range(offset - 1, -1, -1):
        tree[k] = _children_sum(tree, k)
    return tree


@njit_cached
def tree_total(tree: np.ndarray) -> float:
    """Sum of the leaves."""
    return tree[0]


@njit_cached
def tree_leaf(tree: np.ndarray, i: int) -> float:
    """Value of leaf i."""
    return tree[_leaf_offset(tree) + i]


@njit_cached
def tree_set(tree: np.ndarray, i: int, value: float) -> None:
    """Set leaf i to ``value`` and recompute its ancestors."""
    k = _leaf_offset(tree) + i
    tree[k] = value
    while k > 0:
        k = (k - 1) // _ARITY
        tree[k] = _children_sum(tree, k)


@njit_cached
def tree_draw(tree: np.ndarray) -> int:
    """A leaf with probability proportional to its value (redrawn if rounding lands on an
    empty leaf, so the draw is exact). The total must be positive."""
    offset = _leaf_offset(tree)
    while True:
        u = np.random.random() * tree[0]
        k = 0
        while k < offset:
            child = _ARITY * k + 1
            last = child + _ARITY - 1
            while child < last:
                value = tree[child]
                if u < value:
                    break
                u -= value
                child += 1
            k = child
        if tree[k] > 0.0:
            return k - offset
