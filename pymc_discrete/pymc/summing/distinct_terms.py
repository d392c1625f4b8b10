"""A summed block's terms evaluated once per distinct term, and its sites grouped by kind.

Summing a block out needs every site's terms at every value of the site: K x (size of
the terms) evaluations a gradient. Most of them repeat. An occupancy model's detection
terms are ``Bernoulli(y | z p)``: at every state and visit, one of four values, ``(y, z)``
in {0, 1}^2, the sufficient statistics a hand-written marginal uses. A change point's
Poisson terms at 111 switch years are, year by year, one of ``(count, t >= s)``: a few
dozen values, not 12,321.

:func:`~pymc_discrete.pymc.summing.alike_sites.elements_at` records what each (state,
element) pair reads, folding the constants (the state is one) through the elementwise
operations; pairs with equal records have equal terms at every parameter. Here each piece
of the terms gets a code per pair (:func:`piece_codes`); sites whose codes agree, state by
state as multisets, have equal sums (:func:`sites_by_codes`); and :func:`kind_sums`
evaluates the terms once per distinct code used and adds them up by a gather with
multiplicities: ``sums[v, u] = sum_c count[v, u, c] * term[c]``.

Imports: PyTensor and NumPy, :mod:`~pymc_discrete.pymc.summing.alike_sites` and
:mod:`~pymc_discrete.pymc.summing.kind_scalars`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import toposort
from pytensor.tensor.math import All

from pymc_discrete.pymc.summing.alike_sites import (
    AlikeSites,
    each_element_at,
    elements_at,
    record_codes,
)
from pymc_discrete.pymc.summing.kind_scalars import stacked_scalars

__all__ = ["PieceAtStates", "SCALAR_KINDS_MAX", "SCALAR_TERMS_MAX", "distinct_checks",
           "kind_columns", "kind_sums", "piece_codes", "sites_by_codes", "worth_codes",
           "WALK_MAX"]

#: (state, element) pairs a piece is walked at, at most (the walk is NumPy work per pair)
WALK_MAX = 2_000_000

#: a block of at most this many kinds of alike sites, whose sums read at most
#: SCALAR_TERMS_MAX distinct terms, has its columns built as one scalar graph a kind
SCALAR_KINDS_MAX = 8
SCALAR_TERMS_MAX = 64

#: the sums weigh every distinct term in every row (a dense table of weights) where the
#: table has at most this many times the entries of a gather of each row's own terms,
#: or at most DENSE_MIN entries: an elementwise product fuses with the terms and
#: compiles and differentiates cheaply, where a gather's gradient is a scatter
DENSE_FACTOR = 4
DENSE_MIN = 4096


class PieceAtStates:
    """One piece of the block's terms (a vector of ``size`` elements) at K states: K
    vector graphs (``rows``) or one (K, size) graph (``batched``)."""

    def __init__(self, k: int, size: int, rows: Sequence[Variable] | None = None,
                 batched: Variable | None = None) -> None:
        self.k, self.size, self.rows, self.batched = k, size, rows, batched

    def records(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per group of pairs that share a graph: (pairs (R, 2) as (state, element),
        the codes (R,) of their records)."""
        elements = np.arange(self.size)
        if self.rows is not None:
            groups = []
            for v, row in enumerate(self.rows):
                _, records = elements_at(row, elements)
                pairs = np.stack([np.full(self.size, v), elements], axis=1)
                groups.append((pairs, record_codes(records, self.size)))
            return groups
        pairs = np.stack(np.meshgrid(np.arange(self.k), elements, indexing="ij"),
                         axis=-1).reshape(-1, 2)
        _, records = elements_at(self.batched, pairs)
        return [(pairs, record_codes(records, len(pairs)))]

    def evaluate(self, pairs: np.ndarray) -> Variable:
        """The terms at ``pairs`` (R, 2), in that order: a vector of R values."""
        if self.rows is None:
            return pt.broadcast_to(elements_at(self.batched, pairs)[0], (len(pairs),))
        order = np.argsort(pairs[:, 0], kind="stable")
        parts = []
        for v in np.unique(pairs[:, 0]):
            chosen = order[pairs[order, 0] == v]
            parts.append(pt.broadcast_to(elements_at(self.rows[v], pairs[chosen, 1])[0],
                                         (chosen.size,)))
        joined = parts[0] if len(parts) == 1 else pt.concatenate(parts)
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        return joined if np.array_equal(order, np.arange(order.size)) else joined[back]


def piece_codes(piece: PieceAtStates) -> np.ndarray | None:
    """(K, size) codes of a piece's terms: equal codes, equal terms at every parameter;
    None where the piece has too many pairs to walk."""
    if piece.k * piece.size > WALK_MAX:
        return None
    codes = np.empty((piece.k, piece.size), dtype=np.int64)
    offset = 0
    for pairs, matrix in piece.records():
        # pairs of different graphs never share a code
        codes[pairs[:, 0], pairs[:, 1]] = matrix + offset
        offset += int(matrix.max(initial=-1)) + 1
    return codes


def sites_by_codes(codes: Sequence[np.ndarray], owners: Sequence[np.ndarray],
                   n: int) -> AlikeSites:
    """Group the sites whose terms have, piece by piece and state by state, the same
    codes (as multisets): their sums are equal at every state and parameter."""
    keys: list[list[bytes]] = [[] for _ in range(n)]
    for code, own in zip(codes, owners):
        order = np.argsort(own, kind="stable")
        bounds = np.searchsorted(own[order], np.arange(n + 1))
        for site in range(n):
            block = np.sort(code[:, order[bounds[site]:bounds[site + 1]]], axis=1)
            keys[site].append(block.tobytes() + bytes(str(block.shape), "ascii"))
    first_of: dict[bytes, int] = {}
    first, kind = [], np.empty(n, dtype=np.int64)
    for site in range(n):
        key = b"|".join(keys[site])
        if key not in first_of:
            first_of[key] = len(first)
            first.append(site)
        kind[site] = first_of[key]
    return AlikeSites(np.asarray(first, dtype=np.int64), kind)


def _used_pairs(own: np.ndarray, alike: AlikeSites, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(pairs (P, 2), row (P,)): the (state, element) pairs the sums read, every
    element of a kind's first site at every state (row ``state * U + kind``), and every
    element no site moves at state 0 (row -1)."""
    rank = np.full(alike.kind.size, -1, dtype=np.int64)
    rank[alike.first] = np.arange(alike.first.size)
    kind = np.where(own >= 0, rank[np.maximum(own, 0)], -1)
    chosen = np.flatnonzero(kind >= 0)
    loose = np.flatnonzero(own < 0)
    states = np.repeat(np.arange(k), chosen.size)
    pairs = np.concatenate([np.stack([states, np.tile(chosen, k)], axis=1),
                            np.stack([np.zeros_like(loose), loose], axis=1)])
    rows = np.concatenate([states * alike.first.size + np.tile(kind[chosen], k),
                           np.full(loose.size, -1)])
    return pairs.astype(np.int64), rows


def worth_codes(code: np.ndarray, own: np.ndarray, alike: AlikeSites, k: int) -> bool:
    """Whether summing by distinct terms at least halves the work: each sum (a kind at a
    state) then reads every distinct term once with its multiplicity, and the sums
    read at most half as many terms as pairs. An occupancy model's visits (one of two
    terms a site and state, five visits) and a change point's years qualify; an
    N-mixture model's counts (every visit of a site its own count) do not: there a
    gather would cost as much as the terms, which are cheap where the counts are
    constants."""
    pairs, rows = _used_pairs(own, alike, k)
    used = code[pairs[:, 0], pairs[:, 1]]
    entries = np.unique(np.stack([rows, used], axis=1), axis=0).shape[0]
    return 2 * entries <= len(pairs)


def _by_row(rows: np.ndarray, entries: np.ndarray, n_rows: int, pad) -> np.ndarray:
    """(n_rows, width) array of ``entries`` laid out by their ``rows`` (sorted), each row
    padded with ``pad`` to the longest row's width (at least 1)."""
    slot = np.arange(rows.size) - np.searchsorted(rows, rows)
    width = max(int(slot.max(initial=0)) + 1, 1)
    out = np.full((n_rows, width), pad, dtype=np.asarray(entries).dtype)
    out[rows, slot] = entries
    return out


def _weighed(terms: Variable, term_of: np.ndarray, row_of: np.ndarray, n_rows: int
             ) -> Variable:
    """(n_rows,) sums ``sums[r] = sum of terms[term_of[i]] over the pairs i of row r``,
    each row reading its distinct terms once, with their multiplicities."""
    n_terms = int(term_of.max(initial=-1)) + 1
    key = row_of * (n_terms + 1) + term_of
    unique_keys, multiplicity = np.unique(key, return_counts=True)
    key_row, key_term = np.divmod(unique_keys, n_terms + 1)  # sorted by row
    index = _by_row(key_row, key_term, n_rows, n_terms)
    if n_rows * n_terms <= max(DENSE_FACTOR * index.size, DENSE_MIN):
        # few distinct terms: every row weighs all of them, a weight of 0 selecting 0.0
        # (not 0 * -inf): one elementwise product and sum, whose gradient is one too
        # (an occupancy model's sums are then its hand-written c log p + (J - c) log(1 - p))
        weight = np.zeros((n_rows, n_terms))
        weight[key_row, key_term] = multiplicity
        return pt.switch(weight > 0, weight * terms[None, :], 0.0).sum(axis=1)
    weight = _by_row(key_row, multiplicity.astype("float64"), n_rows, 0.0)
    # padded with an extra 0.0 term, read by the padding (a 0 weight on a -inf term would
    # be NaN); one flat gather, its gradient a one-dimensional scatter, compiled in C
    padded = pt.concatenate([terms, pt.zeros((1,), dtype="float64")])
    return (padded[index.ravel()].reshape(index.shape) * weight).sum(axis=1)


def _terms_once(piece: PieceAtStates, code: np.ndarray | None, pairs: np.ndarray
                ) -> tuple[Variable, np.ndarray]:
    """The piece's terms at ``pairs``, each distinct code evaluated once (all of them
    without ``code``), and the term each pair reads."""
    if code is None:
        return piece.evaluate(pairs), np.arange(len(pairs))
    used = code[pairs[:, 0], pairs[:, 1]]
    _, first_pair, term_of = np.unique(used, return_index=True, return_inverse=True)
    return piece.evaluate(pairs[first_pair]), term_of.ravel()


def kind_sums(piece: PieceAtStates, code: np.ndarray | None, own: np.ndarray,
              alike: AlikeSites, k: int) -> tuple[Variable, Variable]:
    """One piece's (K, U) sums of the first site of every kind at each state, and the
    sum of its terms no site moves.

    With ``code`` (:func:`piece_codes`), the terms are evaluated once per distinct code
    the sums read and weighed with their multiplicities; without it, once per pair.
    """
    u = alike.first.size
    pairs, rows = _used_pairs(own, alike, k)
    terms, term_of = _terms_once(piece, code, pairs)
    n_rows = k * u + 1  # the last collects the terms no site moves
    sums = _weighed(terms, term_of, np.where(rows < 0, n_rows - 1, rows), n_rows)
    return sums[:-1].reshape((k, u)), sums[-1]


def _scalar_sums(row: Variable, pairs: np.ndarray, rows: np.ndarray, code: np.ndarray | None,
                 n_rows: int) -> list[Variable]:
    """``n_rows`` scalar graphs, ``sums[r] = sum of the terms at the pairs of row r``,
    each distinct term (each pair without ``code``) a 0-d graph of ``row`` at one
    element, evaluated once and weighed by its multiplicity."""
    used = code[pairs[:, 0], pairs[:, 1]] if code is not None else np.arange(len(pairs))
    _, first, term_of = np.unique(used, return_index=True, return_inverse=True)
    term_of = term_of.ravel()
    terms = each_element_at(row, pairs[first, 1])
    sums = []
    for r in range(n_rows):
        distinct, multiplicity = np.unique(term_of[rows == r], return_counts=True)
        total = None
        for t, m in zip(distinct.tolist(), multiplicity.tolist()):
            # every term read has a weight of at least 1: a -inf term stays -inf
            part = terms[t] if m == 1 else float(m) * terms[t]
            total = part if total is None else total + part
        sums.append(pt.constant(0.0) if total is None else total)
    return sums


def _scalar_terms(code: np.ndarray | None, pairs: np.ndarray) -> int:
    """How many 0-d graphs :func:`_scalar_sums` builds for ``pairs``."""
    if code is None:
        return len(pairs)
    return np.unique(code[pairs[:, 0], pairs[:, 1]]).size


def kind_columns(piece: PieceAtStates, code: np.ndarray | None, own: np.ndarray,
                 alike: AlikeSites, k: int) -> tuple[list[Variable], Variable]:
    """:func:`kind_sums` state by state: K (U,) sums, each from the terms of its own
    state's graph (a piece given by ``rows``), so that summing the states out is
    elementwise over columns that were never stacked into a table. With at most
    :data:`SCALAR_KINDS_MAX` kinds and :data:`SCALAR_TERMS_MAX` distinct terms, each
    column is a stack of one scalar graph a kind
    (:mod:`~pymc_discrete.pymc.summing.kind_scalars`)."""
    u = alike.first.size
    pairs, rows = _used_pairs(own, alike, k)
    scalar = (piece.rows is not None and u <= SCALAR_KINDS_MAX
              and _scalar_terms(code, pairs) <= SCALAR_TERMS_MAX)
    columns = []
    for v in range(k):
        chosen = (pairs[:, 0] == v) & (rows >= 0)
        if not chosen.any():
            columns.append(stacked_scalars([pt.constant(0.0)] * u) if scalar
                           else pt.zeros((u,), dtype="float64"))
        elif scalar:
            columns.append(stacked_scalars(_scalar_sums(piece.rows[v], pairs[chosen],
                                                        rows[chosen] - v * u, code, u)))
        else:
            terms, term_of = _terms_once(piece, code, pairs[chosen])
            columns.append(_weighed(terms, term_of, rows[chosen] - v * u, u))
    outside = rows < 0
    if not outside.any():
        return columns, pt.constant(0.0)
    zeros = np.zeros(int(outside.sum()), np.int64)
    if scalar:
        return columns, _scalar_sums(piece.rows[0], pairs[outside], zeros, code, 1)[0]
    terms, term_of = _terms_once(piece, code, pairs[outside])
    return columns, _weighed(terms, term_of, zeros, 1)[0]


def distinct_checks(held: Variable) -> Variable:
    """``held`` (a boolean graph) with every ``all`` over a condition of many elements
    reduced over its distinct elements only: the parameter checks of a vectorised block
    (a change point's ``rate >= 0`` at 111 years x 111 states is two distinct
    conditions, ``early >= 0`` and ``late >= 0``)."""
    replace = {}
    for node in toposort([held]):
        if not isinstance(node.op, All):
            continue
        cond = node.inputs[0]
        shape = cond.type.shape
        if any(d is None for d in shape) or not shape:
            continue
        size = int(np.prod(shape, dtype=np.int64))
        if size < 16 or size > WALK_MAX:
            continue
        axes = tuple(range(len(shape))) if node.op.axis is None else tuple(node.op.axis)
        kept = [d for d in range(len(shape)) if d not in axes]
        idx = np.stack(np.unravel_index(np.arange(size), shape), axis=1)
        # the output element each condition element reduces into
        group = (np.ravel_multi_index(tuple(idx[:, kept].T), [shape[d] for d in kept])
                 if kept else np.zeros(size, dtype=np.int64))
        _, records = elements_at(cond, idx)
        matrix = np.stack([group, record_codes(records, size)], axis=1)
        _, reps = np.unique(matrix, axis=0, return_index=True)
        if 2 * reps.size > size:
            continue
        rebuilt = elements_at(cond, idx[reps])[0]
        out = node.outputs[0]
        if not kept:  # a reduction to a scalar
            replace[out] = pt.all(rebuilt)
            continue
        values = pt.broadcast_to(rebuilt, (reps.size,))
        n_out = int(np.prod(out.type.shape, dtype=np.int64))
        rep_group = group[reps]  # sorted by group: np.unique sorts rows
        index = _by_row(rep_group, np.arange(reps.size), n_out, reps.size)
        padded = pt.concatenate([pt.cast(values, "bool"), pt.ones((1,), dtype="bool")])
        reduced = pt.all(padded[index.ravel()].reshape(index.shape), axis=1)
        replace[out] = reduced.reshape(out.type.shape)
    return graph_replace(held, replace, strict=False) if replace else held
