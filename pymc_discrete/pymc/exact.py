"""Exact local log-ratios of a block of binary or categorical sites, for
``proposal="exact"``.

The model's log density is split into elementwise terms (each variable's elementwise logp,
and every potential split at its sums), the terms that depend on the block are compiled as
one function batched over a leading axis of states (``vectorize_graph``), and the sites
are coloured so that sites sharing no term are flipped together
(:mod:`pymc_discrete.kernels.structure`). One batched call per draw then gives the exact
log density and every single-flip log-ratio; its cost is (colours + 1) evaluations of the
terms, linear in N when interactions are sparse.

Set-up finds which terms each site changes. The graph is read first for the sites each
term *may* depend on (:func:`dependency_superset`, sound: it never misses a dependency
of the graph), which lets whole groups of sites be probed at once: (groups + 1) batched
evaluations per probe point instead of N + 1, so set-up is linear in N on sparse models
too. The probes keep only the dependencies that show (as brute-force probing did), and a
few single-site moves check the grouped result; if the graph cannot be analysed, or the
check fails, set-up falls back to probing every site on its own. The sites are then
coloured by the superset itself (exact at every state, even for a dependency that shows at
none of the probe points) unless it needs clearly more colours than the probed
dependencies. Set-up that takes longer
than a few seconds says what it is doing on the ``pymc.pymc_discrete`` logger (a child of
PyMC's logger, so it is shown where and when PyMC's own messages are).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

import numpy as np
import pytensor
import pytensor.tensor as pt
import scipy.sparse as sp
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import join_nonshared_inputs
from pytensor.compile.mode import Mode
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.traversal import toposort, variable_depends_on
from pytensor.raise_op import CheckAndRaise
from pytensor.scalar import basic as ps
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
from pytensor.tensor.math import Argmax, Dot, Sum
from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape
from pytensor.tensor.subtensor import (
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
    unflatten_index_variables,
)

from pymc_discrete.kernels.gibbs import (
    colour_conditional_table,
    colour_value_states,
    failed_colours,
    patch_site_ratios,
    site_by_site_states,
    site_by_site_table,
    sites_of_colour,
)
from pymc_discrete.kernels.gibbs_loop import ColourLayout
from pymc_discrete.kernels.structure import (
    DependencySuperset,
    StructureMismatch,
    TermStructure,
    build_structure_csr,
    categorical_colour_ratios,
    categorical_colour_states,
    colour_ratios,
    colour_states,
    discover_structure_csr,
    transpose_csr,
)
from pymc_discrete.pymc.compiled import CompiledExactRatios, CompiledRatios

__all__ = [
    "ExactRatios",
    "Unanalysable",
    "dependency_superset",
    "probe_points",
    "split_into_pieces",
]

#: Upper bound on the number of float64 values one batched call may produce.
MAX_BATCH_VALUES = 2**22
#: Most (element, site) pairs the graph analysis holds for one variable (~2**24 pairs is
#: ~100 MB); beyond, the terms are dense anyway and set-up probes site by site.
MAX_DEPENDENCY_PAIRS = 2**24
#: Set-up longer than this (seconds) says what it is doing.
PROGRESS_AFTER = 3.0
#: While a stage lasts, repeat its progress at most this often (seconds).
PROGRESS_EVERY = 10.0

#: A child of PyMC's logger: PyMC gives "pymc" a stderr handler at level INFO when the
#: application has not configured logging, so these messages show by default exactly
#: where PyMC's own ("Sequential sampling ...") do, and follow the application's logging
#: configuration otherwise. A top-level "pymc_discrete" logger would need a handler of
#: its own to show INFO by default.
_log = logging.getLogger("pymc.pymc_discrete")


def split_into_pieces(term: Variable, block: Sequence[Variable]) -> list[Variable]:
    """Split a log-density term into pieces whose total equals its total, as finely as the
    graph allows: a sum becomes its summand, a scalar sum of scalars its operands, and a
    scalar product with a factor that does not depend on the block is distributed.

    Parameters
    ----------
    term : Variable
        A log-density term (any shape; its elements are summed).
    block : sequence of Variable
        The block's value variables.

    Returns
    -------
    list of Variable
        Pieces (any shapes) with ``sum(p.sum() for p in pieces) == term.sum()``.
    """
    node = term.owner
    if node is None:
        return [term]
    op = node.op
    if isinstance(op, Sum):
        return split_into_pieces(node.inputs[0], block)
    if isinstance(op, Elemwise) and term.type.ndim == 0:
        scalar_op = op.scalar_op
        inputs = node.inputs
        if isinstance(scalar_op, ps.Add):
            return [p for i in inputs for p in split_into_pieces(i, block)]
        if isinstance(scalar_op, ps.Sub):
            return split_into_pieces(inputs[0], block) + [
                -p for p in split_into_pieces(inputs[1], block)
            ]
        if isinstance(scalar_op, ps.Neg):
            return [-p for p in split_into_pieces(inputs[0], block)]
        if isinstance(scalar_op, ps.Mul):
            dependent = [i for i in inputs if variable_depends_on(i, block)]
            if len(dependent) == 1:
                factor = pt.mul(*[i for i in inputs if i is not dependent[0]])
                return [factor * p for p in split_into_pieces(dependent[0], block)]
    return [term]


def block_pieces(model, value_vars: Sequence[Variable]) -> tuple[list[Variable], Variable]:
    """The raveled float64 pieces of :func:`block_terms` (the terms that depend on the
    block, in order) and the rest of the log density."""
    rvs = list(model.free_RVs) + list(model.observed_RVs) + list(model.potentials)
    pieces, others = [], []
    for term in model.logp(vars=rvs, sum=False):
        if not variable_depends_on(term, value_vars):
            others.append(term)
            continue
        for piece in split_into_pieces(term, value_vars):
            (pieces if variable_depends_on(piece, value_vars) else others).append(piece)
    rest = pt.add(*[pt.cast(p, "float64").sum() for p in others]) if others else pt.constant(0.0)
    return [pt.cast(p, "float64").ravel() for p in pieces], rest


def block_terms(model, value_vars: Sequence[Variable]) -> tuple[Variable, Variable]:
    """The model's log density split into the elementwise terms that depend on a block
    and the rest.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The block's value variables.

    Returns
    -------
    terms : Variable
        float64 vector: every piece (:func:`split_into_pieces`) of every term of
        ``model.logp`` that depends on the block, raveled and concatenated (the order
        :class:`ExactRatios` numbers its terms in).
    rest : Variable
        float64 scalar: the sum of everything else (terms and pieces that do not depend on
        the block), so that ``terms.sum() + rest`` is the model's log density.
    """
    pieces, rest = block_pieces(model, value_vars)
    return pt.concatenate(pieces), rest


# ---------------------------------------------------------------------------------------
# Which sites each term may depend on, read off the graph (a sound over-approximation)
#
# Every variable that depends on the joined block vector gets a boolean sparse matrix
# (its elements x sites): element e may depend on site i. The rules only ever add
# dependencies: an elementwise op's element depends on the elements it is computed from,
# an indexing op's element on the element it copies (with the indices evaluated at the
# initial point, which is valid only when they do not vary while sampling), a reduction's
# element on its whole fibre, a dot product's on a row and a column, and any op without
# a rule on everything its inputs depend on. Being over-inclusive only costs set-up time
# (more groups); missing a dependency would make the exact ratios wrong, so an op is only
# given a precise rule when its elements provably copy or combine the listed elements.


def _without_checks(vector: Variable,
                    joined: Variable | Sequence[Variable]) -> tuple[Variable, Variable]:
    """``vector`` with every parameter check that depends on the block replaced by the
    value it guards, and a boolean scalar: whether all those checks hold.

    A check (``CheckAndRaise``, e.g. PyMC's ``CheckParameterValue``) outputs its value
    unchanged when its conditions hold and -inf (or raises) when one fails; its
    conditions usually reduce over a whole parameter array, so read as dependencies they
    would make every term depend on every site. Wherever the checks hold, the terms of
    ``vector`` equal those of the check-free graph.
    """
    block = list(joined) if isinstance(joined, list | tuple) else [joined]
    nodes = [node for node in toposort([vector]) if isinstance(node.op, CheckAndRaise)
             and variable_depends_on(node.outputs[0], block)]
    if not nodes:
        return vector, pt.constant(True)
    conditions = [pt.all(c) for node in nodes for c in node.inputs[1:]
                  if variable_depends_on(c, block)]
    replacements = {node.outputs[0]: node.inputs[0] for node in nodes}
    unchecked = graph_replace(vector, replacements, strict=False)
    held = pt.all(pt.stack(conditions)) if conditions else pt.constant(True)
    return unchecked, held


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
    # indices that change while sampling: an element may copy any element of x, and
    # depends on the index elements that select it
    parts = [_everywhere([in_deps[0]], size, g.n)]
    idx_deps = [(v, d) for v, d in zip(indices, in_deps[1:], strict=True) if d is not None]
    values = [g.value(v) for v in indices]
    pure = (isinstance(node.op, AdvancedSubtensor)
            and all(isinstance(e, int) for e in node.op.idx_list)
            and all(np.asarray(v).dtype.kind in "iu" for v in values))
    if pure and idx_deps:
        # x[i0, i1, ...] with integer arrays only: output shape = broadcast of the index
        # shapes + the trailing axes of x; element (b, r) reads index element b
        bshape = np.broadcast_shapes(*[np.shape(v) for v in values])
        trailing = g.shape(x)[len(values):]
        if g.shape(out) == tuple(bshape) + tuple(trailing):
            repeat = int(np.prod(trailing, dtype=np.int64))
            for v, d in idx_deps:
                index = np.repeat(_broadcast_index(np.shape(g.value(v)), bshape).ravel(),
                                  repeat)
                parts.append(_take(d, index))
            return _union(parts, size, g.n)
    parts.append(_everywhere([d for _, d in idx_deps], size, g.n))
    return _union(parts, size, g.n)


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


class _SetupProgress:
    """Logs what a set-up is doing, but only once it has taken longer than
    :data:`PROGRESS_AFTER` seconds: a timer thread announces the current stage then,
    and every later stage change (or every :data:`PROGRESS_EVERY` seconds within one
    long stage) is logged as it happens. Quick set-ups log nothing."""

    def __init__(self, what: str, after: float | None = None):
        after = PROGRESS_AFTER if after is None else after
        self._what = what
        self._after = after
        self._start = time.perf_counter()
        self._stage = "starting"
        self._last = -np.inf
        self._shown = False
        self._done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(after, self._late)
        self._timer.daemon = True
        self._timer.start()

    def _emit(self, now: float) -> None:
        _log.info("%s: %s (%.1f s so far)", self._what, self._stage, now - self._start)
        self._shown = True
        self._last = now

    def _late(self) -> None:
        with self._lock:
            if not self._done and not self._shown:
                self._emit(time.perf_counter())

    def __call__(self, stage: str) -> None:
        """Enter ``stage``; "name: detail" stages with the same name are one stage."""
        with self._lock:
            new = stage.split(":")[0] != self._stage.split(":")[0]
            self._stage = stage
            now = time.perf_counter()
            if now - self._start > self._after and (new or now - self._last > PROGRESS_EVERY):
                self._emit(now)

    def close(self) -> float:
        """Stop the timer; returns the elapsed seconds (logged if anything was)."""
        self._timer.cancel()
        with self._lock:
            self._done = True
            elapsed = time.perf_counter() - self._start
            if self._shown:
                _log.info("%s: done in %.1f s", self._what, elapsed)
        return elapsed


def probe_points(x0: np.ndarray, n_categories: np.ndarray | None,
                 rng: np.random.Generator) -> np.ndarray:
    """Where set-up looks for dependencies: ``x0``, the two extreme points (all zeros; all
    ones or every site at its last value) and random points (3 binary, 4 categorical).

    Parameters
    ----------
    x0 : ndarray of int64, shape (N,)
        The initial point.
    n_categories : ndarray of int64, optional
        Number of values of every site; None for binary sites.
    rng : numpy.random.Generator
        Draws the random points.

    Returns
    -------
    ndarray of int64, shape (P, N)

    Examples
    --------
    >>> probe_points(np.zeros(3, np.int64), None, np.random.default_rng(0)).shape
    (6, 3)
    """
    n = x0.size
    if n_categories is None:
        probes = np.vstack([x0, np.zeros(n), np.ones(n), rng.integers(0, 2, (3, n))])
    else:
        ks = np.asarray(n_categories, dtype=np.int64)
        extremes = [np.zeros(n), ks - 1] + [rng.integers(0, ks) for _ in range(4)]
        probes = np.vstack([x0, *extremes])
    return probes.astype(np.int64)


class ExactRatios:
    """``x -> (logp of the block's terms, exact local log-ratios)``.

    For binary sites (``n_categories`` None) the ratios are a vector of single-flip
    log-ratios; for categorical sites an (N, K) table ``d(i, v)`` with NaN at the current
    values and -inf at values a site does not have.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The block's value variables (binary or categorical).
    point : dict
        A point of the model (shapes, and the probe for the structure).
    shared : dict
        Other value variable -> shared variable holding its current value.
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile`.
    seed : int
        Seed of the random probes used to discover the structure.
    n_categories : ndarray of int64, optional
        Number of values of every site; None for a binary block.
    offsets : ndarray of int64, optional
        Smallest value of every site (DiscreteUniform): the ratios and states are in site
        indices, ``value = offset + index``.

    Attributes
    ----------
    n_terms : int
        Number of elementwise terms that depend on the block.
    structure : TermStructure
        Terms of every site and the colouring.
    setup_report : dict
        How set-up went: ``structure`` ("graph": coloured by the graph's dependency
        superset, exact at every state; "probes": by the dependencies seen at the probe
        points, when the superset is unavailable or much coarser), ``method`` ("grouped"
        or "site by site"), ``groups`` (number
        of groups of sites probed together), ``checks`` (single-site moves that checked
        them), ``rows`` (batched term evaluations), ``seconds`` per stage and in total,
        ``fallback`` (why the grouped discovery was not used, or None) and
        ``imprecise_ops`` (ops the graph analysis treats coarsely).
    """

    def __init__(
        self, model, value_vars, point, shared, compile_kwargs=None, seed=0, n_categories=None,
        offsets=None,
    ):
        value_vars = list(value_vars)
        #: names of the block's value variables, in block order
        self.var_names = tuple(v.name for v in value_vars)
        #: smallest value of every site (site index v stands for offset + v), or None
        self.offsets = (
            None if offsets is None or not np.any(offsets) else np.asarray(offsets, np.int64)
        )
        #: other value variable -> the shared variable its current value is read from
        #: (a step built on this object must update these)
        self.shared = shared
        self.n_categories = None if n_categories is None else np.asarray(n_categories, np.int64)
        n_sites = int(sum(np.size(point[v.name]) for v in value_vars))
        names = ", ".join(v.name for v in value_vars)
        progress = _SetupProgress(f"exact local ratios of {names} ({n_sites} sites)")
        seconds: dict[str, float] = {}
        tick = time.perf_counter()
        try:
            progress("splitting the log density into elementwise terms")
            vector, _ = block_terms(model, value_vars)
            [vector], joined = join_nonshared_inputs(point, [vector], value_vars, shared)
            self.n_sites = n_sites
            # Parameter checks (0 <= p <= 1, sigma > 0) reduce over whole arrays: read as
            # dependencies they couple every site with every term. A check only ever
            # passes its value through or makes the log density -inf, so the structure is
            # read off the graph without them, the terms of a state are the check-free
            # ones where its checks hold and -inf where one fails, and a batch reports
            # whether every check held at every state (``checks_held``).
            unchecked, held = _without_checks(vector, joined)
            if not getattr(model, "check_bounds", True):
                held = pt.constant(True)  # the model asked for its checks to be dropped
            batch = pt.matrix("states", dtype=joined.type.dtype, shape=(None, self.n_sites))
            terms_b, held_b = vectorize_graph([unchecked, held], replace={joined: batch})
            # row by row: a check that fails at one state must not touch the others (the
            # checked graph, vectorised, reduces its conditions over the whole batch)
            held_b = pt.broadcast_to(held_b, (batch.shape[0],))
            progress("compiling the batched terms")
            #: the batched graph, compiled again in NUMBA mode by :meth:`compiled_terms`
            self._batch_graph = ([batch], [terms_b, held_b])
            self._compile_kwargs = compile_kwargs
            self._compiled_terms = None
            self._compiled_target = None
            self._fn = pm_compile([batch], [terms_b, held_b], **(compile_kwargs or {}))
            self._fn.trust_input = True
            self.checks_held = True
            self._dtype = joined.type.dtype
            # the values of every site, read at every colour of every sweep
            self._site_values = (np.full(n_sites, 2, dtype=np.int64)
                                 if self.n_categories is None else self.n_categories)
            self._max_values = int(self._site_values.max()) if n_sites else 2
            x0 = np.concatenate([np.ravel(point[v.name]) for v in value_vars]).astype(np.int64)
            if self.offsets is not None:
                x0 = x0 - self.offsets
            self._rows = 1
            self.n_terms = int(self.batch_terms(x0[None, :]).shape[1])
            self._rows = max(1, MAX_BATCH_VALUES // max(1, self.n_terms))
            seconds["compile"] = time.perf_counter() - tick
            self.structure = self._discover(unchecked, joined, x0, shared, seed, progress,
                                            seconds)
        finally:
            seconds["total"] = progress.close()
        self.setup_report["seconds"] = seconds

    def batch_terms(self, states: np.ndarray, checked: bool = True) -> np.ndarray:
        """Terms at every row of ``states`` (site indices; chunked so memory stays bounded):
        all -inf at a state where a parameter check fails, or with ``checked=False`` the
        check-free terms (what the structure is discovered from). Sets
        :attr:`checks_held`: whether every check held at every row."""
        if self.offsets is not None:
            states = states + self.offsets
        states = np.ascontiguousarray(states, dtype=self._dtype)
        if states.shape[0] <= self._rows:
            terms, held = self._fn(states)
        else:
            parts = [self._fn(states[i : i + self._rows])
                     for i in range(0, states.shape[0], self._rows)]
            terms = np.concatenate([part[0] for part in parts])
            held = np.concatenate([part[1] for part in parts])
        self.checks_held = bool(held.all())
        if checked and not self.checks_held:
            terms[~held] = -np.inf  # a fresh output array of the compiled function
        return terms

    def _superset(self, vector, joined, x0, shared, progress, analysis) -> tuple:
        """The graph's dependency superset, or None and why not."""
        progress("reading the possible dependencies off the graph")
        try:
            values = x0 if self.offsets is None else x0 + self.offsets  # the graph's own
            superset = dependency_superset(vector, joined, values, varying=list(shared.values()),
                                           max_pairs=MAX_DEPENDENCY_PAIRS, report=analysis)
        except Unanalysable as err:
            return None, str(err)
        if superset.term_ptr.size - 1 != self.n_terms:
            return None, (f"the graph analysis found {superset.term_ptr.size - 1} terms, the "
                          f"compiled function gives {self.n_terms}")
        return superset, None

    def _discover(self, vector, joined, x0, shared, seed, progress, seconds) -> TermStructure:
        """Probe at x0, all zeros, all ones and random points, with the continuous variables
        moved to random values (a parameter at exactly 0 would hide dependencies).

        Grouped probing (by the graph's dependency superset) when possible, else every
        site on its own; both find the same dependencies at the same probes.
        """
        tick = time.perf_counter()
        analysis: dict = {}
        superset, fallback = self._superset(vector, joined, x0, shared, progress, analysis)
        seconds["analyse"] = time.perf_counter() - tick
        tick = time.perf_counter()
        rows = [0]

        def counted(states: np.ndarray) -> np.ndarray:
            rows[0] += states.shape[0]
            return self.batch_terms(states, checked=False)

        rng = np.random.default_rng(seed)
        saved = {s: s.get_value() for s in shared.values()}
        try:
            for s, value in saved.items():
                if np.issubdtype(np.asarray(value).dtype, np.floating):
                    s.set_value(value + rng.normal(0.0, 1.0, np.shape(value)).astype(value.dtype))
            n = self.n_sites
            ks = self.n_categories
            probes = probe_points(x0, ks, rng)
            report: dict = {}
            result, method = None, "site by site"
            if superset is not None:
                try:
                    result = discover_structure_csr(
                        counted, probes, self._rows, ks, superset=superset, seed=seed,
                        progress=progress, report=report,
                    )
                    method = "grouped"
                except StructureMismatch as err:
                    fallback = str(err)
                    superset = None  # wrong somewhere: neither probe nor colour by it
                    _log.warning(
                        "Exact-ratio set-up: the grouped discovery failed its check (%s); "
                        "probing every site on its own instead (slow for many sites). "
                        "Please report this with the model.", err)
            if result is None:
                if n > 1000:
                    _log.info("Exact-ratio set-up probes each of the %d sites on its own "
                              "(%s)", n, fallback)
                result = discover_structure_csr(counted, probes, self._rows, ks,
                                                progress=progress, report=report)
        finally:
            for s, value in saved.items():
                s.set_value(value)
        seconds["probe"] = time.perf_counter() - tick
        tick = time.perf_counter()
        progress("colouring the sites")
        structure = build_structure_csr(*result, self.n_terms)
        source = "probes"
        if superset is not None:
            # The probes see only the dependencies that show at a few points (x_i x_j x_k
            # shows only where two of them are 1); the superset never misses one, and
            # colouring by it makes the ratios exact at every state. Its price is
            # coarseness where an op has no precise rule: take it unless it needs
            # clearly more colours (each costs one batched evaluation per draw).
            safe = build_structure_csr(
                *transpose_csr(superset.term_ptr, superset.term_sites, n), self.n_terms
            )
            if safe.n_colours <= max(structure.n_colours + 2, 1.25 * structure.n_colours):
                structure, source = safe, "graph"
            else:
                _log.info(
                    "Exact-ratio set-up: the graph's possible dependencies need %d colours, "
                    "the probed ones %d; using the probed ones (a dependency that shows at "
                    "none of the %d probe points would be missed).",
                    safe.n_colours, structure.n_colours, probes.shape[0])
        seconds["colour"] = time.perf_counter() - tick
        self.setup_report = {
            "structure": source,
            "method": method,
            "groups": report.get("groups"),
            "checks": report.get("checks"),
            "rows": rows[0],
            "fallback": fallback,
            "imprecise_ops": analysis.get("imprecise_ops"),
        }
        return structure

    def compiled_terms(self) -> CompiledRatios:
        """The batched terms compiled in PyTensor's NUMBA mode, for compiled loops:
        ``(states, *shared values) -> (terms, checks held)``, the states in the graph's
        own values (offsets added). Compiled at the first call (seconds: numba compiles
        the whole graph), then kept."""
        if self._compiled_terms is None:
            inputs, outputs = self._batch_graph
            fn = pm_compile(inputs, outputs, **{**(self._compile_kwargs or {}), "mode": "NUMBA"})
            fn.trust_input = True
            self._compiled_terms = CompiledRatios(fn)
        return self._compiled_terms

    @property
    def proven(self) -> bool:
        """Whether the colouring comes from the graph's dependency superset: sites of one
        colour then share no term at any state (else only at the probe points)."""
        return self.setup_report["structure"] == "graph"

    def colour_order(self) -> tuple[np.ndarray, np.ndarray]:
        """The sites sorted by colour (stably) and where each colour starts: the sites
        of colour c are ``order[bounds[c]:bounds[c + 1]]``."""
        colour = self.structure.colour
        order = np.argsort(colour, kind="stable").astype(np.int64)
        bounds = np.searchsorted(colour[order], np.arange(self.structure.n_colours + 1))
        return order, bounds.astype(np.int64)

    def compiled_target(self) -> CompiledExactRatios:
        """These ratios as a compiled target for the compiled loops (the batched terms
        compiled in NUMBA mode, :meth:`compiled_terms`): the same numbers as calling this
        object, to the bit, on the same terms."""
        if self._compiled_target is None:
            s = self.structure
            offsets = np.zeros(0, np.int64) if self.offsets is None else self.offsets
            layout = (
                np.asarray(s.colour, np.int64), int(s.n_colours),
                np.asarray(s.site_ptr, np.int64), np.asarray(s.site_terms, np.int64),
                self._site_values, self._max_values, offsets,
                np.zeros(0, dtype=self._dtype), self._rows,
            )
            self._compiled_target = CompiledExactRatios(
                self.compiled_terms(), layout, binary=self.n_categories is None)
        return self._compiled_target

    def sweep_layout(self, heat_bath_share: float) -> ColourLayout:
        """What the compiled Gibbs sweep
        (:func:`~pymc_discrete.kernels.gibbs_loop.gibbs_sweeps`) needs of this structure,
        with sites updated by that share of heat-bath draws."""
        order, bounds = self.colour_order()
        offsets = np.zeros(0, np.int64) if self.offsets is None else self.offsets
        return ColourLayout(
            order, bounds, np.asarray(self.structure.site_ptr, np.int64),
            np.asarray(self.structure.site_terms, np.int64), self._site_values,
            self._max_values, offsets, np.zeros(0, dtype=self._dtype), self._rows,
            self.proven, float(heat_bath_share),
        )

    def colour_sites(self) -> list[np.ndarray]:
        """The sites of every colour, in colour order."""
        order, bounds = self.colour_order()
        return [order[bounds[c] : bounds[c + 1]] for c in range(self.structure.n_colours)]

    def block_logp(self, x: np.ndarray) -> float:
        """Sum of the terms that depend on the block, at ``x``."""
        return float(self.batch_terms(np.asarray(x)[None, :])[0].sum())

    def colour_conditionals(self, x: np.ndarray,
                            sites: np.ndarray) -> tuple[float, np.ndarray, bool]:
        """``(logp at x, (n_c, K) table of d(i, v), checks held)`` for the sites of one
        colour, from one batched evaluation at ``1 + K`` states
        (:func:`~pymc_discrete.kernels.gibbs.colour_conditional_table`); the flag says
        whether every parameter check held at those states (then the table is exact
        under a colouring read off the check-free graph)."""
        ks = self._site_values
        k = self._max_values
        terms = self.batch_terms(colour_value_states(x, sites, ks, k))
        if not self.checks_held:
            # a check failed at a state that moved the whole colour: it may have been
            # caused by another site than the one a ratio is for, so every ratio of the
            # colour is taken one site at a time (exact, whatever the checks couple)
            return self._site_by_site_conditionals(x, sites, ks, k)
        table = colour_conditional_table(
            terms, self.structure.site_ptr, self.structure.site_terms, sites, x, ks, k
        )
        return float(terms[0].sum()), table, True  # = row_total(terms, 0)

    def _site_by_site_conditionals(self, x, sites, ks, k) -> tuple[float, np.ndarray, bool]:
        """The colour's table from one state per site and value (the log density's change
        summed over every term), flagged as not proven: sites whose moves a check couples
        are not independent, so the caller corrects the joint draw."""
        terms = self.batch_terms(site_by_site_states(x, sites, ks, k))
        logp, table = site_by_site_table(terms, x, sites, ks, k)
        return logp, table, False

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        s = self.structure
        ks = self.n_categories
        if ks is None:
            terms = self.batch_terms(colour_states(x, s))
            ratios = colour_ratios(terms, s.site_ptr, s.site_terms, s.colour)
        else:
            terms = self.batch_terms(categorical_colour_states(x, s, ks))
            ratios = categorical_colour_ratios(
                terms, s.site_ptr, s.site_terms, s.colour, x, ks, int(ks.max())
            )
        if not self.checks_held and not np.isneginf(terms[0]).all():
            # a check failed where a whole colour moved, maybe because of another site
            # than the one a ratio is for: that colour's ratios are taken site by site
            # (else a site could be kept from ever moving: a reducible chain)
            x = np.asarray(x, dtype=np.int64)
            for c in failed_colours(terms, s.n_colours, self._rows_per_colour):
                sites = sites_of_colour(s.colour, c)
                site_terms = self.batch_terms(
                    site_by_site_states(x, sites, self._site_values, self._max_values))
                _, table = site_by_site_table(site_terms, x, sites, self._site_values,
                                              self._max_values)
                patch_site_ratios(ratios, table, x, sites)
        return float(terms[0].sum()), ratios

    @property
    def _rows_per_colour(self) -> int:
        """Rows of colour states per colour: 1 (a flip) or K (each value)."""
        return 1 if self.n_categories is None else self._max_values
