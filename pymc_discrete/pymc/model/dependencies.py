"""Which sites each term may depend on, read off the PyTensor graph.

A sound over-approximation of the dependencies (:func:`dependency_superset`), computed by
evaluating the graph once at a point and propagating boolean sparse matrices through it.

Every variable that depends on the joined block vector gets a boolean sparse matrix
(its elements x sites): element e may depend on site i. The rules only ever add
dependencies: an elementwise op's element depends on the elements it is computed from,
an indexing op's element on the element it copies (with the indices evaluated at the
initial point, which is valid only when they do not vary while sampling), a reduction's
element on its whole fibre, a dot product's on a row and a column, and any op without
a rule on everything its inputs depend on. Being over-inclusive only costs set-up time
(more groups); missing a dependency would make the exact ratios wrong, so an op is only
given a precise rule when its elements provably copy or combine the listed elements.

"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytensor
import scipy.sparse as sp
from pytensor.compile.mode import Mode
from pytensor.compile.ops import DeepCopyOp, ViewOp
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import toposort
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.basic import (
    Alloc,
    Join,
    MakeVector,
    ScalarFromTensor,
    Split,
    TensorFromScalar,
)
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.math import Argmax, Dot
from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape
from pytensor.tensor.subtensor import (
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
    unflatten_index_variables,
)

from pymc_discrete.kernels.structure import DependencySuperset

__all__ = ["MAX_DEPENDENCY_PAIRS", "Unanalysable", "dependency_superset"]

#: Most (element, site) pairs the graph analysis holds for one variable (~2**24 pairs is
#: ~100 MB); beyond, the terms are dense anyway and set-up probes site by site.
MAX_DEPENDENCY_PAIRS = 2**24


class Unanalysable(Exception):
    """The graph could not be analysed within budget (or at all); probe site by site."""


def _empty(rows: int, n: int) -> sp.csr_array:
    return sp.csr_array((rows, n), dtype=bool)


def _take(dep: sp.csr_array, index: np.ndarray) -> sp.csr_array:
    """Rows of ``dep`` at the flat ``index`` (any shape, C order); -1 gives no row."""
    index = np.asarray(index, dtype=np.int64).ravel()
    if index.size and index.min() < 0:
        dep = sp.vstack([dep, _empty(1, dep.shape[1])], format="csr")
        index = np.where(index < 0, dep.shape[0] - 1, index)
    return dep[index]


def _union(parts: list[sp.csr_array], rows: int, n: int) -> sp.csr_array:
    out = _empty(rows, n)
    for part in parts:
        out = out + part  # boolean: OR
    return sp.csr_array(out)


def _broadcast_index(in_shape: tuple, out_shape: tuple) -> np.ndarray:
    """Flat input index of every output element under numpy broadcasting."""
    size = int(np.prod(in_shape, dtype=np.int64))
    return np.broadcast_to(np.arange(size, dtype=np.int64).reshape(in_shape), out_shape)


def _reduce(dep: sp.csr_array, shape: tuple, axes: Sequence[int]) -> sp.csr_array:
    """Element of the reduction over ``axes`` -> union over its fibre (C order of the
    remaining axes)."""
    axes = sorted(a % len(shape) for a in axes) if len(shape) else []
    index = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    index = np.moveaxis(index, axes, list(range(len(shape) - len(axes), len(shape))))
    fibre = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    n_out = int(np.prod([shape[a] for a in range(len(shape)) if a not in axes],
                        dtype=np.int64))
    pick = sp.csr_array(
        (np.ones(n_out * fibre, dtype=bool), index.reshape(n_out * fibre),
         np.arange(0, n_out * fibre + 1, max(fibre, 1)) if fibre
         else np.zeros(n_out + 1, dtype=np.int64)),
        shape=(n_out, dep.shape[0]),
    )
    return sp.csr_array(pick @ dep)


def _everywhere(deps: list[sp.csr_array | None], rows: int, n: int) -> sp.csr_array:
    """Every one of ``rows`` elements depends on everything in ``deps`` (the rule for
    ops without a precise one)."""
    sites = [np.asarray(d.indices) for d in deps if d is not None and d.nnz]
    sites = np.unique(np.concatenate(sites)) if sites else np.empty(0, np.int64)
    total = sp.csr_array((np.ones(sites.size, dtype=bool), sites, [0, sites.size]),
                         shape=(1, n))
    return _take(total, np.zeros(rows, dtype=np.int64))


class _Graph:
    """Values (at the initial point) and dependency matrices of one graph."""

    def __init__(self, output: Variable, joined: Variable, x0: np.ndarray,
                 varying: Sequence[Variable], max_pairs: int):
        self.n = x0.size
        self.max_pairs = max_pairs
        self.imprecise: set[str] = set()  # ops given the "depends on everything" rule
        self.nodes = list(toposort([output]))
        self.values = _evaluate(self.nodes, joined, x0)
        self.values[joined] = x0
        self.deps: dict[Variable, sp.csr_array] = {
            joined: sp.csr_array(sp.eye_array(self.n, dtype=bool, format="csr"))
        }
        # variables whose value may change while sampling: the block, the other
        # variables' shared values, and what is computed from them (except shapes)
        self.varying = {joined, *varying}
        for node in self.nodes:
            if isinstance(node.op, Shape | Shape_i):
                continue
            if any(i in self.varying for i in node.inputs):
                self.varying.update(node.outputs)

    def value(self, var: Variable):
        if isinstance(var, Constant):
            return var.data
        if var in self.values:
            return self.values[var]
        if hasattr(var, "get_value"):
            return var.get_value(borrow=True)
        raise Unanalysable(f"no value for {var}")

    def shape(self, var: Variable) -> tuple:
        return tuple(np.shape(self.value(var)))

    def size(self, var: Variable) -> int:
        return int(np.prod(self.shape(var), dtype=np.int64))

    def run(self, output: Variable) -> sp.csr_array:
        # how many more nodes read each variable: a matrix is dropped after its last use
        readers: dict[Variable, int] = {}
        for node in self.nodes:
            for i in node.inputs:
                readers[i] = readers.get(i, 0) + 1
        for node in self.nodes:
            in_deps = [self.deps.get(i) for i in node.inputs]
            for i in node.inputs:
                readers[i] -= 1
                if readers[i] == 0 and i is not output:
                    self.deps.pop(i, None)
            if all(d is None for d in in_deps):
                continue
            outs = _rule(self, node, in_deps)
            for var, dep in zip(node.outputs, outs, strict=True):
                if dep is None:
                    continue
                dep = sp.csr_array(dep)
                if dep.shape != (self.size(var), self.n):
                    raise Unanalysable(f"{node.op}: dependency matrix of shape {dep.shape} "
                                       f"for an output of {self.size(var)} elements")
                if dep.nnz > self.max_pairs:
                    raise Unanalysable(f"{node.op} would list {dep.nnz} possible "
                                       f"dependencies (more than {self.max_pairs})")
                self.deps[var] = dep
        dep = self.deps.get(output)
        if dep is None:
            return _empty(self.size(output), self.n)
        dep.sum_duplicates()
        dep.sort_indices()
        return dep


def _evaluate(nodes: list, joined: Variable, x0: np.ndarray) -> dict:
    """Value of every intermediate variable at ``x0``, with PyTensor's Python
    implementations (no rewrites, no compilation of code)."""
    outputs = list(dict.fromkeys(o for node in nodes for o in node.outputs))
    if not outputs:
        return {}
    fn = pytensor.function([joined], outputs, mode=Mode(linker="py", optimizer=None),
                           on_unused_input="ignore", accept_inplace=True)
    return dict(zip(outputs, fn(x0.astype(joined.type.dtype)), strict=True))


def _rule(g: _Graph, node, in_deps: list) -> list:
    """Dependency matrices of the node's outputs (see the section comment)."""
    op = node.op
    out_sizes = [g.size(o) for o in node.outputs]
    if isinstance(op, Shape | Shape_i):
        return [None] * len(node.outputs)  # shapes do not change with the values
    if isinstance(op, ViewOp | DeepCopyOp):
        return [in_deps[0]]  # the value itself (a pm.Deterministic is a ViewOp)
    if isinstance(op, Elemwise | CheckAndRaise | Alloc | SpecifyShape):
        # elementwise (CheckAndRaise: value + scalar conditions; Alloc and SpecifyShape:
        # value + scalar shapes): an element depends on the elements it broadcasts from
        return [_elementwise(g, node, in_deps, o) for o in node.outputs]
    if isinstance(op, Reshape | TensorFromScalar | ScalarFromTensor):
        if g.size(node.inputs[0]) == out_sizes[0] and all(d is None for d in in_deps[1:]):
            return [in_deps[0]]  # C order is kept: element e copies element e
    if isinstance(op, DimShuffle):
        index = np.arange(g.size(node.inputs[0])).reshape(g.shape(node.inputs[0]))
        storage = [[None]]
        op.perform(node, [index], storage)
        return [_take(in_deps[0], storage[0][0])]
    if isinstance(op, Join):
        return [_join(g, node, in_deps)]
    if isinstance(op, MakeVector):
        stacked = sp.vstack([d if d is not None else _empty(1, g.n) for d in in_deps],
                            format="csr")
        return [stacked]
    if isinstance(op, Split) and all(d is None for d in in_deps[1:]):
        x = node.inputs[0]
        index = np.arange(g.size(x)).reshape(g.shape(x))
        bounds = np.cumsum(np.asarray(g.value(node.inputs[1])))[:-1]
        return [_take(in_deps[0], part) for part in np.split(index, bounds, axis=op.axis)]
    if isinstance(op, Subtensor | AdvancedSubtensor):
        return [_subtensor(g, node, in_deps)]
    if isinstance(op, IncSubtensor | AdvancedIncSubtensor):
        return [_inc_subtensor(g, node, in_deps)]
    if isinstance(op, CAReduce | Argmax):
        x = node.inputs[0]
        axes = range(len(g.shape(x))) if op.axis is None else op.axis
        return [_reduce(in_deps[0], g.shape(x), list(axes))] * len(node.outputs)
    if isinstance(op, Dot) or (isinstance(op, Blockwise) and isinstance(op.core_op, Dot)):
        return [_matmul(g, node, in_deps)]
    if isinstance(op, Blockwise):
        return [_blockwise(g, node, in_deps, k) for k in range(len(node.outputs))]
    if max(out_sizes, default=0) > 1:
        g.imprecise.add(str(op))
    return [_everywhere(in_deps, size, g.n) for size in out_sizes]


def _elementwise(g: _Graph, node, in_deps, out) -> sp.csr_array:
    shape = g.shape(out)
    parts, rest = [], []
    for var, dep in zip(node.inputs, in_deps, strict=True):
        if dep is None:
            continue
        try:
            parts.append(_take(dep, _broadcast_index(g.shape(var), shape)))
        except ValueError:  # not broadcastable as numpy would: depend on all of it
            rest.append(dep)
    size = g.size(out)
    return _union(parts + [_everywhere(rest, size, g.n)] if rest else parts, size, g.n)


def _join(g: _Graph, node, in_deps) -> sp.csr_array:
    axis = node.op.axis
    blocks, deps, offset = [], [], 0
    for var, dep in zip(node.inputs, in_deps, strict=True):
        size = g.size(var)
        blocks.append(offset + np.arange(size, dtype=np.int64).reshape(g.shape(var)))
        deps.append(dep if dep is not None else _empty(size, g.n))
        offset += size
    index = np.concatenate(blocks, axis=axis)
    return _take(sp.vstack(deps, format="csr"), index)


def _index_tuple(g: _Graph, node, first: int) -> tuple:
    return unflatten_index_variables([g.value(v) for v in node.inputs[first:]],
                                     node.op.idx_list)


def _subtensor(g: _Graph, node, in_deps) -> sp.csr_array:
    x, indices = node.inputs[0], node.inputs[1:]
    out = node.outputs[0]
    size = g.size(out)
    if not any(v in g.varying for v in indices):
        # fixed indices: element e copies one element of x
        index = np.arange(g.size(x)).reshape(g.shape(x))[_index_tuple(g, node, 1)]
        return _take(in_deps[0], index)
    # indices that change while sampling: an element depends on the index elements that
    # select it, and on every element of x it may copy
    idx_deps = [(v, d) for v, d in zip(indices, in_deps[1:], strict=True) if d is not None]
    values = [g.value(v) for v in indices]
    pure = (isinstance(node.op, AdvancedSubtensor)
            and all(isinstance(e, int) for e in node.op.idx_list)
            and all(np.asarray(v).dtype.kind in "iu" for v in values))
    if pure and idx_deps:
        # x[i0, i1, ...] with integer arrays only: output shape = broadcast of the index
        # shapes + the trailing axes of x; element (b, r) reads index element b, and x
        # at the fixed indices' values on their axes, anywhere on the varying ones
        bshape = tuple(np.broadcast_shapes(*[np.shape(v) for v in values]))
        trailing = tuple(g.shape(x)[len(values):])
        if g.shape(out) == bshape + trailing:
            repeat = int(np.prod(trailing, dtype=np.int64))
            parts = [_copied_elements(g, x, in_deps[0], indices, values, bshape, trailing)]
            for v, d in idx_deps:
                index = np.repeat(_broadcast_index(np.shape(g.value(v)), bshape).ravel(),
                                  repeat)
                parts.append(_take(d, index))
            return _union(parts, size, g.n)
    parts = [_everywhere([in_deps[0]], size, g.n),
             _everywhere([d for _, d in idx_deps], size, g.n)]
    return _union(parts, size, g.n)


def _copied_elements(g: _Graph, x: Variable, x_dep: sp.csr_array | None, indices: list,
                     values: list, bshape: tuple, trailing: tuple) -> sp.csr_array:
    """Dependencies of ``x[i0, i1, ...]`` (integer arrays, some of them varying) through
    the elements of x it may copy: output element (b, r) may copy x[..., r] at
    ``i_k[b]`` on the axis of every fixed index k and at any position on the axis of a
    varying one."""
    size = int(np.prod(bshape + trailing, dtype=np.int64))
    if x_dep is None:
        return _empty(size, g.n)
    shape = g.shape(x)
    free = [k for k, v in enumerate(indices) if v in g.varying]
    n_free = len(free)
    grid = []
    for k, value in enumerate(values):
        if k in free:  # every position of this axis, on an axis of its own
            axis = [1] * (len(bshape) + n_free)
            axis[len(bshape) + free.index(k)] = shape[k]
            grid.append(np.arange(shape[k]).reshape(axis))
        else:
            grid.append(np.broadcast_to(value, bshape).reshape(bshape + (1,) * n_free))
    reads = np.arange(g.size(x)).reshape(shape)[tuple(grid)]  # bshape + free + trailing
    width = int(np.prod([shape[k] for k in free], dtype=np.int64))
    if size * width > g.max_pairs:
        return _everywhere([x_dep], size, g.n)
    lead = len(bshape)
    order = (list(range(lead)) + list(range(lead + n_free, reads.ndim))
             + list(range(lead, lead + n_free)))
    reads = np.transpose(reads, order).reshape(size, width)
    copies = sp.csr_array(
        (np.ones(reads.size, dtype=bool), (np.repeat(np.arange(size), width), reads.ravel())),
        shape=(size, g.size(x)),
    )
    return sp.csr_array(copies @ x_dep)


def _inc_subtensor(g: _Graph, node, in_deps) -> sp.csr_array:
    """``x[idx] = y`` or ``x[idx] += y``: element e depends on x[e] (kept even where y
    overwrites it: conservative) and on every y element written to it."""
    x, y, indices = node.inputs[0], node.inputs[1], node.inputs[2:]
    size = g.size(x)
    x_dep = in_deps[0] if in_deps[0] is not None else _empty(size, g.n)
    y_dep = in_deps[1]
    if any(v in g.varying for v in indices):
        others = [y_dep] + list(in_deps[2:])
        return _union([x_dep, _everywhere(others, size, g.n)], size, g.n)
    if y_dep is None:
        return x_dep
    target = np.arange(size, dtype=np.int64).reshape(g.shape(x))[_index_tuple(g, node, 2)]
    source = _broadcast_index(g.shape(y), np.shape(target))
    scatter = sp.csr_array(
        (np.ones(np.size(target), dtype=bool), (np.ravel(target), np.ravel(source))),
        shape=(size, g.size(y)),
    )
    return _union([x_dep, sp.csr_array(scatter @ y_dep)], size, g.n)


def _matmul(g: _Graph, node, in_deps) -> sp.csr_array:
    """``out[..., i, j] = sum_k a[..., i, k] b[..., k, j]``: depends on row i of a and
    column j of b (batch axes broadcast)."""
    a, b = node.inputs
    out = node.outputs[0]
    shape = g.shape(out)
    parts = []
    for var, dep, axis, expand in ((a, in_deps[0], -1, -1), (b, in_deps[1], -2, -2)):
        if dep is None:
            continue
        in_shape = g.shape(var)
        reduced = _reduce(dep, in_shape, [len(in_shape) + axis])
        red_shape = list(in_shape)
        del red_shape[axis]
        red_shape.insert(len(red_shape) + expand + 1, 1)  # a: (..., I, 1); b: (..., 1, J)
        parts.append(_take(reduced, _broadcast_index(tuple(red_shape), shape)))
    return _union(parts, g.size(out), g.n)


def _blockwise(g: _Graph, node, in_deps, k: int) -> sp.csr_array:
    """A batched op without its own rule: an output's batch element depends on the
    same batch element of every input, all of its core axes."""
    op = node.op
    out = node.outputs[k]
    shape = g.shape(out)
    n_batch = len(shape) - len(op.outputs_sig[k])
    parts = []
    for var, dep, sig in zip(node.inputs, in_deps, op.inputs_sig, strict=True):
        if dep is None:
            continue
        in_shape = g.shape(var)
        core = list(range(len(in_shape) - len(sig), len(in_shape)))
        reduced = _reduce(dep, in_shape, core)
        batch = in_shape[: len(in_shape) - len(sig)]
        batch = (1,) * (n_batch - len(batch)) + tuple(batch) + (1,) * (len(shape) - n_batch)
        parts.append(_take(reduced, _broadcast_index(batch, shape)))
    return _union(parts, g.size(out), g.n)


def dependency_superset(
    output: Variable,
    joined: Variable,
    x0: np.ndarray,
    varying: Sequence[Variable] = (),
    max_pairs: int = MAX_DEPENDENCY_PAIRS,
    report: dict | None = None,
) -> DependencySuperset:
    """Sites every element of ``output`` may depend on, read off its graph.

    Sound (never misses a dependency of the graph's value on the block, at any state)
    and usually exact on sparse models: elementwise ops, indexing with fixed indices,
    reductions, joins and dot products have precise rules; any other op makes its
    outputs depend on everything its inputs depend on.

    Parameters
    ----------
    output : Variable
        Vector of terms (a graph of ``joined`` and of shared variables).
    joined : Variable
        The block's sites as one vector.
    x0 : ndarray
        A value of ``joined`` (shapes and fixed indices are read at it).
    varying : sequence of Variable
        Shared variables whose values change while sampling (the other variables):
        indexing by them is not treated as fixed.
    max_pairs : int
        Most (element, site) pairs held for one variable.
    report : dict, optional
        Filled with ``imprecise_ops``: the ops given the "depends on everything its
        inputs depend on" rule (the analysis is coarse there, not wrong).

    Returns
    -------
    DependencySuperset

    Raises
    ------
    Unanalysable
        If a variable would hold more than ``max_pairs`` pairs, or the graph cannot be
        evaluated with PyTensor's Python implementations.

    Examples
    --------
    >>> import numpy as np, pytensor.tensor as pt
    >>> x = pt.vector("x", dtype="int64")
    >>> terms = pt.concatenate([x * 0.5, x[1:] * x[:-1]])
    >>> s = dependency_superset(terms, x, np.zeros(3, dtype=np.int64))
    >>> [s.term_sites[s.term_ptr[k]:s.term_ptr[k + 1]].tolist() for k in range(5)]
    [[0], [1], [2], [0, 1], [1, 2]]
    """
    try:
        graph = _Graph(output, joined, np.asarray(x0), varying, max_pairs)
    except Unanalysable:
        raise
    except Exception as err:  # an op without a Python implementation, ...
        raise Unanalysable(f"cannot evaluate the graph: {err!r}") from err
    dep = graph.run(output)
    if report is not None:
        report["imprecise_ops"] = sorted(graph.imprecise)
    return DependencySuperset(dep.indptr.astype(np.int64), dep.indices.astype(np.int64))

