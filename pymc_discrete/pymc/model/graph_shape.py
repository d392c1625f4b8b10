"""The shape of a graph up to its leaves: what makes two variables' terms alike.

Two graphs have the same shape when they apply the same ops in the same pattern to leaves
of the same types: they then compute the same function of their leaves, and one
derivation or one vectorised graph serves both. Read by
:mod:`~pymc_discrete.pymc.model.local_terms` (variables whose log densities are derived
once) and :mod:`~pymc_discrete.pymc.model.stacking` (terms stacked into one).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
from pytensor.graph.basic import Constant, Variable

__all__ = ["graph_shape", "same_leaves"]


def graph_shape(
    out: Variable, is_leaf: Callable[[Variable], bool],
    leaf_token: Callable[[Variable, int], Hashable],
) -> tuple[list[Variable], tuple] | None:
    """The leaves of ``out``'s graph in order of first use, and a hashable signature.

    Parameters
    ----------
    out : Variable
    is_leaf : callable
        Whether the graph stops at a variable (besides ``out`` itself; roots always
        stop it).
    leaf_token : callable
        ``(leaf, k) -> token`` for the k-th distinct leaf: what of it the signature
        holds (its type, or the leaf itself where it must be the same object).

    Returns
    -------
    (leaves, signature) or None
        None where an op or a type cannot be hashed.
    """
    token: dict[Variable, Hashable] = {}
    leaves: list[Variable] = []
    entries = []
    stack = [(out, False)]
    while stack:
        v, expanded = stack.pop()
        if v in token:
            continue
        if v.owner is None or (v is not out and is_leaf(v)):
            token[v] = leaf_token(v, len(leaves))
            leaves.append(v)
            continue
        node = v.owner
        if not expanded:
            stack.append((v, True))
            stack.extend((i, False) for i in reversed(node.inputs) if i not in token)
            continue
        if node.outputs[0] in token:  # another output of a node already read
            continue
        n = len(entries)
        entries.append((node.op, tuple(token[i] for i in node.inputs),
                        tuple(o.type for o in node.outputs)))
        for k, o in enumerate(node.outputs):
            token[o] = ("node", n, k)
    signature = (tuple(entries), token[out])
    try:
        hash(signature)
    except TypeError:
        return None
    return leaves, signature


def same_leaves(column: list[Variable]) -> bool:
    """Whether the leaves at one position of alike graphs are one and the same: the same
    variable, or constants of equal dtype and values."""
    first = column[0]
    if all(leaf is first for leaf in column):
        return True
    if not all(isinstance(leaf, Constant) for leaf in column):
        return False
    data = np.asarray(first.data)
    return all(np.asarray(leaf.data).dtype == data.dtype
               and np.array_equal(np.asarray(leaf.data), data) for leaf in column)
