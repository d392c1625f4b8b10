"""A graph rebuilt at chosen elements, with a record of what each element reads.

A block's per-site sums are what summing out evaluates at every NUTS step, for every
value of every site, and most of those terms repeat: two occupancy sites with as many
detections, the augmented all-zero rows of a capture-recapture model, a change point's
years on the same side of the switch with the same count.
:mod:`~pymc_discrete.pymc.summing.distinct_terms` evaluates each distinct term once; this
module gives it the two tools.

:func:`elements_at` rebuilds a graph at a chosen subset of its elements, walking down
through the operations that act element by element (``Elemwise``, ``DimShuffle``,
``Alloc``, ``Reshape`` and constant ``Subtensor`` slices, parameter checks), the ones that
stack (``MakeVector``, ``Join``: scalar variables one per site) and reductions along
axes, mapping each element's index to the indices of the inputs it reads. Constants are gathered at
those indices when the graph is built, and an elementwise operation of constants only is
folded into its values (a change point's ``t >= s``, with the state a constant, becomes
one boolean an element); any other variable is read at the indices by an index in the
graph (an opaque variable: a model variable, a dot product, an indexing by the block).
Along the way it records, for every element, everything its value depends on besides the
parameters that all elements share: the constants' values where they meet a variable,
and the positions it reads in opaque variables that differ between elements. Two
elements with the same record have the same value for every value of the parameters.

:class:`AlikeSites` says which sites have equal sums (their kinds).

Imports: PyTensor and NumPy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, Variable
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.basic import Alloc, Join, MakeVector, get_scalar_constant_value
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.shape import Reshape, Shape
from pytensor.tensor.subtensor import Subtensor, get_idx_list

__all__ = ["AlikeSites", "each_element_at", "elements_at", "folded", "record_codes"]


class _Rebuilt:
    """A variable rebuilt at R elements: ``graph`` (R values, or 0-d when they are equal
    by construction), and ``values`` (R,) when every one is a known constant. A known
    constant's graph is built only when read: a model written one variable per site
    stacks thousands of scalar constants that are folded, never put in a graph."""

    __slots__ = ("_graph", "_dtype", "values")

    def __init__(self, graph: Variable | None, values: np.ndarray | None,
                 dtype: str | None = None) -> None:
        self._graph, self.values, self._dtype = graph, values, dtype

    @property
    def graph(self) -> Variable:
        if self._graph is None:
            values = self.values
            value = values[0] if values.size and np.all(values == values[0]) else values
            self._graph = pt.constant(value, dtype=self._dtype)
        return self._graph


class _Walk:
    """One rebuilding of graphs at given elements, with the records of what each element
    reads (memoised by variable and indices: a graph's shared nodes are rebuilt once).

    An elementwise operation of constants is folded into its values: an element then
    records the folded value (a change point's ``t < s``: one boolean) instead of its
    inputs. A constant is recorded where it meets a variable."""

    def __init__(self) -> None:
        self.memo: dict = {}
        self.records: list[np.ndarray] = []

    def at(self, var: Variable, idx: np.ndarray) -> _Rebuilt:
        """``var`` at the multi-indices ``idx`` (R, var.ndim)."""
        key = (id(var), idx.shape, idx.tobytes())
        if key not in self.memo:
            self.memo[key] = (self._at(var, idx), var)  # var kept: its id is not reused
        return self.memo[key][0]

    def top(self, var: Variable, idx: np.ndarray) -> Variable:
        """``var`` at ``idx`` as the graph's result: its constant values are recorded."""
        rebuilt = self.at(var, idx)
        self._record(rebuilt)
        return rebuilt.graph

    def _record(self, rebuilt: _Rebuilt) -> None:
        if rebuilt.values is not None:
            self.records.append(rebuilt.values)

    def _at(self, var: Variable, idx: np.ndarray) -> _Rebuilt:
        if isinstance(var, Constant):
            data = np.asarray(var.data)
            return _constant(data[tuple(idx.T)] if data.ndim else np.full(len(idx), data),
                             var.type.dtype)
        node = var.owner
        rebuilt = None
        if node is not None:
            rebuilt = self._through(node, node.outputs.index(var), idx)
        return self._opaque(var, idx) if rebuilt is None else rebuilt

    def _opaque(self, var: Variable, idx: np.ndarray) -> _Rebuilt:
        if var.type.ndim == 0:
            return _Rebuilt(var, None)
        if len(idx) and np.all(idx == idx[0]):
            return _Rebuilt(var[tuple(int(i) for i in idx[0])], None)
        shape = var.type.shape
        if any(s is None for s in shape):
            flat = [idx[:, d] for d in range(idx.shape[1])]  # the positions themselves
            self.records.extend(flat)
        else:
            self.records.append(np.ravel_multi_index(tuple(idx.T), shape))
        return _Rebuilt(var[tuple(pt.constant(idx[:, d]) for d in range(idx.shape[1]))],
                        None)

    def _through(self, node, index: int, idx: np.ndarray) -> _Rebuilt | None:
        op, out = node.op, node.outputs[index]
        if isinstance(op, Elemwise):
            inner = [_broadcast_index(inp, idx) for inp in node.inputs]
            if any(i is None for i in inner):
                return None
            ins = [self.at(inp, i) for inp, i in zip(node.inputs, inner)]
            if all(i.values is not None for i in ins):
                folded = _fold(op, [i.values for i in ins], len(node.outputs), len(idx))
                if folded is not None:
                    return _constant(folded[index], out.type.dtype)
            for rebuilt in ins:
                self._record(rebuilt)
            chosen = _decided(op, ins, out.type.dtype) if len(node.outputs) == 1 else None
            if chosen is not None:
                return chosen
            return _Rebuilt(_apply_elementwise(op, [i.graph for i in ins], index), None)
        if isinstance(op, DimShuffle):
            inner = np.zeros((len(idx), op.input_ndim), dtype=np.int64)
            for j, d in enumerate(op.new_order):
                if d != "x":
                    inner[:, d] = idx[:, j]
            return self.at(node.inputs[0], inner)
        if isinstance(op, Alloc):
            value = node.inputs[0]
            inner = _broadcast_index(value, idx[:, idx.shape[1] - value.type.ndim:])
            return None if inner is None else self.at(value, inner)
        if isinstance(op, Reshape):
            src, dst = node.inputs[0].type.shape, _reshape_target(node)
            if dst is None or any(s is None for s in src):
                return None
            flat = np.ravel_multi_index(tuple(idx.T), dst) if dst else np.zeros(len(idx),
                                                                                 np.int64)
            inner = np.stack(np.unravel_index(flat, src), axis=1) if src else idx[:, :0]
            return self.at(node.inputs[0], inner.astype(np.int64))
        if isinstance(op, Subtensor):
            inner = _subtensor_index(node, idx)
            return None if inner is None else self.at(node.inputs[0], inner)
        if isinstance(op, CAReduce):
            return self._reduced(node, idx)
        if isinstance(op, MakeVector | Join):
            return self._joined(node, idx)
        if isinstance(op, CheckAndRaise) and index == 0:
            # the conditions are read whole, as in the original graph
            checked = self.at(node.inputs[0], idx)
            self._record(checked)
            return _Rebuilt(op(checked.graph, *node.inputs[1:]), None)
        return None


    def _reduced(self, node, idx: np.ndarray) -> _Rebuilt | None:
        """A reduction (``sum``, ``all``, ``max``, ... along some axes): each element
        reduces its L inputs, rebuilt by a walk of their own whose records, L per
        element, join this walk's."""
        shape = node.inputs[0].type.shape
        if any(d is None for d in shape):
            return None
        axes = tuple(range(len(shape))) if node.op.axis is None else tuple(node.op.axis)
        kept = [d for d in range(len(shape)) if d not in axes]
        reduced = [np.arange(shape[d]) for d in axes]
        combos = (np.stack(np.meshgrid(*reduced, indexing="ij"), axis=-1).reshape(-1, len(axes))
                  if axes else np.zeros((1, 0), dtype=np.int64))
        width = len(combos)
        inner = np.zeros((len(idx), width, len(shape)), dtype=np.int64)
        inner[:, :, kept] = idx[:, None, :]
        inner[:, :, list(axes)] = combos[None, :, :]
        walk = _Walk()
        # explicit rows: a reduction of a 0-d input has rows of no index (-1 is ambiguous)
        part = walk.at(node.inputs[0], inner.reshape(len(idx) * width, len(shape)))
        walk._record(part)
        for record in walk.records:  # L columns an element
            self.records.extend(np.asarray(record).reshape(len(idx), width).T)
        values = (None if part.values is None
                  else np.asarray(part.values).reshape(len(idx), width))
        graph = pt.broadcast_to(part.graph, (len(idx) * width,)).reshape((len(idx), width))
        op = node.op.clone(axis=(1,))  # the same reduction, along each element's inputs
        out = node.outputs[0]
        if values is not None:
            folded = _fold_reduce(op, values, out.type.dtype)
            if folded is not None:
                return _constant(folded, out.type.dtype)
        return _Rebuilt(pt.cast(op(graph), out.type.dtype), None)

    def _joined(self, node, idx: np.ndarray) -> _Rebuilt | None:
        """A vector of scalars (``MakeVector``) or a ``Join``: each part rebuilt at the
        elements it holds; known constants folded (one variable per site stacked, at a
        state of the block), other parts rebuilt by walks of their own, an element's
        record then its part and its code in that walk."""
        out = node.outputs[0]
        if isinstance(node.op, MakeVector):
            axis, parts = 0, [(p, 1) for p in node.inputs]
        else:  # the axis is the operation's own (PyTensor 3)
            axis = int(node.op.axis) % out.type.ndim
            parts = [(p, p.type.shape[axis]) for p in node.inputs]
        if any(length is None for _, length in parts):
            return None
        ends = np.cumsum([length for _, length in parts])
        which = np.searchsorted(ends, idx[:, axis], side="right")
        rebuilt: dict[int, tuple[_Rebuilt, list[np.ndarray]]] = {}
        for j in np.unique(which):
            part, length = parts[j]
            inner = idx[which == j].copy()
            inner[:, axis] -= ends[j] - length
            inner = inner[:, :0] if isinstance(node.op, MakeVector) else \
                _broadcast_index(part, inner)
            if inner is None:
                return None
            walk = _Walk()
            got = walk.at(part, inner)
            walk._record(got)
            rebuilt[int(j)] = (got, walk.records)
        if all(got.values is not None for got, _ in rebuilt.values()):
            values = np.empty(len(idx), dtype=out.type.dtype)
            for j, (got, _) in rebuilt.items():
                values[which == j] = got.values
            return _constant(values, out.type.dtype)
        # an element's record: a constant's value (whatever part holds it), or the
        # part it reads and its code in that part's walk
        part_of = which.copy()
        code = np.zeros(len(idx), dtype=np.int64)
        value = np.zeros(len(idx), dtype=out.type.dtype)
        pieces, order = [], []
        for j, (got, records) in rebuilt.items():
            chosen = np.flatnonzero(which == j)
            if got.values is not None:
                part_of[chosen], value[chosen] = -1, got.values
            else:
                code[chosen] = record_codes(records, chosen.size)
            pieces.append(pt.broadcast_to(pt.cast(got.graph, out.type.dtype),
                                          (chosen.size,)))
            order.append(chosen)
        self.records.extend([part_of, code, value])
        joined = pieces[0] if len(pieces) == 1 else pt.concatenate(pieces)
        order = np.concatenate(order)
        if np.array_equal(order, np.arange(len(idx))):
            return _Rebuilt(joined, None)
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        return _Rebuilt(joined[back], None)


def record_codes(records: Sequence[np.ndarray], r: int) -> np.ndarray:
    """(R,) integer codes of R elements' records: equal codes, equal records (values
    compared byte for byte: -0.0 and 0.0, which some operations tell apart, differ)."""
    columns = []
    for values in records:
        raw = np.ascontiguousarray(values)
        as_bytes = raw.view(np.dtype((np.void, raw.dtype.itemsize)))
        columns.append(np.unique(as_bytes, return_inverse=True)[1].ravel())
    if not columns:
        return np.zeros(r, dtype=np.int64)
    return np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)[1].ravel()


def _fold_reduce(op, values: np.ndarray, dtype: str) -> np.ndarray | None:
    """``op`` (a reduction along axis 1) of known (R, L) values, as PyTensor computes
    it; None where its implementation refuses them."""
    node = op.make_node(pt.constant(values))
    storage: list[list] = [[None]]
    try:
        op.perform(node, [values], storage)
    except Exception:  # an operation without a NumPy implementation stays in the graph
        return None
    return np.asarray(storage[0][0], dtype=dtype)


def _constant(values: np.ndarray, dtype: str) -> _Rebuilt:
    """Known values as a rebuilt constant (its graph 0-d when they are all equal)."""
    return _Rebuilt(None, np.asarray(values, dtype=dtype), dtype)


def _fold(op: Elemwise, values: Sequence[np.ndarray], n_out: int, size: int
          ) -> list[np.ndarray] | None:
    """The outputs of ``op`` on known inputs, computed as PyTensor computes them; None
    where its implementation refuses them."""
    node = op.make_node(*[pt.constant(v) for v in values])
    storage: list[list] = [[None] for _ in range(n_out)]
    try:
        op.perform(node, [np.asarray(v) for v in values], storage)
    except Exception:  # an operation without a NumPy implementation stays in the graph
        return None
    return [np.broadcast_to(np.asarray(s[0], dtype=o.type.dtype), (size,))
            for s, o in zip(storage, node.outputs)]


def _uniform(rebuilt: _Rebuilt):
    """The one value of a rebuilt constant equal at every element, else None."""
    values = rebuilt.values
    if values is None or not values.size or not np.all(values == values[0]):
        return None
    return values[0]


def _decided(op: Elemwise, ins: Sequence[_Rebuilt], dtype: str) -> _Rebuilt | None:
    """The input an elementwise operation returns as it is, where a constant input
    decides it at every element: ``switch`` on a constant condition, a boolean ``and``
    with True or False or ``or`` with False or True (on integers they are bitwise, and
    left alone), ``mul`` by 1 (each exactly its input, to the bit); None otherwise, or
    where the input's dtype is not the result's. A term read at
    a constant state (a Bernoulli's ``switch(y == 1, log(z p), log(1 - z p))`` at z = 1
    and y = 0) then leaves no switch of constants behind for PyTensor to rewrite and
    differentiate."""
    scalar_op, chosen = op.scalar_op, None
    if isinstance(scalar_op, ps.Switch):
        condition = _uniform(ins[0])
        if condition is not None:
            chosen = ins[1] if condition else ins[2]
    elif (isinstance(scalar_op, ps.Mul) or (isinstance(scalar_op, ps.AND | ps.OR)
                                           and np.dtype(dtype) == np.bool_)) and len(ins) == 2:
        for given, other in ((ins[0], ins[1]), (ins[1], ins[0])):
            value = _uniform(given)
            if value is None:
                continue
            if isinstance(scalar_op, ps.Mul):
                chosen = other if value == 1 else None
            elif isinstance(scalar_op, ps.AND):
                chosen = other if value else given
            else:
                chosen = given if value else other
            if chosen is not None:
                break
    if chosen is None:
        return None
    chosen_dtype = chosen.graph.type.dtype if chosen.values is None else chosen.values.dtype
    return chosen if chosen_dtype == np.dtype(dtype) else None


def _broadcast_index(inp: Variable, idx: np.ndarray) -> np.ndarray | None:
    """Indices into ``inp`` of the elements ``idx`` of a result it is broadcast to
    (dimensions aligned on the right); None where a dimension's length is unknown."""
    shape = inp.type.shape
    if len(shape) != idx.shape[1]:
        return None
    inner = idx.copy()
    for d, length in enumerate(shape):
        if length is None:
            return None
        if length == 1:
            inner[:, d] = 0
    return inner


def _reshape_target(node) -> tuple[int, ...] | None:
    """A ``Reshape``'s output shape: its static type, else its shape input folded to
    constants (a vectorised graph reshapes to shapes read off its inputs)."""
    shape = node.outputs[0].type.shape
    if all(s is not None for s in shape):
        return shape
    src = node.inputs[0].type.shape
    if any(s is None for s in src):
        return None
    target = folded(node.inputs[1])
    if target is None or len(target) != len(shape):
        return None
    dims = [int(d) for d in target]
    size = int(np.prod(src, dtype=np.int64))
    known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
    dims = [size // max(known, 1) if d == -1 else d for d in dims]
    return tuple(dims) if int(np.prod(dims, dtype=np.int64)) == size else None


def folded(var: Variable, memo: dict | None = None) -> np.ndarray | None:
    """The value of a small graph of constants and static shapes (a reshape's target),
    computed as PyTensor computes it; None where it reads anything else."""
    memo = {} if memo is None else memo
    if var not in memo:
        memo[var] = _fold_node(var, memo)
    return memo[var]


def _fold_node(var: Variable, memo: dict) -> np.ndarray | None:
    if isinstance(var, Constant):
        return np.asarray(var.data)
    node = var.owner
    if node is None:
        return None
    if isinstance(node.op, Shape):
        shape = node.inputs[0].type.shape
        return None if any(s is None for s in shape) else np.asarray(shape, dtype=np.int64)
    inputs = [folded(inp, memo) for inp in node.inputs]
    if any(i is None for i in inputs):
        return None
    storage: list[list] = [[None] for _ in node.outputs]
    try:
        node.op.perform(node, inputs, storage)
    except Exception:  # an operation without a NumPy implementation
        return None
    return np.asarray(storage[node.outputs.index(var)][0])


def _subtensor_index(node, idx: np.ndarray) -> np.ndarray | None:
    """Input indices of a ``Subtensor`` with constant integer and slice entries."""
    src = node.inputs[0].type.shape
    if any(s is None for s in src):
        return None
    entries = get_idx_list(node.inputs, node.op.idx_list)
    inner = np.zeros((len(idx), len(src)), dtype=np.int64)
    j = 0
    try:
        for d, length in enumerate(src):
            entry = entries[d] if d < len(entries) else slice(None)
            if isinstance(entry, slice):
                start, _, step = slice(*[None if e is None else
                                         int(get_scalar_constant_value(e))
                                         for e in (entry.start, entry.stop, entry.step)]
                                       ).indices(length)
                inner[:, d] = start + step * idx[:, j]
                j += 1
            else:
                inner[:, d] = int(get_scalar_constant_value(entry)) % length
    except NotScalarConstantError:
        return None
    return inner


def _apply_elementwise(op: Elemwise, inputs: Sequence[Variable], index: int) -> Variable:
    """``op`` on rebuilt inputs, 0-d ones broadcast against vectors."""
    if any(i.type.ndim for i in inputs):
        inputs = [i.dimshuffle("x") if i.type.ndim == 0 else i for i in inputs]
    return op.make_node(*inputs).outputs[index]


def elements_at(graph: Variable, elements: np.ndarray) -> tuple[Variable, list[np.ndarray]]:
    """A graph evaluated only at some of its elements.

    Parameters
    ----------
    graph : Variable
        A tensor of static shape.
    elements : ndarray of int
        The positions wanted: shape (R,) for a vector, (R, graph.ndim) multi-indices for
        any graph.

    Returns
    -------
    Variable
        ``graph`` at those elements (R values), computed from the inputs at those
        positions only where the operations act element by element (a 0-d graph if the
        value is the same at every position by construction).
    list of ndarray
        Each of length R: together, every element's record of what its value depends on
        beside the parameters all elements share (module docstring).
    """
    walk = _Walk()
    idx = np.asarray(elements, dtype=np.int64)
    if idx.ndim == 1:
        idx = idx[:, None]
    return walk.top(graph, idx), walk.records


def each_element_at(graph: Variable, elements: np.ndarray) -> list[Variable]:
    """:func:`elements_at` one element at a time, in one walk: a 0-d graph per element,
    the parts they share (a parameter's ``log(p)``) built once."""
    walk = _Walk()
    idx = np.asarray(elements, dtype=np.int64)
    if idx.ndim == 1:
        idx = idx[:, None]
    out = []
    for i in range(len(idx)):
        value = walk.top(graph, idx[i:i + 1])
        out.append(value if value.type.ndim == 0 else value.reshape(()))
    return out


class AlikeSites:
    """Sites with equal sums: ``first`` (U,) the first site of each kind, in order,
    ``kind`` (N,) the kind of every site (``first[kind[i]]`` is alike site i)."""

    def __init__(self, first: np.ndarray, kind: np.ndarray) -> None:
        self.first, self.kind = first, kind

    @property
    def counts(self) -> np.ndarray:
        """(U,) float64: how many sites each kind stands for."""
        return np.bincount(self.kind, minlength=self.first.size).astype("float64")
