"""Terms of scalar variables that play the same role, stacked into one vectorised term.

A model written one variable per site, as BUGS and JAGS users write it
(``z_t = pm.Categorical(f"z_{t}", p=P[z_prev])`` in a loop), has one log-density graph per
variable: a block of T sites then has ~2T small terms, each its own graph, and every
graph the package builds from them (the batched terms, their dependencies, their
compilation) grows with T times a large constant. The same model written vectorised has a
handful of terms whatever T.

:func:`stack_alike` turns the first into the second. Two terms play the same role when
their graphs are the same up to their leaves: the same ops, applied in the same pattern,
to leaves of the same types. Such terms form a group; each leaf position of the group is
either the same variable in every member (a continuous parameter, a fixed array), or
differs between members: the block's own value variables (``z_t``, ``z_{t-1}``) or
constants (the observed ``y_t``). The group becomes the first member's graph vectorised
over a new leading axis, with every differing leaf stacked along it: one term whose
element g is member g's term, to the bit (the same ops on the same values).

The stacked value variables read ``pt.stack([z_i, ...])``; once the block is joined into
one vector, :func:`read_from_vector` reads such a stack as one gather of the joined
vector (``x[[i, ...]]``), the form a vectorised phrasing's ``z[1:]`` takes.

Only groups in which a block variable differs between members are stacked: a vectorised
model's terms all read the same block variables, and are left exactly as they are.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import toposort
from pytensor.tensor.basic import MakeVector

from pymc_discrete.pymc.model.batched_gathers import flatten_batched_gathers
from pymc_discrete.pymc.model.graph_shape import graph_shape, same_leaves
from pymc_discrete.pymc.model.local_terms import copy_replacing

__all__ = ["StackedTerms", "join_block_inputs", "read_from_vector", "scalar_stacks",
           "stack_alike", "stack_groups"]

#: a group is stacked from this many members on
MIN_GROUP = 2


class StackedTerms:
    """Terms grouped and stacked, and where each original term went.

    Attributes
    ----------
    terms : list of Variable
        The stacked terms (and the terms that were not stacked), raveled float64, in the
        order of their first member among the original terms.
    members : list of ndarray of int64
        For every term of :attr:`terms`, the original terms it holds, in the order of its
        leading axis (one index for a term left as it was).
    """

    def __init__(self, terms: list[Variable], members: list[np.ndarray]):
        self.terms = terms
        self.members = members

    @property
    def n_stacked(self) -> int:
        """Original terms that went into a stacked term."""
        return int(sum(m.size for m in self.members if m.size > 1))


#: term -> {block: its leaves and signature}: a model's terms are stacked for its whole
#: log density and again for a block's pieces, the same graphs
_SIGNATURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _leaves_and_signature(term: Variable, block: frozenset) -> tuple[list, tuple] | None:
    """The leaves of ``term``'s graph in order of first use, and a hashable signature:
    two terms with equal signatures compute the same function of their leaves.

    A leaf is a block value variable (``site``), a constant (``const``) or anything else
    (kept by identity: the same continuous variable or shared array in every member)."""
    if term.owner is None:
        return None  # a bare leaf: nothing to vectorise
    known = _SIGNATURES.setdefault(term, {})
    if block not in known:
        known[block] = _read_leaves_and_signature(term, block)
    return known[block]


def _read_leaves_and_signature(term: Variable, block: frozenset) -> tuple[list, tuple] | None:
    """:func:`_leaves_and_signature`, read."""

    def token(leaf: Variable, k: int) -> tuple:
        if leaf in block:
            return ("site", k, leaf.type)
        if isinstance(leaf, Constant):
            return ("const", k, leaf.type)
        return ("fixed", leaf)

    return graph_shape(term, lambda v: False, token)


def _stacked_leaf(leaves: list[Variable]) -> Variable | None:
    """The members' leaves at one position along a new leading axis, or None where they
    are one and the same (the template's leaf stays)."""
    if same_leaves(leaves):
        return None
    if isinstance(leaves[0], Constant):
        values = [np.asarray(leaf.data) for leaf in leaves]
        return pt.constant(np.stack(values).astype(values[0].dtype))
    return pt.stack(list(leaves))


def _stacked_group(terms: Sequence[Variable], members: list[int], read: list,
                   block_set: frozenset) -> Variable | None:
    """The members' terms as one raveled float64 term along a new leading axis, or None
    where no block variable differs between them (a vectorised model's terms) or
    PyTensor cannot vectorise the graph."""
    template_leaves = read[members[0]][0]
    replace = {}
    site_differs = False
    for position, leaf in enumerate(template_leaves):
        column = [read[m][0][position] for m in members]
        new = _stacked_leaf(column)
        if new is not None:
            replace[leaf] = new
            site_differs = site_differs or leaf in block_set
    if not site_differs:
        return None
    try:
        # a scalar index vectorised is a Blockwise loop: read as one gather
        [term] = flatten_batched_gathers([vectorize_graph(terms[members[0]],
                                                          replace=replace)])
    except Exception:  # an op PyTensor cannot vectorise: the terms stay apart
        return None
    if term.type.ndim != terms[members[0]].type.ndim + 1:
        return None
    return pt.cast(term, "float64").ravel()


def stack_alike(terms: Sequence[Variable], block: Sequence[Variable],
                groups_read: dict | None = None) -> StackedTerms:
    """Group the terms that play the same role and stack every group into one term.

    Parameters
    ----------
    terms : sequence of Variable
        Raveled float64 terms (any lengths), graphs of the block's value variables.
    block : sequence of Variable
        The block's value variables.
    groups_read : dict, optional
        Groups already stacked, by their members and block (filled here): a model's
        terms are stacked for its whole density and again for a block's pieces, where
        the groups are the same graphs.

    Returns
    -------
    StackedTerms
        The terms, stacked where a group's members read different block variables.
        Concatenated, they hold the original terms' elements, permuted:
        ``concatenate(terms)[j]`` is element ``e`` of original term ``members[..][g]``.
    """
    block_set = frozenset(block)
    groups: dict[tuple, list[int]] = {}
    read: list[tuple[list, tuple] | None] = []
    for i, term in enumerate(terms):
        found = _leaves_and_signature(term, block_set)
        read.append(found)
        if found is not None:
            groups.setdefault(found[1], []).append(i)
    stacked: dict[int, tuple[Variable, np.ndarray]] = {}  # first member -> stacked term
    absorbed: set[int] = set()
    for members in groups.values():
        if len(members) < MIN_GROUP:
            continue
        key = (tuple(terms[m] for m in members), block_set)
        if groups_read is not None and key in groups_read:
            found = groups_read[key]
        else:
            found = _stacked_group(terms, members, read, block_set)
            if groups_read is not None:
                groups_read[key] = found
        if found is not None:
            stacked[members[0]] = (found, np.asarray(members, np.int64))
            absorbed.update(members)
    out_terms, out_members = [], []
    for i, term in enumerate(terms):
        if i in stacked:
            out_terms.append(stacked[i][0])
            out_members.append(stacked[i][1])
        elif i not in absorbed:
            out_terms.append(term)
            out_members.append(np.array([i], np.int64))
    return StackedTerms(out_terms, out_members)


def _group_token(leaf: Variable, block: frozenset) -> tuple:
    """What of a member's input decides whom it stacks with: a block variable or a
    constant by its type (stacked along the new axis), anything else by identity."""
    if leaf in block:
        return ("site", leaf.type)
    if isinstance(leaf, Constant):
        return ("const", leaf.type)
    return ("fixed", leaf)


#: template -> {(batched inputs, number of members): the template vectorised over them
#: with its batched placeholders}: the same for every block and every caller
_VECTORISED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _vectorised_template(template: Variable, inputs: list[Variable],
                         batched: tuple[bool, ...], size: int) -> tuple | None:
    """``template`` vectorised over a new leading axis of ``size`` in the inputs marked
    ``batched``, with its batched gathers flattened: (graph, the placeholders standing
    for the batched inputs), or None where PyTensor cannot vectorise it."""
    known = _VECTORISED.setdefault(template, {})
    key = (batched, size)
    if key not in known:
        placeholders = {inp: pt.TensorType(inp.type.dtype, shape=(size, *inp.type.shape))()
                        for inp, b in zip(inputs, batched, strict=True) if b}
        try:
            [graph] = flatten_batched_gathers([vectorize_graph(template,
                                                               replace=placeholders)])
        except Exception:  # an op PyTensor cannot vectorise: the terms stay apart
            graph = None
        known[key] = None if graph is None or graph.type.ndim != template.type.ndim + 1 \
            else (graph, placeholders)
    return known[key]


def stack_groups(local, block: Sequence[Variable]) -> list[tuple[Variable, np.ndarray]]:
    """Stack the terms of variables that share one derivation, from the derivation.

    The members of a group of
    :class:`~pymc_discrete.pymc.model.local_terms.LocalTerms` compute one template of
    their leaves; where block variables differ between them, the template vectorised
    over the members, their leaves stacked along a new leading axis, is their stacked
    term (what :func:`stack_alike` builds from the members' own graphs, without building
    or reading them). Members are stacked together where their leaves are alike for the
    block: block variables, constants, or the same other variable.

    Parameters
    ----------
    local : LocalTerms
        The model's terms by groups.
    block : sequence of Variable
        The block's value variables.

    Returns
    -------
    list of (Variable, ndarray of int64)
        Every stacked term, raveled float64 (its leading axis the members), and its
        members' positions among the variables, in order of the first member.
    """
    block_set = frozenset(block)
    stacked = []
    for group in local.groups:
        if len(group.members) < MIN_GROUP:
            continue
        alike: dict[tuple, list[int]] = {}
        for j, leaves in enumerate(group.leaves):
            alike.setdefault(tuple(_group_token(leaf, block_set) for leaf in leaves),
                             []).append(j)
        for tokens, rows in alike.items():
            if len(rows) < MIN_GROUP:
                continue
            columns = [[group.leaves[j][k] for j in rows] for k in range(len(group.inputs))]
            batched = tuple(not same_leaves(column) for column in columns)
            if not any(b and token[0] == "site"
                       for b, token in zip(batched, tokens, strict=True)):
                continue  # a vectorised model's terms: left as they are
            found = _vectorised_template(group.template, group.inputs, batched, len(rows))
            if found is None:
                continue
            graph, placeholders = found
            replace = {}
            try:
                for inp, column, b in zip(group.inputs, columns, batched, strict=True):
                    new = _stacked_leaf(column) if b else column[0]
                    old = placeholders.get(inp, inp)
                    replace[old] = old.type.filter_variable(new, allow_convert=True)
            except TypeError:  # a leaf of another type than the template's input
                continue
            term = copy_replacing(graph, replace, keep_types=True)
            stacked.append((pt.cast(term, "float64").ravel(),
                            np.asarray([group.members[j] for j in rows], np.int64)))
    stacked.sort(key=lambda found: found[1][0])
    return stacked


def scalar_stacks(outputs: Sequence[Variable], position: dict) -> dict:
    """Every stack of scalar variables in ``outputs`` (``pt.stack([z_0, z_1, ...])``, what
    stacking a model written one variable per site leaves) whose variables all have a
    ``position`` -> their positions (int64 array)."""
    stacks = {}
    if not position:
        return stacks
    for node in toposort(outputs):
        if isinstance(node.op, MakeVector) and node.inputs and all(
                i in position for i in node.inputs):
            stacks[node.outputs[0]] = np.asarray([position[i] for i in node.inputs],
                                                 np.int64)
    return stacks


def join_block_inputs(point: dict, outputs: Sequence[Variable], inputs: Sequence[Variable],
                      shared: dict | None = None) -> tuple[list[Variable], Variable]:
    """PyMC's ``join_nonshared_inputs``: ``outputs`` as graphs of one vector holding the
    ``inputs`` raveled and joined, with ``shared`` replacing the other inputs.

    The joined vector has the type PyMC's gives it, and a vector or array input reads
    its slice as PyMC's does. A scalar input reads its element as ``joined[i]`` instead of
    PyMC's ``joined[i:i + 1].reshape(())``: the same value, without a reshape node and its
    shape inference per scalar (a second of set-up on a block of 300 scalar variables).

    Parameters
    ----------
    point : dict
        Value of every input, by name (only the shapes are read).
    outputs : sequence of Variable
        Graphs of ``inputs``.
    inputs : sequence of Variable
        The variables joined, in order.
    shared : dict, optional
        Other variable -> what replaces it (a shared variable holding its value).

    Returns
    -------
    outputs : list of Variable
        ``outputs`` reading the joined vector: the nodes that read ``inputs`` copied
        together (PyMC clones each output's whole graph on its own), a stack of scalar
        inputs read as one gather of their positions.
    joined : Variable
        The joined vector, ``"joined_inputs"``.
    """
    if not inputs:
        raise ValueError("Empty list of input variables.")
    sizes = [int(np.prod(np.shape(point[var.name]), dtype=np.int64)) for var in inputs]
    # the type of PyMC's concatenate of the raveled inputs: their upcast dtype, a static
    # length where every input's shape is static
    static = all(None not in var.type.shape for var in inputs)
    dtype = ps.upcast(*[var.type.dtype for var in inputs])
    joined = pt.TensorType(dtype, shape=(sum(sizes) if static else None,))("joined_inputs")
    return read_from_vector(outputs, inputs, point, joined, shared), joined


def read_from_vector(outputs: Sequence[Variable], inputs: Sequence[Variable], point: dict,
                     vector: Variable, shared: dict | None = None) -> list[Variable]:
    """``outputs`` with ``inputs`` read from ``vector``, which holds them raveled and
    joined in order (:func:`join_block_inputs`), and ``shared`` replacing other inputs.

    A stack of scalar inputs (alike terms of a model written one variable per site) is
    read as one gather of ``vector``, not a node per scalar; the nodes that read the
    inputs are copied together, keeping their types (each read has its input's type), so
    that no shape is inferred again from a stack of a thousand scalars."""
    replace = _JoinedReads(vector)
    scalar_at: dict[Variable, int] = {}
    lo = 0
    for var in inputs:
        shape = np.shape(point[var.name])
        size = int(np.prod(shape, dtype=np.int64))
        replace.where[var] = (lo, size, shape)
        if var.type.ndim == 0:
            scalar_at[var] = lo
        lo += size
    replace.update(shared or {})
    replace.update(_stacks_as_gathers(outputs, scalar_at, vector))
    return copy_replacing(list(outputs), replace, keep_types=True)


class _JoinedReads(dict):
    """Input -> its read of the joined vector, built when first asked for: a scalar read
    only through a stack of scalars (:func:`_stacks_as_gathers`) needs none."""

    def __init__(self, joined: Variable) -> None:
        super().__init__()
        self.joined = joined
        #: input -> (start, size, shape) in the joined vector
        self.where: dict[Variable, tuple[int, int, tuple]] = {}

    def __contains__(self, var) -> bool:
        return var in self.where or super().__contains__(var)

    def __iter__(self):
        yield from self.where
        yield from super().__iter__()

    def __len__(self) -> int:
        return len(self.where) + super().__len__()

    def __missing__(self, var: Variable) -> Variable:
        lo, size, shape = self.where[var]
        element = self.joined[lo] if var.type.ndim == 0 else \
            self.joined[lo:lo + size].reshape(shape)
        read = var.type.filter_variable(element.astype(var.type.dtype))
        self[var] = read
        return read


def _stacks_as_gathers(outputs: Sequence[Variable], scalar_at: dict,
                       joined: Variable) -> dict:
    """Every stack of scalar inputs in ``outputs`` (:func:`scalar_stacks`) -> the gather
    of their positions in ``joined``, of the stack's type."""
    gathers = {}
    for out, positions in scalar_stacks(outputs, scalar_at).items():
        gather = joined[positions].astype(out.type.dtype)
        gathers[out] = out.type.filter_variable(gather, allow_convert=True)
    return gathers
