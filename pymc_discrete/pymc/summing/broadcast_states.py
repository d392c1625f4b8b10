"""A block's terms at K states, with the states along a broadcast axis where they only
select parameters.

Evaluating a block's terms at K states, one graph over a (K, N) constant of states gathers
a mixture's ``mu[z]`` at every (state, site): K x N gathers, and a scatter of as many in
the gradient. Where state v puts every site at v, the constant is (K, 1) broadcast, and
``mu[z]`` is ``mu[v]`` broadcast over the sites: K gathers, the graph a user writes by
hand (``Normal.dist(mu[None], ...)``, states against a new axis). :func:`narrowed` rebuilds
a vectorised graph that way: the states' constant narrowed to the axes along which it
varies, and the operations that read it (elementwise ones, dimension changes, gathers
indexed by it) on narrow inputs; any other operation reads its input broadcast back.

It gives up (None) where a state's values meet data of full size in an elementwise
operation (an indicator ``z * p`` or a Bernoulli's ``switch(z, log p, log1p(-p))``):
there, building the terms once per state folds the value into each copy (one branch of
the switch), which no broadcast can.

Imports: PyTensor and NumPy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.graph.traversal import toposort
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.shape import Shape
from pytensor.tensor.subtensor import AdvancedSubtensor

__all__ = ["may_narrow", "narrowed", "shapes_folded"]

#: how a narrowed variable depends on the states: through their values (an index, a
#: comparison of it) or through parameters they selected (``mu[z]`` and what follows)
_VALUES, _SELECTED = "values", "selected"


class _GiveUp(Exception):
    """The states meet full-size data by value: no narrowing."""


def _narrow_constant(constant: Constant) -> Constant | None:
    """``constant`` keeping only the axes past the first along which it varies (the first
    is the states'), or None if it varies along all of them."""
    data = np.asarray(constant.data)
    small = data
    for axis in range(1, data.ndim):
        first = np.take(small, [0], axis=axis)
        if np.all(small == first):
            small = first
    if small.shape == data.shape:
        return None
    return pt.constant(small)


def _is_narrower(new: Variable, old: Variable) -> bool:
    return any(b and not a for a, b in zip(old.type.broadcastable, new.type.broadcastable))


def _full(new: Variable, old: Variable) -> Variable:
    """``new`` broadcast back to ``old``'s shape and type."""
    if new is old or new.type == old.type:
        return new
    shape = [old.shape[d] if size is None else size for d, size in enumerate(old.type.shape)]
    return old.type.filter_variable(pt.broadcast_to(new, shape), allow_convert=True)


def shapes_folded(graph: Variable) -> Variable:
    """A copy of ``graph`` after PyTensor's canonical and shape rewrites.

    An index computed from constants and static shapes (a Categorical's value clipped to
    ``[0, p.shape[-1] - 1]``) becomes a constant. The rewrites work on a copy, since
    ``graph`` is part of graphs still being read.

    Parameters
    ----------
    graph : Variable

    Returns
    -------
    Variable
        The rewritten copy (a ``Constant`` where everything it reads folds).
    """
    return rewrite_graph(graph, include=("canonicalize", "ShapeOpt"), clone=True)


def _static(index: Variable) -> Variable:
    """An index that does not depend on the states, with the shapes it reads resolved
    (``take_along_axis``'s ``arange(p.shape[0])`` of a ``p`` of one row is ``[0]``, a
    broadcast axis)."""
    if all(size is not None for size in index.type.shape):
        return index
    return shapes_folded(index)


def _gather(node, x: Variable, indices: list[Variable]) -> Variable | None:
    """``x[indices]`` as a plain gather on leading axes (a Blockwise one whose ``x`` has
    only broadcast batch axes, as ``vectorize_graph`` makes of ``mu[z]``), or None."""
    op = node.op
    if isinstance(op, Blockwise):
        if not isinstance(op.core_op, AdvancedSubtensor):
            return None
        core_ndims = [len(shape) for shape in op.inputs_sig]
        batch = x.type.ndim - core_ndims[0]
        if len(set(core_ndims[1:])) != 1 or not all(x.type.broadcastable[:batch]):
            return None
        if batch and any(i.type.ndim - core_ndims[1] != batch for i in indices):
            return None
        x = x[(0,) * batch] if batch else x
        idx_list = op.core_op.idx_list
    elif isinstance(op, AdvancedSubtensor):
        idx_list = op.idx_list
    else:
        return None
    if tuple(idx_list) != tuple(range(len(indices))):
        return None
    if any(i.type.dtype.startswith("float") or i.type.dtype == "bool" for i in indices):
        return None
    sliced = _as_slice(x, indices)
    return x[tuple(indices)] if sliced is None else sliced


def _one_value(values: Variable) -> Variable:
    """A graph of the states' values as the one constant it holds at every state and
    site; else the states' values meet full-size data (:class:`_GiveUp`)."""
    data = _folded(values)
    if data is None or not data.size or not np.all(data == data.reshape(-1)[0]):
        raise _GiveUp
    return pt.constant(data.reshape(-1)[0], dtype=values.type.dtype)


def _folded(index: Variable) -> np.ndarray | None:
    """The value of an index computed from constants and shapes only (the states' values
    clipped to a Categorical's ``[0, p.shape[-1] - 1]``), or None."""
    if isinstance(index, Constant):
        return np.asarray(index.data)
    folded = shapes_folded(index)
    return np.asarray(folded.data) if isinstance(folded, Constant) else None


def _as_slice(x: Variable, indices: list[Variable]) -> Variable | None:
    """``x[indices]`` as a basic slice where the indices are constants, each one value
    but one, a run of consecutive values along one axis (K states at values lo..lo+K-1):
    ``x[lo:lo + K]`` with broadcast axes, whose gradient is a slice of the gradient, not
    a scatter. None otherwise."""
    values = [_folded(i) for i in indices]
    if any(v is None for v in values):
        return None
    shape = np.broadcast_shapes(*[v.shape for v in values])
    key, ranged = [], None
    for v in values:
        long = [axis for axis, size in enumerate(v.shape) if size > 1]
        if not long:
            key.append(int(v.reshape(-1)[0]) if v.size else None)
            continue
        run = v.reshape(-1)
        if len(long) > 1 or ranged is not None or run[0] < 0 \
                or not np.array_equal(run, run[0] + np.arange(run.size)):
            return None
        axis_size = x.type.shape[len(key)] if len(key) < x.type.ndim else None
        if axis_size is None or run[-1] >= axis_size:
            return None  # a slice past the end would shorten, where a gather raises
        ranged = len(shape) - v.ndim + long[0]
        key.append(slice(int(run[0]), int(run[0]) + run.size))
    if None in key or any(k >= size for k, size in zip(key, x.type.shape)
                          if isinstance(k, int) and size is not None):
        return None
    part = x[tuple(key)]  # (K, rest) with a run, (rest) without
    lead = ["x"] * len(shape)
    if ranged is not None:
        lead[ranged] = 0
    rest = list(range(int(ranged is not None), part.type.ndim))
    return part.dimshuffle(*lead, *rest)


def may_narrow(graphs: Sequence[Variable], block: Sequence[Variable]) -> bool:
    """Whether :func:`narrowed` may succeed on ``graphs`` vectorised over the ``block``'s
    states: False where a value of the block meets, elementwise, data that does not
    depend on it and varies along an axis the value varies along (``z * p_i``). Read off
    the graphs as they are, before any is vectorised: a cheap refusal for the blocks
    that keep their per-state copies."""
    kind: dict[Variable, str] = dict.fromkeys(block, _VALUES)
    for node in toposort(graphs):
        moved = [i for i in node.inputs if i in kind]
        if not moved:
            continue
        kinds = {kind[i] for i in moved}
        label = _VALUES if kinds == {_VALUES} else _SELECTED
        if isinstance(node.op, Elemwise) and _VALUES in kinds:
            varying = [not all(flags) for flags in zip(*[
                i.type.broadcastable for i in node.inputs if kind.get(i) == _VALUES])]
            for data in node.inputs:
                if data not in kind and any(
                        v and not b for v, b in zip(varying, data.type.broadcastable)):
                    return False
        elif isinstance(node.op, AdvancedSubtensor | Blockwise) and node.inputs[0] not in kind:
            label = _SELECTED
        for out in node.outputs:
            kind[out] = label
    return True


def narrowed(graphs: Sequence[Variable], states: Sequence[Constant]
             ) -> list[Variable] | None:
    """``graphs`` rebuilt with the ``states`` constants narrowed (module docstring).

    Parameters
    ----------
    graphs : sequence of Variable
        Graphs vectorised over K states along their first axis.
    states : sequence of Constant
        The constants holding the block's values at the K states (first axis).

    Returns
    -------
    list of Variable or None
        The graphs, same types and values, or None where no constant narrows, the
        states' values meet full-size data elementwise, or no gather by them narrows.
    """
    new: dict[Variable, Variable] = {}
    kind: dict[Variable, str] = {}
    for constant in states:
        small = _narrow_constant(constant)
        if small is None:
            return None
        new[constant], kind[constant] = small, _VALUES
    try:
        gathers = sum(_rebuild(node, new, kind) for node in toposort(graphs))
    except _GiveUp:
        return None
    if not gathers:
        return None  # nothing selected by the states: the per-state copies fold more
    return [_full(new.get(g, g), g) for g in graphs]


def _is_gather(op) -> bool:
    return isinstance(op, AdvancedSubtensor) or (
        isinstance(op, Blockwise) and isinstance(op.core_op, AdvancedSubtensor))


def _rebuild(node, new: dict, kind: dict) -> int:
    """Rebuild ``node`` on the narrowed inputs, recording its outputs in ``new``/``kind``;
    1 where it is a gather by the states rebuilt on narrow indices, else 0."""
    moved = [i for i in node.inputs if i in new]
    if not moved:
        return 0
    if isinstance(node.op, Shape) and None not in node.inputs[0].type.shape:
        # the full size, known: the shape is a constant, not a reader of the full graph
        new[node.outputs[0]] = pt.as_tensor(np.array(node.inputs[0].type.shape, dtype="int64"))
        kind[node.outputs[0]] = _SELECTED
        return 0
    inputs = [new.get(i, i) for i in node.inputs]
    kinds = {kind[i] for i in moved}
    op = node.op
    gathers = 0
    if isinstance(op, Elemwise):
        outputs = op.make_node(*inputs).outputs
        if _VALUES in kinds and not all(_is_narrower(n, o) or n.type.ndim == 0
                                        for n, o in zip(outputs, node.outputs)):
            # a value against full-size data: building per state folds it, unless it is
            # one value at every state (a Categorical's range check, false everywhere)
            inputs = [_one_value(n) if kind.get(i) == _VALUES else n
                      for n, i in zip(inputs, node.inputs)]
            outputs = op.make_node(*inputs).outputs
        label = _VALUES if kinds == {_VALUES} else _SELECTED
    elif isinstance(op, DimShuffle):
        outputs = op.make_node(inputs[0]).outputs
        label = kind[node.inputs[0]]
    elif _is_gather(op) and node.inputs[0] not in new and (gathered := _gather(
            node, inputs[0], [n if i in new else _static(i)
                              for n, i in zip(inputs[1:], node.inputs[1:])])) is not None:
        outputs, label = [gathered], _SELECTED
        gathers = 1
    else:  # any other operation reads its inputs at full size
        outputs = node.op.make_node(*[_full(n, o) for n, o in zip(inputs, node.inputs)]
                                    ).outputs
        label = _VALUES if kinds == {_VALUES} else _SELECTED
    for old, out in zip(node.outputs, outputs):
        if out.type.ndim != old.type.ndim:
            raise _GiveUp
        new[old], kind[old] = out, label
    return gathers
