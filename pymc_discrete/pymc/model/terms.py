"""The model's log density split into the elementwise terms that depend on a block.

The terms are what exact local ratios and Gibbs conditionals evaluate: each variable's
elementwise log density and every potential split at its sums (:func:`split_into_pieces`),
raveled into one float64 vector. Parameter checks that depend on the block are taken out of
the terms' graph and reported as one boolean (:func:`without_checks`), so that a check's
reduction over a whole array does not read as a dependency of every term on every site.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.rewriting import inline_ofg_node
from pytensor.graph.basic import Variable, clone_get_equiv
from pytensor.graph.traversal import graph_inputs, toposort, variable_depends_on
from pytensor.raise_op import CheckAndRaise
from pytensor.scalar import basic as ps
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot, Sum
from pytensor.tensor.shape import Reshape, SpecifyShape

from pymc_discrete.pymc.model.local_terms import LocalTerms, copy_replacing, local_term_groups
from pymc_discrete.pymc.model.stacking import scalar_stacks, stack_alike, stack_groups

__all__ = ["BlockPieces", "all_of", "block_pieces", "block_terms", "fresh_copy", "model_terms", "piece_sizes",
           "read_block_pieces", "site_reads", "split_into_pieces", "stacked_model_logp",
           "states_as_constants", "without_checks"]


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
    if isinstance(op, Sum | DimShuffle | Reshape | SpecifyShape):
        # the same elements (or their sums), rearranged: the same total
        return split_into_pieces(node.inputs[0], block)
    if isinstance(op, OpFromGraph):  # einsum and other composite ops: their inner graph
        return split_into_pieces(inline_ofg_node(node)[node.outputs.index(term)], block)
    contraction = _contraction_pieces(node, block)
    if contraction is not None:
        return [p for piece in contraction for p in split_into_pieces(piece, block)]
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


def _is_matrix_product(node) -> bool:
    op = node.op
    if isinstance(op, Blockwise):
        op = op.core_op
    return isinstance(op, Dot) and all(i.type.ndim == 2 for i in node.inputs)


def _contraction_pieces(node, block: Sequence[Variable]) -> list[Variable] | None:
    """A matrix product with one factor that does not depend on the block, as elementwise
    pieces of the same total: ``sum(A @ B) = sum(colsum(A)[:, None] * B)`` and
    ``sum(A @ B) = sum(A * rowsum(B)[None, :])``. A linear term written as a dot product
    (``pt.dot(alpha, s)``, ``alpha @ s``, ``tensordot``, ``einsum``) then couples no sites,
    as ``pt.sum(alpha * s)`` does not. None for any other node."""
    if not _is_matrix_product(node):
        return None
    a, b = node.inputs
    a_dependent, b_dependent = variable_depends_on(a, block), variable_depends_on(b, block)
    if b_dependent and not a_dependent:
        return [a.sum(axis=0)[:, None] * b]
    if a_dependent and not b_dependent:
        return [a * b.sum(axis=1)[None, :]]
    return None


class BlockPieces(NamedTuple):
    """The terms of a model's log density that depend on a block, and the rest.

    Attributes
    ----------
    pieces : list of Variable
        Raveled float64 pieces (:func:`split_into_pieces`) of the terms that depend on
        the block, in the order of the model's variables, with the pieces of scalar
        variables that play the same role stacked into one
        (:func:`~pymc_discrete.pymc.model.stacking.stack_alike`).
    rest : Variable
        float64 scalar: the sum of everything else.
    sources : list of tuple of str
        For every piece, the variables (free, observed or Potential) whose terms it
        holds, one per element along its leading axis where it was stacked.
    """

    pieces: list[Variable]
    rest: Variable
    sources: list[tuple[str, ...]]


#: model -> {piece: its raveled float64 graph}: one graph per piece of the model's cached
#: terms, so that what is read off it (its shape's signature, when stacking) is read once
_RAVELED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _raveled(piece: Variable, model) -> Variable:
    """``piece.ravel()`` as float64, the same graph for the same piece of ``model``; a
    scalar as a one-element vector without the shape checks a ravel builds (milliseconds
    each, thousands on a model written one variable per site)."""
    known = _RAVELED.setdefault(model, {})
    raveled = known.get(piece)
    if raveled is None:
        cast = pt.cast(piece, "float64")
        raveled = known[piece] = cast[None] if cast.type.ndim == 0 else cast.ravel()
    return raveled


#: model -> (its named variables, its variables and their elementwise log densities)
_TERMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def model_terms(model) -> tuple[list[Variable], list[Variable]]:
    """The model's free, observed and Potential variables and each one's elementwise log
    density, as ``model.logp(vars=..., sum=False)`` gives them, built once per model and
    one variable at a time (:func:`~pymc_discrete.pymc.model.local_terms.local_model_terms`):
    PyMC's own builds every variable's term in one graph, in time that grows with the
    square of the number of variables on a model written one variable per site (31 s at
    300 variables), and set-up reads the terms several times. The terms are a fresh copy
    for every caller (:func:`fresh_copy`)."""
    rvs, terms = _cached_terms(model)
    return rvs, fresh_copy(terms)


def fresh_copy(outputs: Sequence[Variable]) -> list[Variable]:
    """``outputs`` with every node between them and their inputs copied, as
    ``model.logp`` gives fresh nodes at every call: measured, steps whose compiled
    functions shared the terms' nodes drew other last bits in a process of their own
    (cores=2) than in the process that built them. Built from the cached terms, a graph
    is copied once it is final: on a model written one variable per site the stacked
    graph is a few nodes where the terms are thousands."""
    outputs = list(outputs)
    inputs = list(graph_inputs(outputs))
    copies = clone_get_equiv(inputs, outputs, copy_inputs=False, copy_orphans=False)
    return [copies[output] for output in outputs]


def _cached_terms(model) -> tuple[list[Variable], list[Variable]]:
    """:func:`model_terms` without the copy: for graphs built from the terms and then
    copied with :func:`fresh_copy`."""
    rvs, local = _cached_groups(model)
    return rvs, local.terms


def _cached_groups(model) -> tuple[list[Variable], LocalTerms]:
    """The model's variables and their terms by the groups that share a derivation,
    read once per model."""
    names = tuple(model.named_vars)
    cached = _TERMS.get(model)
    if cached is None or cached[0] != names:
        cached = (names, _build_terms(model))
        _TERMS[model] = cached
    return cached[1]


def _build_terms(model) -> tuple[list[Variable], LocalTerms]:
    rvs = list(model.free_RVs) + list(model.observed_RVs) + list(model.potentials)
    try:
        local = local_term_groups(model, rvs)
    except NotImplementedError:  # variables valued together: PyMC's own
        local = LocalTerms.given(list(model.logp(vars=rvs, sum=False)))
    return rvs, local


#: model -> {(a group of its alike terms, a block): their stacked term}: the groups of the
#: model's whole density and of a block's pieces are the same graphs, stacked once
_GROUPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: model -> {(its named variables, the block's names): BlockPieces before the copy}
_PIECES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def read_block_pieces(model, value_vars: Sequence[Variable]) -> BlockPieces:
    """The pieces of the model's log density that depend on the block, where they come
    from, and the rest (:class:`BlockPieces`). Read once per model and block (a block's
    steps read them several times; stacking a model written one variable per site is
    most of it), a fresh copy for every caller (:func:`fresh_copy`)."""
    key = (tuple(model.named_vars), tuple(v.name for v in value_vars))
    cached = _PIECES.setdefault(model, {})
    if key not in cached:
        cached[key] = _read_block_pieces(model, value_vars)
    read = cached[key]
    *pieces, rest = fresh_copy([*read.pieces, read.rest])
    return BlockPieces(pieces, rest, read.sources)


def _read_block_pieces(model, value_vars: Sequence[Variable]) -> BlockPieces:
    """:func:`read_block_pieces`, read (the graphs not copied)."""
    rvs, local = _cached_groups(model)
    groups = stack_groups(local, value_vars)
    from_groups = {int(members[0]): (term, members) for term, members in groups}
    in_groups = {int(i) for _, members in groups for i in members}
    pieces, origins, names, others = [], [], [], []
    for i, rv in enumerate(rvs):
        if i in from_groups:  # stacked: one piece, its members along the leading axis
            term, members = from_groups[i]
            pieces.append(term)
            origins.append(i)
            names.append(tuple(rvs[m].name for m in members))
            continue
        if i in in_groups:
            continue
        term = local.term(i)
        if not variable_depends_on(term, value_vars):
            others.append(term)
            continue
        for piece in split_into_pieces(term, value_vars):
            if variable_depends_on(piece, value_vars):
                pieces.append(_raveled(piece, model))
                origins.append(i)
                names.append((rv.name,))
            else:
                others.append(piece)
    rest = pt.add(*[pt.cast(p, "float64").sum() for p in others]) if others else pt.constant(0.0)
    # pieces of variables that share no derivation but are alike (Potentials written
    # apart, ...) are stacked from their own graphs
    stacked = stack_alike(pieces, value_vars, _GROUPS.setdefault(model, {}))
    sources = [tuple(name for i in members for name in names[i]) for members in stacked.members]
    return BlockPieces(stacked.terms, rest, sources)


def stacked_model_logp(model, block: Sequence[Variable]) -> Variable | None:
    """The model's whole log density with the alike terms of scalar variables stacked
    (:func:`~pymc_discrete.pymc.model.stacking.stack_groups`,
    :func:`~pymc_discrete.pymc.model.stacking.stack_alike`), or None where nothing
    stacks (a vectorised model: PyMC's own graph is as small).

    Parameters
    ----------
    model : pymc.Model
    block : sequence of Variable
        The discrete value variables whose sites differ between alike terms.

    Returns
    -------
    Variable or None
        float64 scalar, equal to ``model.logp()``.
    """
    _, local = _cached_groups(model)
    groups = stack_groups(local, block)
    in_groups = {int(i) for _, members in groups for i in members}
    rest = [_raveled(local.term(i), model) for i in range(len(local)) if i not in in_groups]
    stacked = stack_alike(rest, block, _GROUPS.setdefault(model, {}))
    if not groups and not stacked.n_stacked:
        return None
    return fresh_copy([pt.add(*[t.sum() for t, _ in groups],
                              *[t.sum() for t in stacked.terms])])[0]


def block_pieces(model, value_vars: Sequence[Variable]) -> tuple[list[Variable], Variable]:
    """The raveled float64 pieces of :func:`block_terms` (the terms that depend on the
    block, in order, alike scalar terms stacked) and the rest of the log density."""
    read = read_block_pieces(model, value_vars)
    return read.pieces, read.rest


def piece_sizes(pieces: Sequence[Variable], model, point: dict) -> np.ndarray:
    """Number of elements of every raveled piece (of :func:`block_pieces`) at ``point``
    (they do not depend on the values)."""
    static = [p.type.shape for p in pieces]
    if all(None not in shape for shape in static):  # no function to compile
        return np.asarray([int(np.prod(shape, dtype=np.int64)) for shape in static],
                          dtype=np.int64)
    inputs = [v for v in model.value_vars if v.name in point]
    sizes = pytensor.function(inputs, pt.stack([p.size for p in pieces]),
                              on_unused_input="ignore", mode="FAST_COMPILE")
    return sizes(*[point[v.name] for v in inputs])


def site_reads(graphs: Sequence[Variable], value_vars: Sequence[Variable],
               point: dict) -> tuple[dict, set]:
    """How ``graphs`` read the block: every stack of its scalar value variables
    (``pt.stack([z_0, z_1, ...])``, what stacking a model written one variable per site
    leaves) -> the positions of its variables among the block's sites, and the value
    variables read otherwise (a vector variable, a scalar read by itself)."""
    site, lo = {}, 0
    for var in value_vars:
        if var.type.ndim == 0:
            site[var] = lo
        lo += int(np.prod(np.shape(point[var.name]), dtype=np.int64))
    stacks = scalar_stacks(graphs, site)
    block = set(value_vars)
    direct = {g for g in graphs if g in block}
    for node in toposort(graphs):
        if node.outputs[0] not in stacks:
            direct.update(i for i in node.inputs if i in block)
    return stacks, direct


def states_as_constants(value_vars: Sequence[Variable], point: dict,
                        states: np.ndarray, graphs: Sequence[Variable] | None = None
                        ) -> dict:
    """Replacements of the block's value variables by constants holding ``states`` (S,
    N) (the block's sites in order, variable after variable) along a new leading axis:
    for ``vectorize_graph``, to evaluate a graph of the block at S states at once.

    Given the ``graphs``, a stack of scalar value variables in them is replaced as a
    whole, by one (S, n) constant (:func:`site_reads`), and only the variables read
    otherwise are replaced one by one: a thousand scalar variables of a model written one
    variable per site are then one constant, not a thousand stacked."""
    stacks, direct = site_reads(graphs, value_vars, point) if graphs is not None \
        else ({}, set(value_vars))
    replace, lo = {}, 0
    for var in value_vars:
        shape = tuple(int(d) for d in np.shape(point[var.name]))
        size = int(np.prod(shape, dtype=np.int64))
        if var in direct:
            replace[var] = pt.constant(states[:, lo:lo + size].reshape(
                (states.shape[0], *shape)).astype(var.type.dtype))
        lo += size
    for stack, positions in stacks.items():
        replace[stack] = pt.constant(states[:, positions].astype(stack.type.dtype))
    return replace


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
        :class:`~pymc_discrete.pymc.model.exact.ExactRatios` numbers its terms in).
    rest : Variable
        float64 scalar: the sum of everything else (terms and pieces that do not depend on
        the block), so that ``terms.sum() + rest`` is the model's log density.
    """
    pieces, rest = block_pieces(model, value_vars)
    return pt.concatenate(pieces), rest


def without_checks(vector: Variable,
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
    # a check passes its value's type through: the graph keeps its types, and a stack
    # of a thousand scalar sites is not read again for them
    unchecked = copy_replacing(vector, replacements, keep_types=True)
    return unchecked, all_of(conditions)


def all_of(conditions: Sequence[Variable]) -> Variable:
    """Boolean scalar: every one of ``conditions`` holds at every element. A chain of
    scalar ``and``s, not a stack of them: it compiles to a few scalar operations."""
    held = None
    for condition in conditions:
        condition = pt.as_tensor(condition)
        if condition.type.dtype != "bool":
            condition = pt.neq(condition, 0)
        reduced = pt.all(condition) if condition.type.ndim else condition
        held = reduced if held is None else pt.and_(held, reduced)
    return pt.constant(True) if held is None else held

