"""Sites whose terms are equal: sum each kind once.

A block's per-site sums are what summing out evaluates at every NUTS step, for every
value of every site. Many sites are alike: two occupancy sites with the same detection
history, two augmented capture-recapture rows of zeros, have the same terms at every value
and every parameter. This module finds them from the graph, and evaluates the terms only
at one site of each kind.

How. A piece of the block's terms is a vector graph; :func:`elements_at` rebuilds it at a
chosen subset of its elements, walking down through the operations that act element by
element (``Elemwise``, ``DimShuffle``, ``Alloc``, ``Reshape`` and constant ``Subtensor``
slices, parameter checks) and mapping each element's index to the indices of the inputs it
reads. Constants are gathered at those indices when the graph is built; any other
variable is read at them by an index in the graph (an opaque variable: a model variable, a
dot product, an indexing by the block). Along the way it records, for every element,
everything its value depends on besides the parameters that all elements share: the
constants' values it reads, and the positions it reads in opaque variables that differ
between elements. Two elements with the same record have the same value for every value of
the parameters; two sites whose elements, piece by piece and state by state, have the same
records in the same order have the same sums, to the bit.

Imports: PyTensor and NumPy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, Variable
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.basic import Alloc, get_scalar_constant_value
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.shape import Reshape
from pytensor.tensor.subtensor import Subtensor, get_idx_list

__all__ = ["AlikeSites", "alike_sites", "elements_at"]


class _Walk:
    """One rebuilding of graphs at given elements, with the records of what each element
    reads (memoised by variable and indices: a graph's shared nodes are rebuilt once)."""

    def __init__(self) -> None:
        self.memo: dict = {}
        self.records: list[np.ndarray] = []

    def at(self, var: Variable, idx: np.ndarray) -> Variable:
        """``var`` at the multi-indices ``idx`` (R, var.ndim): a vector of R values, or a
        0-d graph when every element has the same value by construction."""
        key = (id(var), idx.shape, idx.tobytes())
        if key not in self.memo:
            self.memo[key] = self._at(var, idx)
        return self.memo[key][0]

    def _at(self, var: Variable, idx: np.ndarray) -> tuple[Variable, Variable]:
        # the variable is kept in the memo entry so that its id is not reused
        if isinstance(var, Constant):
            return self._constant(var, idx), var
        node = var.owner
        rebuilt = None
        if node is not None:
            rebuilt = self._through(node, node.outputs.index(var), idx)
        return (self._opaque(var, idx) if rebuilt is None else rebuilt), var

    def _constant(self, var: Constant, idx: np.ndarray) -> Variable:
        data = np.asarray(var.data)
        values = data[tuple(idx.T)] if data.ndim else np.full(len(idx), data)
        self.records.append(values)
        if values.size and np.all(values == values[0]):
            return pt.constant(values[0], dtype=var.type.dtype)
        return pt.constant(values, dtype=var.type.dtype)

    def _opaque(self, var: Variable, idx: np.ndarray) -> Variable:
        if var.type.ndim == 0:
            return var
        if len(idx) and np.all(idx == idx[0]):
            return var[tuple(int(i) for i in idx[0])]
        shape = var.type.shape
        if any(s is None for s in shape):
            flat = [idx[:, d] for d in range(idx.shape[1])]  # the positions themselves
            self.records.extend(flat)
        else:
            self.records.append(np.ravel_multi_index(tuple(idx.T), shape))
        return var[tuple(pt.constant(idx[:, d]) for d in range(idx.shape[1]))]

    def _through(self, node, index: int, idx: np.ndarray) -> Variable | None:
        op, out = node.op, node.outputs[index]
        if isinstance(op, Elemwise):
            inner = [_broadcast_index(inp, idx) for inp in node.inputs]
            if any(i is None for i in inner):
                return None
            ins = [self.at(inp, i) for inp, i in zip(node.inputs, inner)]
            return _apply_elementwise(op, ins, index)
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
            src, dst = node.inputs[0].type.shape, out.type.shape
            if any(s is None for s in (*src, *dst)):
                return None
            flat = np.ravel_multi_index(tuple(idx.T), dst) if dst else np.zeros(len(idx),
                                                                                 np.int64)
            inner = np.stack(np.unravel_index(flat, src), axis=1) if src else idx[:, :0]
            return self.at(node.inputs[0], inner.astype(np.int64))
        if isinstance(op, Subtensor):
            inner = _subtensor_index(node, idx)
            return None if inner is None else self.at(node.inputs[0], inner)
        if isinstance(op, CheckAndRaise) and index == 0:
            # the conditions are read whole, as in the original graph
            return op(self.at(node.inputs[0], idx), *node.inputs[1:])
        return None


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
    """A vector graph evaluated only at some of its elements.

    Parameters
    ----------
    graph : Variable
        A vector (one dimension).
    elements : ndarray of int
        The positions wanted.

    Returns
    -------
    Variable
        ``graph[elements]``, computed from the inputs at those positions only where the
        operations act element by element (a 0-d graph if the value is the same at
        every position by construction).
    list of ndarray
        Each of length ``len(elements)``: together, every element's record of what its
        value depends on beside the parameters all elements share (module docstring).
    """
    walk = _Walk()
    idx = np.asarray(elements, dtype=np.int64)[:, None]
    return walk.at(graph, idx), walk.records


class AlikeSites:
    """Sites with equal sums: ``first`` (U,) the first site of each kind, in order,
    ``kind`` (N,) the kind of every site (``first[kind[i]]`` is alike site i)."""

    def __init__(self, first: np.ndarray, kind: np.ndarray) -> None:
        self.first, self.kind = first, kind

    @property
    def counts(self) -> np.ndarray:
        """(U,) float64: how many sites each kind stands for."""
        return np.bincount(self.kind, minlength=self.first.size).astype("float64")


def alike_sites(graphs: Sequence[Sequence[Variable]], owners: Sequence[np.ndarray],
                n: int) -> AlikeSites:
    """Group the sites of a block whose terms are equal at every state and parameter.

    Parameters
    ----------
    graphs : sequence of sequence of Variable
        ``graphs[p][v]``: piece p (a vector) with the block at its v-th state.
    owners : sequence of ndarray
        ``owners[p]``: the site each element of piece p belongs to (-1: none).
    n : int
        Number of sites.

    Returns
    -------
    AlikeSites
    """
    columns: list[list[np.ndarray]] = [[] for _ in range(n)]
    for piece, own in zip(graphs, owners):
        order = np.argsort(own, kind="stable")
        own_sorted = own[order]
        bounds = np.searchsorted(own_sorted, np.arange(n + 1))
        for state in piece:
            _, records = elements_at(state, np.arange(own.size))
            codes = np.stack([_codes(r) for r in records], axis=1) if records else \
                np.zeros((own.size, 0), dtype=np.int64)
            codes = codes[order]
            for site in range(n):
                columns[site].append(codes[bounds[site]:bounds[site + 1]])
    first_of: dict[bytes, int] = {}
    first, kind = [], np.empty(n, dtype=np.int64)
    for site in range(n):
        key = b"|".join(c.tobytes() + bytes(str(c.shape), "ascii")
                        for c in columns[site])
        if key not in first_of:
            first_of[key] = len(first)
            first.append(site)
        kind[site] = first_of[key]
    return AlikeSites(np.asarray(first, dtype=np.int64), kind)


def _codes(values: np.ndarray) -> np.ndarray:
    """Integer codes, equal where the values are equal byte for byte (so -0.0 and 0.0,
    which some operations tell apart, are two codes)."""
    raw = np.ascontiguousarray(values)
    as_bytes = raw.view(np.dtype((np.void, raw.dtype.itemsize))) if raw.ndim == 1 else raw
    _, codes = np.unique(as_bytes, return_inverse=True)
    return codes.astype(np.int64).ravel()
