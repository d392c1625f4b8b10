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

from collections.abc import Sequence

import numpy as np
import pytensor.tensor as pt
from pymc.model.core import ValueGradFunction
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.replace import clone_replace, vectorize_graph
from pytensor.graph.traversal import graph_inputs

from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.reproducible import exact_mode
from pymc_discrete.pymc.model.terms import (
    block_pieces,
    piece_sizes,
    states_as_constants,
    without_checks,
)
from pymc_discrete.pymc.summing.collapsible import NotCollapsible, site_of_term

__all__ = ["marginal_log_density", "marginal_logp_dlogp", "site_sums_graph", "summed_out"]

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


def site_sums_graph(model, value_vars: Sequence[Variable], point: dict, exact: ExactRatios,
                    values: np.ndarray) -> tuple[Variable, Variable, Variable]:
    """Every site's terms summed, at K given states of the block, as one graph.

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
    per_site : Variable
        (N, K) sum of site i's terms at state v (check-free).
    loose : Variable
        Scalar: the terms of the block's pieces that no site moves (the same at every
        state).
    held : Variable
        Boolean scalar: whether every parameter check of the pieces holds at every state.
    """
    pieces, _ = block_pieces(model, value_vars)
    k, n = values.shape
    # piece by piece: a piece whose elements follow the sites (one each, or a row or a
    # column each) sums by a reshape, with no scatter to differentiate through
    unchecked, helds = zip(*[without_checks(piece, list(value_vars)) for piece in pieces])
    if k <= SEPARATE_STATES_MAX:
        # one copy of the graph per state: where every site takes the same value v, the
        # block is a constant fill of v, which PyTensor's rewrites push out of the
        # elementwise terms (log(v * p) becomes a scalar log of p), cheaper than one graph
        # over a (K, N) constant
        rows = []
        for v in range(k):
            replace, lo = {}, 0
            for var in value_vars:
                shape = tuple(int(d) for d in np.shape(point[var.name]))
                size = int(np.prod(shape, dtype=np.int64))
                row = values[v, lo:lo + size].astype(var.type.dtype)
                replace[var] = (pt.full(shape, row[0], dtype=var.type.dtype)
                                if size and np.all(row == row[0])
                                else pt.constant(row.reshape(shape)))
                lo += size
            rows.append(clone_replace([*unchecked, *helds], replace))
        batched = [pt.stack([row[i] for row in rows]) for i in range(len(rows[0]))]
    else:
        # many values (a switch point over 111 years, a window of counts): one vectorised
        # graph, K copies would take minutes to compile
        batched = vectorize_graph([*unchecked, *helds],
                                  replace=states_as_constants(value_vars, point, values))
    owner = site_of_term(exact)
    sizes = [int(size) for size in piece_sizes(pieces, model, point)]
    if sum(sizes) != owner.size:
        raise NotCollapsible(f"the block's terms number {sum(sizes)} in the graph and "
                             f"{owner.size} in its structure")
    per_site, loose_total, start = pt.zeros((k, n), dtype="float64"), pt.constant(0.0), 0
    for batch, size in zip(batched[:len(pieces)], sizes):
        own = owner[start:start + size]
        start += size
        per_site = per_site + _sum_by_site(batch, own, n, k)
        loose = np.flatnonzero(own < 0)  # elements no site moves: the same in every row
        if loose.size:
            loose_total = loose_total + batch[0, loose].sum()
    held = pt.all(pt.stack([pt.all(h) for h in batched[len(pieces):]]))
    return per_site.T, loose_total, held


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
    per_site, loose_total, held = site_sums_graph(model, value_vars, point, exact, values)
    return summed_out(rest + loose_total, pt.switch(possible, per_site, -np.inf), held)


def summed_out(rest: Variable, per_site: Variable, held: Variable) -> Variable:
    """``rest + sum_i logsumexp_v per_site[i, v]``, or -inf where a check failed."""
    top = pt.max(per_site, axis=1)
    sums = pt.log(pt.exp(per_site - top[:, None]).sum(axis=1)) + top
    return pt.switch(held, rest + sums.sum(), -np.inf)


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
    return logp_dlogp
