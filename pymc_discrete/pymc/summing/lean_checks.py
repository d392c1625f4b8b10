"""A summed block's parameter checks as a short chain of scalar conditions.

The condition that every parameter check of a block's terms holds, read at the block's
states, comes out of PyMC's graphs wrapped several times over: ``all`` of a vector of
``all`` operations, scalar-tensor round trips, ``1 != 0`` for a state's value, ``p * [0, 1] >= 0``
over the two states. PyTensor rewrites all of this away when it compiles the summed-out
density, but it first differentiates it and rewrites it, node by node, at every
compilation (NUTS's, nutpie's, the trace's). :func:`lean_check` gives the same condition
as ``and`` of the distinct scalar conditions, the constant ones folded: the same value at
every parameter, a handful of nodes.

Imports: PyTensor and NumPy, and :mod:`~pymc_discrete.pymc.summing.alike_sites`.
"""

from __future__ import annotations

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import applys_between, graph_inputs
from pytensor.tensor.basic import MakeVector, ScalarFromTensor, TensorFromScalar
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import All

from pymc_discrete.pymc.summing.alike_sites import each_element_at, folded

__all__ = ["SPLIT_MAX", "lean_check"]

#: an ``all`` over a condition of at most this many elements (of static shape) becomes
#: the ``and`` of its elements, each rebuilt alone (constants folded)
SPLIT_MAX = 8


def lean_check(held: Variable) -> Variable:
    """``held`` (a 0-d boolean graph) as ``and`` of its distinct scalar conditions, with
    ``all`` over few elements split, scalar-tensor round trips removed and constant
    conditions folded (module docstring)."""
    return _lean(held, {_KEYS: {}})


#: the entry of the memo holding the graphs' keys (:func:`_key`)
_KEYS = "keys"


def _lean(var: Variable, memo: dict) -> Variable:
    if var not in memo:
        memo[var] = _lean_node(var, memo)
    return memo[var]


def _lean_node(var: Variable, memo: dict) -> Variable:
    node = var.owner
    if node is None or isinstance(var, Constant) or var.type.ndim != 0:
        return var
    op = node.op
    if isinstance(op, TensorFromScalar):
        inner = node.inputs[0].owner
        if inner is not None and isinstance(inner.op, ScalarFromTensor):
            return _lean(inner.inputs[0], memo)
        return var
    if isinstance(op, All):
        return _lean_all(var, node.inputs[0], memo)
    if isinstance(op, Elemwise) and isinstance(op.scalar_op, ps.AND) and var.type.dtype == "bool":
        return _and([_lean(i, memo) for i in node.inputs], var, memo[_KEYS])
    if isinstance(op, Elemwise) and all(isinstance(i, Constant) for i in node.inputs):
        value = folded(var)  # computed as PyTensor computes it
        return var if value is None else pt.constant(value.astype(var.type.dtype))
    return var


def _lean_all(var: Variable, cond: Variable, memo: dict) -> Variable:
    """``all(cond)``: the condition itself where 0-d, the ``and`` of a vector's parts, of
    a small condition's elements; as it is otherwise."""
    if cond.type.ndim == 0:
        return _and([_lean(cond, memo)], var, memo[_KEYS])
    if cond.owner is not None and isinstance(cond.owner.op, MakeVector):
        return _and([_lean(p, memo) for p in cond.owner.inputs], var, memo[_KEYS])
    shape = cond.type.shape
    if any(d is None for d in shape):
        return var
    size = int(np.prod(shape, dtype=np.int64))
    if size > SPLIT_MAX:
        return var
    if size == 0:
        return pt.constant(True)
    elements = np.stack(np.unravel_index(np.arange(size), shape), axis=1)
    split = _and([_lean(e, memo) for e in each_element_at(cond, elements)], var, memo[_KEYS])
    # kept where it is no larger: a condition on a parameter vector's elements would be
    # one indexing an element, where the constants fold away (``[0, 1] * p``) it is less
    return split if _size(split) <= _size(var) else var


def _size(graph: Variable) -> int:
    """The number of operations of a graph."""
    return sum(1 for _ in applys_between(list(graph_inputs([graph])), [graph]))


def _and(parts: list[Variable], original: Variable, keys: dict) -> Variable:
    """``and`` of boolean 0-d ``parts``: constant True ones dropped, False if one is
    constant False, each distinct condition once (``original``'s type kept)."""
    kept, seen = [], set()
    for part in _flattened(parts, set()):
        value = _constant_value(part)
        if value is None:
            key = _key(part, keys)
            if key not in seen:  # the same condition read twice (two states, two pieces)
                seen.add(key)
                kept.append(part if part.type.dtype == "bool" else pt.neq(part, 0))
        elif not value:
            return pt.constant(False)
    if not kept:
        return pt.constant(True)
    out = kept[0]
    for part in kept[1:]:
        out = pt.and_(out, part)
    return out if out.type == original.type else pt.cast(out, original.type.dtype)


def _flattened(parts: list[Variable], visited: set) -> list[Variable]:
    """The conditions of nested boolean ``and`` operations, in order, each ``and`` read
    once however many times it is reached."""
    out = []
    for part in parts:
        node = part.owner
        if (node is not None and isinstance(node.op, Elemwise)
                and isinstance(node.op.scalar_op, ps.AND) and part.type.dtype == "bool"
                and part.type.ndim == 0):
            if part not in visited:
                visited.add(part)
                out.extend(_flattened(list(node.inputs), visited))
        else:
            out.append(part)
    return out


def _key(var: Variable, keys: dict):
    """A key equal for graphs that compute the same thing (the same ops on the same leaves
    or constant values), each variable keyed once (``keys``: a graph that reads a shared
    part many times is keyed in time linear in its size)."""
    if var in keys:
        return keys[var]
    if isinstance(var, Constant):
        data = np.asarray(var.data)
        key = ("constant", str(var.type), data.tobytes())
    elif var.owner is None:
        key = ("leaf", id(var))
    else:
        node = var.owner
        # the inputs' keys stand for them by their index in ``keys``' order of insertion:
        # a key's size is then that of its node, not of its graph
        inputs = tuple(_key_id(_key(i, keys), keys) for i in node.inputs)
        key = (node.op, inputs, node.outputs.index(var))
    keys[var] = key
    return key


def _key_id(key, keys: dict) -> int:
    """A small integer for ``key``, the same for equal keys."""
    ids = keys.setdefault(_KEY_IDS, {})
    return ids.setdefault(key, len(ids))


#: the entry of the keys holding each distinct key's integer
_KEY_IDS = ("ids",)


def _constant_value(var: Variable):
    if isinstance(var, Constant):
        data = np.asarray(var.data)
        return bool(data) if data.ndim == 0 else None
    return None
