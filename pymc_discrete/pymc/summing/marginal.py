"""The model's log density with a one-colour block summed out, as a PyTensor graph.

``log p(theta) = rest(theta) + sum_i logsumexp_v s_i(theta, v)``, where ``s_i(theta, v)``
sums site i's terms at value v, all from one batched evaluation of the block's terms at
K states (:func:`site_sums_graph`); :func:`marginal_logp_dlogp` compiles it with its
gradient for NUTS. Which blocks qualify, and over which values, is
:mod:`~pymc_discrete.pymc.summing.collapsible`'s job.

Imports: the model reader (:mod:`pymc_discrete.pymc.model`) and
:mod:`~pymc_discrete.pymc.summing.collapsible`.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pymc.model.core import ValueGradFunction
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.graph.traversal import graph_inputs, toposort
from pytensor.tensor.basic import Alloc, get_underlying_scalar_constant_value
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.subtensor import AdvancedSubtensor
from pytensor.tensor.type import discrete_dtypes

from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.local_terms import copy_replacing
from pymc_discrete.pymc.model.reproducible import exact_mode
from pymc_discrete.pymc.model.terms import (
    all_of,
    block_pieces,
    fresh_copy,
    piece_sizes,
    site_reads,
    states_as_constants,
    without_checks,
)
from pymc_discrete.pymc.summing.alike_sites import AlikeSites
from pymc_discrete.pymc.summing.broadcast_states import may_narrow, narrowed, shapes_folded
from pymc_discrete.pymc.summing.collapsible import NotCollapsible, site_of_term
from pymc_discrete.pymc.summing.distinct_terms import (
    PieceAtStates,
    distinct_checks,
    kind_columns,
    kind_sums,
    piece_codes,
    sites_by_codes,
    worth_codes,
)
from pymc_discrete.pymc.summing.kind_scalars import (
    add_columns,
    kind_logaddexp,
    mask_column,
    weighted_total,
)
from pymc_discrete.pymc.summing.lean_checks import lean_check
from pymc_discrete.pymc.summing.linear_sums import linear_site_sums

__all__ = ["LOGADDEXP_MAX", "SiteSums", "logsumexp_rows", "marginal_log_density", "masked_columns",
           "marginal_logp_dlogp",
           "site_sums", "site_sums_graph", "summed_out"]

#: blocks with at most this many values a site have their terms built once per value
#: (cheaper to run); blocks with more, as one vectorised graph (cheaper to compile)
SEPARATE_STATES_MAX = 4


def _sum_by_site(batch: Variable, own: np.ndarray, n: int, k: int) -> Variable:
    """(K, N) sums of a batched piece's elements (K, size) by the site each belongs to
    (``own``; -1: none, left out)."""
    size = own.size
    sites = np.arange(n)
    if size % n == 0 and size:
        c = size // n
        if np.array_equal(own, np.repeat(sites, c)):  # c consecutive elements a site
            return batch.reshape((k, n, c)).sum(axis=2)
        if np.array_equal(own, np.tile(sites, c)):  # every site once in each of c runs
            return batch.reshape((k, c, n)).sum(axis=1)
    owned = np.flatnonzero(own >= 0)
    if not owned.size:
        return pt.zeros((k, n), dtype="float64")
    return pt.inc_subtensor(pt.zeros((n, k), dtype="float64")[own[owned]],
                            batch[:, owned].T).T


def _site_totals(array: np.ndarray, own: np.ndarray, n: int) -> np.ndarray:
    """(K, N) sums of an array's elements (K, size) by the site each belongs to (``own``;
    -1: none, left out), in NumPy."""
    owned = np.flatnonzero(own >= 0)
    totals = np.zeros((n, array.shape[0]))
    np.add.at(totals, own[owned], array[:, owned].T)
    return totals.T


class SiteSums(NamedTuple):
    """Every site's terms summed at K states of the block (:func:`site_sums`).

    ``per_kind`` (U, K): the sums of the first site of every kind of alike sites
    (:mod:`~pymc_discrete.pymc.summing.alike_sites`), at each state; ``alike`` says which
    sites are of which kind (None: every site its own kind, U = N, in order). ``loose``:
    the terms no site moves. ``held``: whether every parameter check held. ``columns``:
    the K columns of ``per_kind`` where they were built state by state (the stacked
    ``per_kind`` is then read only where a table is needed): summing the states out
    over the columns keeps the sums elementwise.
    """

    per_kind: Variable
    alike: AlikeSites | None
    loose: Variable
    held: Variable
    columns: tuple[Variable, ...] | None = None

    def per_site(self) -> Variable:
        """(N, K): every site's sums."""
        return self.per_kind if self.alike is None else self.per_kind[self.alike.kind]

    def kind_mask(self, mask: np.ndarray) -> np.ndarray | None:
        """A per-site (N, K) ``mask`` as one row per kind, or None if two alike sites have
        different rows."""
        if self.alike is None:
            return mask
        by_kind = mask[self.alike.first]
        return by_kind if np.array_equal(by_kind[self.alike.kind], mask) else None


def site_sums_graph(model, value_vars: Sequence[Variable], point: dict, exact: ExactRatios,
                    values: np.ndarray) -> tuple[Variable, Variable, Variable]:
    """``(per_site (N, K), loose, held)`` of :func:`site_sums`."""
    sums = site_sums(model, value_vars, point, exact, values)
    return sums.per_site(), sums.loose, sums.held


#: ExactRatios -> {(model, block, states): SiteSums}: the step that draws a block back and
#: the NUTS on its sum read the same sums
_SUMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def site_sums(model, value_vars: Sequence[Variable], point: dict, exact: ExactRatios,
              values: np.ndarray) -> SiteSums:
    """Every site's terms summed, at K given states of the block, as one graph; alike
    sites' terms are evaluated once. Read once per block and states (reading them is
    most of a block's set-up on a model written one variable per site), every caller
    getting a fresh copy of the graphs (:func:`~pymc_discrete.pymc.model.terms.fresh_copy`).

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The block's value variables (their sites share no term: :func:`collapsible`).
    point : dict
        A point of the model (the block's shapes).
    exact : ExactRatios
        The block's structure.
    values : ndarray of int, shape (K, N)
        The block's values (offsets included) at each of the K states.

    Returns
    -------
    SiteSums
        The sum of site i's terms at state v (check-free), by kind of alike sites; the
        terms no site moves (the same at every state); whether every parameter check of
        the pieces holds at every state.
    """
    values = np.asarray(values)
    key = (id(model), tuple(v.name for v in value_vars), values.shape, values.tobytes())
    cached = _SUMS.setdefault(exact, {})
    if key not in cached:
        cached[key] = _read_site_sums(model, value_vars, point, exact, values)
    sums = cached[key]
    loose, held = pt.as_tensor(sums.loose), pt.as_tensor(sums.held)
    if sums.columns is None:
        per_kind, loose, held = fresh_copy([sums.per_kind, loose, held])
        return SiteSums(per_kind, sums.alike, loose, held)
    loose, held, *columns = fresh_copy([loose, held, *sums.columns])
    return SiteSums(pt.stack(columns, axis=1), sums.alike, loose, held, tuple(columns))


def _read_site_sums(model, value_vars: Sequence[Variable], point: dict, exact: ExactRatios,
                    values: np.ndarray) -> SiteSums:
    """:func:`site_sums`, read."""
    pieces, _ = block_pieces(model, value_vars)
    k, n = values.shape
    # piece by piece: a piece whose elements follow the sites (one each, or a row or a
    # column each) sums by a reshape, with no scatter to differentiate through
    unchecked, helds = zip(*[without_checks(piece, list(value_vars)) for piece in pieces])
    owner = site_of_term(exact)
    sizes = [int(size) for size in piece_sizes(pieces, model, point)]
    if sum(sizes) != owner.size:
        raise NotCollapsible(f"the block's terms number {sum(sizes)} in the graph and "
                             f"{owner.size} in its structure")
    owns = np.split(owner, np.cumsum(sizes)[:-1])
    graphs = [*unchecked, *helds]
    batched = vectorised = None
    if may_narrow(graphs, value_vars):
        replace = states_as_constants(value_vars, point, values, graphs)
        try:
            vectorised = vectorize_graph(graphs, replace=replace)
            batched = narrowed(vectorised, list(replace.values()))
        except (NotImplementedError, TypeError, ValueError):
            # an operation PyTensor cannot vectorise or rebuild on narrow inputs: the
            # narrowing is only a cheaper form of the graphs built below
            batched = None
    by_state = batched is None and k <= SEPARATE_STATES_MAX
    if by_state:
        # one copy of the graph per state: where every site takes the same value v, the
        # block is a constant fill of v, which PyTensor's rewrites push out of the
        # elementwise terms (log(v * p) becomes a scalar log of p), cheaper than one graph
        # over a (K, N) constant
        reads = site_reads(graphs, value_vars, point)
        rows = [_single_value_gathers(copy_replacing(
                    graphs, _state(value_vars, point, values[v], reads), keep_types=True))
                for v in range(k)]
        checks = [row[i] for row in rows for i in range(len(pieces), len(rows[0]))]
        at_states = [PieceAtStates(k, size, rows=[row[p] for row in rows])
                     for p, size in enumerate(sizes)]
    else:
        # the states along a broadcast axis where they only select parameters (a
        # mixture's labels); else (a switch point over 111 years, a window of counts) one
        # vectorised graph over them, where K copies would take minutes to compile
        if batched is None:
            batched = vectorised if vectorised is not None else vectorize_graph(
                graphs, replace=states_as_constants(value_vars, point, values, graphs))
        at_states = [PieceAtStates(k, size, batched=batched[p])
                     for p, size in enumerate(sizes)]
        checks = batched[len(pieces):]
    held = lean_check(distinct_checks(all_of(checks)))
    distinct = _distinct_sums(at_states, owns, n, k, by_state)
    if distinct is not None:
        sums, alike, loose = distinct
        if by_state:
            return SiteSums(pt.stack(sums, axis=1), alike, loose, held, tuple(sums))
        return SiteSums(sums.T, alike, loose, held)
    if by_state:
        columns, loose_total = [pt.zeros((n,), dtype="float64")] * k, pt.constant(0.0)
        for piece, own in zip(at_states, owns):
            sums, outside = _site_columns(piece, own, n)
            columns = [c + s for c, s in zip(columns, sums)]
            loose_total = loose_total + outside
        return SiteSums(pt.stack(columns, axis=1), None, loose_total, held, tuple(columns))
    per_site, loose_total = pt.zeros((k, n), dtype="float64"), pt.constant(0.0)
    for batch, own in zip(batched[:len(pieces)], owns):
        # a site's several terms by their sufficient statistics where the piece is
        # constants times scalar functions of the parameters (an N-mixture's counts)
        linear = (linear_site_sums(batch, (k, own.size), lambda a, own=own: _site_totals(a, own, n))
                  if own.size > n else None)
        per_site = per_site + (_sum_by_site(batch, own, n, k) if linear is None else linear)
        loose = np.flatnonzero(own < 0)  # elements no site moves: the same in every row
        if loose.size:
            loose_total = loose_total + batch[0, loose].sum()
    return SiteSums(per_site.T, None, loose_total, held)


def _site_columns(piece: PieceAtStates, own: np.ndarray, n: int
                  ) -> tuple[list[Variable], Variable]:
    """A piece given state by state, summed by site at each state (by a reshape where
    its elements follow the sites), and its terms no site moves (alike at every state)."""
    columns = [_sum_by_site(row[None, :], own, n, 1)[0] for row in piece.rows]
    loose = np.flatnonzero(own < 0)
    return columns, (piece.rows[0][loose].sum() if loose.size else pt.constant(0.0))


def _state(value_vars: Sequence[Variable], point: dict, row: np.ndarray,
           reads: tuple[dict, set]) -> dict:
    """Replacements of the block's value variables by one state, ``row`` (N,): a constant
    fill where every site of a variable has the same value. A stack of scalar variables
    (:func:`~pymc_discrete.pymc.model.terms.site_reads`) is replaced as a whole, the
    same way; only the variables read otherwise are replaced one by one."""
    stacks, direct = reads
    replace, lo = {}, 0
    for var in value_vars:
        shape = tuple(int(d) for d in np.shape(point[var.name]))
        size = int(np.prod(shape, dtype=np.int64))
        if var in direct:
            replace[var] = _filled(row[lo:lo + size].astype(var.type.dtype), shape)
        lo += size
    for stack, positions in stacks.items():
        part = row[positions].astype(stack.type.dtype)
        replace[stack] = stack.type.filter_variable(_filled(part, part.shape),
                                                    allow_convert=True)
    return replace


def _filled(part: np.ndarray, shape: tuple) -> Variable:
    """``part`` as a graph of ``shape``: a constant fill where its values are one."""
    if part.size and np.all(part == part[0]):
        return pt.full(shape, part[0], dtype=part.dtype)
    return pt.constant(part.reshape(shape))


def _single_value_gathers(graphs: list[Variable]) -> list[Variable]:
    """``graphs`` with every ``x[index, ...]`` whose integer indices each hold one value
    everywhere (a mixture's ``mu[z]``, or a Categorical's ``log_p[..., z]``, with the
    block at a state where every site is v) replaced by ``x[v, ...]`` broadcast: an
    elementwise term then reads a row instead of a gathered copy of it, and its gradient
    sums instead of scattering."""
    replace = {}
    for node in toposort(graphs):
        # integer arrays indexing the leading axes, nothing else: x[i0, i1, ...]
        if not isinstance(node.op, AdvancedSubtensor):
            continue
        x, *indices = node.inputs
        if not indices or tuple(node.op.idx_list) != tuple(range(len(indices))):
            continue
        if any(i.type.dtype not in discrete_dtypes or i.type.dtype == "bool"
               for i in indices):
            continue
        values = [_single_value(i) for i in indices]
        if any(v is None for v in values):
            continue
        values = [int(v) for v in values]
        out = node.outputs[0]
        shape = [out.shape[d] if size is None else size
                 for d, size in enumerate(out.type.shape)]
        lead = out.type.ndim - (x.type.ndim - len(indices))  # the indices' broadcast
        replace[out] = pt.broadcast_to(x[tuple(values)][(None,) * lead], shape)
    return graph_replace(graphs, replace, strict=False) if replace else graphs


def _single_value(index: Variable, depth: int = 8) -> int | float | None:
    """The one value a graph holds at every element, or None: a constant, or a fill of
    one, read through broadcasts, dimension changes and elementwise operations of such
    values (a Categorical's value clipped to ``[0, p.shape[-1] - 1]``), after PyTensor's
    canonical rewrites where the graph reads shapes (on a copy: the index is part of the
    graphs whose gathers are being walked)."""
    value = _one_value(index, depth)
    if value is None:
        value = _one_value(shapes_folded(index), depth)
    return value


def _one_value(var: Variable, depth: int) -> int | float | None:
    try:
        return get_underlying_scalar_constant_value(var).item()
    except NotScalarConstantError:
        pass
    node = var.owner
    if node is None or depth == 0:
        return None
    if isinstance(node.op, DimShuffle | Alloc):
        return _one_value(node.inputs[0], depth - 1)
    if isinstance(node.op, Elemwise) and len(node.outputs) == 1:
        values = [_one_value(i, depth - 1) for i in node.inputs]
        if any(v is None for v in values):
            return None
        return np.asarray(node.op.scalar_op.impl(*values)).astype(var.type.dtype).item()
    return None


def _distinct_sums(at_states: Sequence[PieceAtStates], owns: Sequence[np.ndarray], n: int,
                   k: int, by_state: bool = False
                   ) -> tuple[Variable | list, AlikeSites | None, Variable] | None:
    """(K, U) sums of the first site of every kind (``by_state``: K (U,) columns), the
    kinds (None: every site its own, in order) and the terms no site moves, each piece's
    terms evaluated once per distinct term where that halves them
    (:mod:`~pymc_discrete.pymc.summing.distinct_terms`); None where neither alike sites
    nor repeated terms save anything."""
    codes = [piece_codes(piece) for piece in at_states]
    if any(code is None for code in codes):
        return None
    alike = sites_by_codes(codes, owns, n)
    if 2 * alike.first.size > n:
        # kinds that do not halve the sites (two iris flowers measured alike) would cost
        # a gather back to the sites for nothing: every site its own kind
        alike = AlikeSites(np.arange(n), np.arange(n))
    worth = [worth_codes(code, own, alike, k) for code, own in zip(codes, owns)]
    if alike.first.size == n and not any(worth):
        return None
    kinds = alike if alike.first.size < n else None
    loose = pt.constant(0.0)
    if by_state:
        columns = [None] * k
        for piece, code, own, use in zip(at_states, codes, owns, worth):
            if kinds is None and not use:  # every site its own, every term its own
                sums, outside = _site_columns(piece, own, n)
            else:
                sums, outside = kind_columns(piece, code if use else None, own, alike, k)
            columns = [add_columns(c, s) for c, s in zip(columns, sums)]
            loose = loose + outside
        return columns, kinds, loose
    per_kind = pt.zeros((k, alike.first.size), dtype="float64")
    for piece, code, own, use in zip(at_states, codes, owns, worth):
        sums, outside = kind_sums(piece, code if use else None, own, alike, k)
        per_kind, loose = per_kind + sums, loose + outside
    return per_kind, kinds, loose


def marginal_log_density(model, value_vars: Sequence[Variable], point: dict,
                         exact: ExactRatios, possible: np.ndarray) -> Variable:
    """The model's log density with the block summed out, site by site (module docstring).

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The block's value variables (their sites share no term: :func:`collapsible`).
    point : dict
        A point of the model (the block's shapes).
    exact : ExactRatios
        The block's structure.
    possible : ndarray of bool, shape (N, K)
        :func:`possible_values`.

    Returns
    -------
    Variable
        Scalar graph of the model's other value variables (the block is not an input).
    """
    _, rest = block_pieces(model, value_vars)
    k = exact.layout.max_values
    # state v puts every site at v where v is possible, else at a possible value: its
    # terms are then finite (no NaN gradient) and masked out of the sum below
    fallback = np.argmax(possible, axis=1)
    index = np.where(possible.T, np.arange(k)[:, None], fallback[None, :])  # (K, N)
    values = index + (0 if exact.offsets is None else exact.offsets[None, :])
    sums = site_sums(model, value_vars, point, exact, values)
    by_kind = sums.kind_mask(possible)
    if by_kind is not None and sums.columns is not None:
        return summed_out(rest + sums.loose, masked_columns(sums.columns, by_kind),
                          sums.held, None if sums.alike is None else sums.alike.counts)
    if by_kind is None:  # alike sites that differ in their possible values
        return summed_out(rest + sums.loose, pt.switch(possible, sums.per_site(), -np.inf),
                          sums.held)
    return summed_out(rest + sums.loose, pt.switch(by_kind, sums.per_kind, -np.inf),
                      sums.held, None if sums.alike is None else sums.alike.counts)


def summed_out(rest: Variable, per_site: Variable | Sequence[Variable], held: Variable,
               counts: np.ndarray | None = None) -> Variable:
    """``rest + sum_i counts_i logsumexp_v per_site[i, v]`` (``counts`` default 1), or
    -inf where a check failed; ``per_site`` a table or its columns."""
    total = weighted_total(logsumexp_rows(per_site), counts)
    return pt.switch(held, rest + total, -np.inf)


def masked_columns(columns: Sequence[Variable], mask: np.ndarray,
                   held: Variable | None = None) -> list[Variable]:
    """The columns of a (N, K) table, -inf where ``mask`` (N, K) is False or, given
    ``held``, where a parameter check failed."""
    return [mask_column(column, mask[:, v], held) for v, column in enumerate(columns)]


#: rows of at most this many values are summed by one elementwise ``logaddexp`` of their
#: columns, which fuses with the terms into one loop (a binary block's sum is then the
#: hand-written ``logaddexp(occupied, empty)``); longer rows by a reduction, whose
#: elementwise form would be one scalar expression of every column
LOGADDEXP_MAX = 8


def logsumexp_rows(table: Variable | Sequence[Variable]) -> Variable:
    """(N,) graph: ``log sum_v exp(table[i, v])`` for a (N, K) ``table``, or for its K
    columns (N,) where they were built apart; a row of -inf sums to -inf, not NaN."""
    if isinstance(table, list | tuple):
        by_kind = kind_logaddexp(table) if len(table) <= LOGADDEXP_MAX else None
        if by_kind is not None:
            return by_kind
        if len(table) <= LOGADDEXP_MAX:
            return table[0] if len(table) == 1 else pt.logaddexp(*table)
        table = pt.stack(table, axis=1)
    k = table.type.shape[1]
    if k is not None and k <= LOGADDEXP_MAX:
        return table[:, 0] if k == 1 else pt.logaddexp(*[table[:, v] for v in range(k)])
    # PyTensor's own op, not its formula written out: the gradient through a written-out
    # maximum adds two passes over the table (measured on the N-mixture marginal, 80
    # values at 150 sites: 160 against 117 us a log density and gradient)
    return pt.logsumexp(table, axis=1)


def marginal_logp_dlogp(model, marginal: Variable, continuous: Sequence[Variable],
                        point: dict, compile_kwargs: dict | None = None) -> ValueGradFunction:
    """``marginal`` and its gradient in the continuous variables, compiled for NUTS (the
    other variables it reads become shared inputs, set from the point every step)."""
    inputs = {i for i in graph_inputs([marginal]) if not isinstance(i, Constant)}
    extra = {v: point[v.name] for v in model.value_vars
             if v in inputs and v not in continuous}
    kwargs = {**(compile_kwargs or {})}
    kwargs["mode"] = exact_mode(kwargs.get("mode"))  # the same bits in every cache state
    logp_dlogp = ValueGradFunction([marginal], list(continuous), extra, model=model,
                                   initial_point=point, ravel_inputs=True, **kwargs)
    logp_dlogp.trust_input = True
    # PyMC's integrator calls the compiled function itself, past the wrapper's flag:
    # checking the one float vector of every call costs a third of a small marginal's
    # evaluation. The vector is the function's own type (MarginalNUTS.astep casts it)
    logp_dlogp._pytensor_function.trust_input = True
    return logp_dlogp
