"""A chain-structured block drawn exactly: forward filtering, backward sampling.

A block of categorical sites whose log density (given everything else) is a sum of
terms each touching one site or two neighbours of an order of the sites,

    l(z) = sum_p phi_p(z_p) + sum_p psi_p(z_p, z_{p+1}),

is a hidden Markov chain (a path graph). Its joint conditional can be drawn exactly, and
the block summed out, in O(T K^2) by the forward and backward passes
(:mod:`~pymc_discrete.kernels.forward_backward`). The draw does not depend on the current
state, so the transition is ``T(x, y) = p(y)``: reversible, irreducible on the states of
positive probability and aperiodic.

:func:`chain_order` finds such an order from the structure (which terms each site
touches), :func:`pair_states` lists the few states at which the terms are evaluated to
fill the tables (2 K^2 of them: all value pairs of the even pairs of neighbours at once,
then of the odd ones), :func:`chain_tables` reads the tables off those evaluations, and
:func:`ffbs` draws. Disjoint paths are one order whose unlinked neighbours have a zero
pair table. Values a site does not have get -inf.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from pymc_discrete.kernels.common import StepInfo
from pymc_discrete.kernels.forward_backward import _backward, _marginals, forward_filter

__all__ = [
    "ChainLayout",
    "ChainState",
    "chain_marginals",
    "chain_order",
    "chain_tables",
    "ffbs",
    "init_chain_state",
    "pair_states",
    "table_terms",
    "unary_states",
    "unary_tables",
]


class ChainLayout(NamedTuple):
    """A block's sites in chain order, and where each term goes in the tables.

    Attributes
    ----------
    order : ndarray of int64, shape (T,)
        The sites (block indices) in chain order.
    position : ndarray of int64, shape (T,)
        Position of every site in the order (the inverse of ``order``).
    term_position : ndarray of int64, shape (M,)
        Position p of every term: the term touches position p alone, or p and p + 1.
    term_pair : ndarray of bool, shape (M,)
        Whether the term touches p + 1 too (a pair term) or p alone (a unary term).
    linked : ndarray of bool, shape (T - 1,)
        Whether positions p and p + 1 share a term (else the order joins two paths).
    """

    order: np.ndarray
    position: np.ndarray
    term_position: np.ndarray
    term_pair: np.ndarray
    linked: np.ndarray


def chain_order(site_ptr: np.ndarray, site_terms: np.ndarray,
                n_terms: int) -> ChainLayout | None:
    """The chain order of a block whose terms each touch at most two sites and whose
    sites, linked by the terms they share, form paths; None if they do not (a site with
    three neighbours, a cycle, or a term of three sites).

    Parameters
    ----------
    site_ptr, site_terms : ndarray of int64
        CSR lists: the terms of site i are ``site_terms[site_ptr[i]:site_ptr[i + 1]]``.
    n_terms : int
        Number of terms M.

    Returns
    -------
    ChainLayout or None

    Examples
    --------
    >>> # sites 0-2-1 linked by terms 0 (sites 0, 2) and 1 (sites 2, 1); term 2 on site 1
    >>> layout = chain_order(np.array([0, 1, 3, 5]), np.array([0, 1, 2, 0, 1]), 3)
    >>> layout.order.tolist(), layout.term_position.tolist(), layout.term_pair.tolist()
    ([0, 2, 1], [0, 1, 2], [True, True, False])
    """
    site_ptr = np.asarray(site_ptr, dtype=np.int64)
    site_terms = np.asarray(site_terms, dtype=np.int64)
    n = site_ptr.size - 1
    counts = np.bincount(site_terms, minlength=n_terms)
    if n == 0 or np.any(counts > 2):
        return None
    # the sites of every term, sorted by term (vectorised: a lattice is refused at once)
    entry_site = np.repeat(np.arange(n, dtype=np.int64), np.diff(site_ptr))
    by_term = np.argsort(site_terms, kind="stable")
    term_ptr = np.concatenate([[0], np.cumsum(counts)])
    sorted_sites = entry_site[by_term]
    pairs = np.flatnonzero(counts == 2)
    first, second = sorted_sites[term_ptr[pairs]], sorted_sites[term_ptr[pairs] + 1]
    edges = np.unique(np.stack([np.minimum(first, second), np.maximum(first, second)], 1),
                      axis=0) if pairs.size else np.zeros((0, 2), dtype=np.int64)
    degree = np.bincount(edges.ravel(), minlength=n)
    if np.any(degree > 2):
        return None
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges.tolist():
        neighbours[a].append(b)
        neighbours[b].append(a)
    order, seen = [], np.zeros(n, dtype=bool)
    for start in range(n):  # walk each path from an end (a site with at most one link)
        if seen[start] or len(neighbours[start]) == 2:
            continue
        previous, site = -1, start
        while site >= 0:
            seen[site] = True
            order.append(site)
            following = [s for s in neighbours[site] if s != previous and not seen[s]]
            previous, site = site, (following[0] if following else -1)
    if len(order) != n:  # the sites left over lie on cycles
        return None
    order = np.asarray(order, dtype=np.int64)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    term_position = np.zeros(n_terms, dtype=np.int64)
    touched = counts > 0
    term_position[touched] = position[sorted_sites[term_ptr[:-1][touched]]]
    term_pair = counts == 2
    if pairs.size:
        term_position[pairs] = np.minimum(position[first], position[second])
    linked = np.zeros(max(n - 1, 0), dtype=bool)
    linked[term_position[pairs]] = True
    return ChainLayout(order, position, term_position, term_pair, linked)


def pair_states(x: np.ndarray, layout: ChainLayout, n_values: np.ndarray) -> np.ndarray:
    """The 2 K^2 states at which the terms fill the tables: row ``parity K^2 + a K + b``
    puts value a at every position p of that parity (even, then odd) and b at p + 1
    (a value a site does not have is replaced by 0, and its table entries are set to
    -inf by :func:`chain_tables`); positions in no pair of that parity keep ``x``.

    Parameters
    ----------
    x : ndarray of int64, shape (T,)
        The current sites (block order).
    layout : ChainLayout
    n_values : ndarray of int64, shape (T,)
        Number of values of every site (block order).

    Returns
    -------
    ndarray of int64, shape (2 K^2, T), in block order
    """
    k = int(n_values.max())
    n = x.size
    in_order = np.asarray(x, dtype=np.int64)[layout.order]
    values = n_values[layout.order]
    a, b = np.divmod(np.arange(k * k), k)
    rows = np.empty((2 * k * k, n), dtype=np.int64)
    for parity in (0, 1):
        block = np.tile(in_order, (k * k, 1))
        first = np.arange(parity, n - 1, 2)
        block[:, first] = a[:, None]
        block[:, first + 1] = b[:, None]
        if n == 1:  # no pair: the one site takes every value
            block[:, 0] = a
        block = np.where(block < values[None, :], block, 0)
        rows[parity * k * k:(parity + 1) * k * k][:, layout.order] = block
    return rows


def chain_tables(terms: np.ndarray, layout: ChainLayout,
                 n_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unary and pair tables from the terms at :func:`pair_states`.

    Parameters
    ----------
    terms : ndarray of float64, shape (2 K^2, M)
        The block's terms at every row of :func:`pair_states`.
    layout : ChainLayout
    n_values : ndarray of int64, shape (T,)
        Number of values of every site (block order).

    Returns
    -------
    unary : ndarray, shape (T, K)
        ``phi_p(a)``: the unary terms of position p at value a.
    pair : ndarray, shape (T - 1, K, K)
        ``psi_p(a, b)``: the pair terms of positions p, p + 1 (zero where unlinked).
    """
    k2 = terms.shape[0] // 2
    k = int(round(np.sqrt(k2)))
    n = layout.order.size
    unary = np.zeros((n, k))
    pair = np.zeros((max(n - 1, 0), k, k))
    b_is_0 = np.arange(k2) % k == 0
    a_is_0 = np.arange(k2) < k
    for parity, (pairs, firsts, lasts) in enumerate(_scatter(layout)[:2]):
        rows = terms[parity * k2:(parity + 1) * k2]
        if pairs is not None:  # a pair term's K^2 rows are its table
            pair += (pairs @ rows.T).reshape(-1, k, k)
        # a unary term is read where its position is the first of a pair of this parity
        # (rows with b = 0 list a), or the last position the second (rows with a = 0)
        if firsts is not None:
            unary += firsts @ rows[b_is_0].T
        if lasts is not None:
            unary += lasts @ rows[a_is_0].T
    values = n_values[layout.order]
    missing = np.arange(k)[None, :] >= values[:, None]
    unary[missing] = -np.inf
    return unary, pair


def unary_states(x: np.ndarray, n_values: np.ndarray) -> np.ndarray:
    """The K states at which the unary terms alone fill their table: row a puts value a
    at every site (0 at a site without value a; its entries are set to -inf by
    :func:`unary_tables`). The pair terms' values at these states mean nothing.

    Parameters
    ----------
    x : ndarray of int64, shape (T,)
        The current sites (only their number is used).
    n_values : ndarray of int64, shape (T,)

    Returns
    -------
    ndarray of int64, shape (K, T), in block order
    """
    k = int(n_values.max())
    rows = np.repeat(np.arange(k, dtype=np.int64)[:, None], np.size(x), axis=1)
    return np.where(rows < n_values[None, :], rows, 0)


def unary_tables(terms: np.ndarray, layout: ChainLayout, n_values: np.ndarray) -> np.ndarray:
    """The unary table ``phi_p(a)`` (T, K) from the terms at :func:`unary_states`."""
    scatter = _scatter(layout)[2]
    k = terms.shape[0]
    n = layout.order.size
    unary = np.zeros((n, k)) if scatter is None else np.asarray(scatter @ terms.T)
    values = n_values[layout.order]
    unary[np.arange(k)[None, :] >= values[:, None]] = -np.inf
    return unary


def table_terms(layout: ChainLayout) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per parity of the :func:`pair_states` rows (even, then odd): the terms read there
    into the pair table, into the unary table as a pair's first position (rows with
    b = 0), and as the chain's last position (rows with a = 0); index arrays into the
    terms, each going to its ``layout.term_position``."""
    n = layout.order.size
    position, is_pair = layout.term_position, layout.term_pair
    out = []
    for parity in (0, 1):
        mine = position % 2 == parity
        first = ~is_pair & mine & ((position < n - 1) | (n == 1))
        last = ~is_pair & (position == n - 1) & (n > 1) & ((position - 1) % 2 == parity)
        out.append((np.flatnonzero(is_pair & mine), np.flatnonzero(first),
                    np.flatnonzero(last)))
    return out


def _scatter(layout: ChainLayout) -> list:
    """Per parity, sparse (positions x terms) matrices that add the terms of
    :func:`table_terms` into the pair table, into the unary table as a pair's first
    position, and as the last position (None where no term goes), then the matrix of
    every unary term: built once per layout."""
    cached = _SCATTERS.get(id(layout))
    if cached is not None and cached[0] is layout:
        return cached[1]
    n = layout.order.size
    m = layout.term_position.size
    position = layout.term_position

    def matrix(terms: np.ndarray, rows: int):
        if not terms.size:
            return None
        return sp.csr_array((np.ones(terms.size), (position[terms], terms)), shape=(rows, m))

    out = [(matrix(pairs, max(n - 1, 1)), matrix(firsts, n), matrix(lasts, n))
           for pairs, firsts, lasts in table_terms(layout)]
    out.append(matrix(np.flatnonzero(~layout.term_pair), n))  # for unary_tables
    if len(_SCATTERS) >= 64:  # the layouts of steps long gone
        _SCATTERS.clear()
    _SCATTERS[id(layout)] = (layout, out)
    return out


#: layout id -> (layout, its scatter matrices): a step reads its tables every draw
_SCATTERS: dict[int, tuple] = {}


def chain_marginals(unary: np.ndarray, pair: np.ndarray,
                    ) -> tuple[float, np.ndarray, np.ndarray]:
    """The block summed out and its derivatives: forward and backward passes.

    The derivative of ``log Z = logsumexp_z l(z)`` with respect to ``phi_p(a)`` is the
    probability that site p takes value a, and with respect to ``psi_p(a, b)`` the
    probability of the pair (a, b) at positions (p, p + 1), both under
    ``exp(l(z)) / Z``.

    Parameters
    ----------
    unary : ndarray, shape (T, K)
    pair : ndarray, shape (T - 1, K, K)

    Returns
    -------
    log_normaliser : float
        ``log Z`` (-inf where no state has positive probability; the marginals are
        then zero).
    gamma : ndarray, shape (T, K)
        ``P(z_p = a)``.
    xi : ndarray, shape (T - 1, K, K)
        ``P(z_p = a, z_{p+1} = b)``.

    Examples
    --------
    >>> unary = np.log([[0.5, 0.5], [0.2, 0.8]])
    >>> pair = np.log([[[0.9, 0.1], [0.1, 0.9]]])
    >>> log_z, gamma, xi = chain_marginals(unary, pair)
    >>> np.round(gamma[1], 3)  # (0.5 x 0.9 x 0.2 + 0.5 x 0.1 x 0.2) / 0.5 = 0.2
    array([0.2, 0.8])
    """
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    n, k = unary.shape
    pair = np.ascontiguousarray(pair, dtype=np.float64).reshape(max(n - 1, 0), k, k)
    log_z, gamma, xi = _marginals(unary, pair)
    return float(log_z), gamma, xi


def ffbs(unary: np.ndarray, pair: np.ndarray,
         rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """An exact draw of the chain from ``exp(l(z)) / sum exp(l)``, in chain order, and
    the log normaliser.

    Parameters
    ----------
    unary : ndarray, shape (T, K)
    pair : ndarray, shape (T - 1, K, K)
    rng : numpy.random.Generator
        T uniforms are drawn from it.

    Returns
    -------
    z : ndarray of int64, shape (T,)
    log_normaliser : float

    Raises
    ------
    ValueError
        If no state has a finite log density, or the normaliser is +inf or NaN.
    """
    alpha, log_normaliser = forward_filter(unary, pair)
    if not np.isfinite(log_normaliser):
        raise ValueError(f"the chain's conditional sums to exp({log_normaliser}): no state "
                         "of positive probability, or an improper one")
    uniforms = rng.random(unary.shape[0])
    return _backward(alpha, np.ascontiguousarray(pair, dtype=np.float64), uniforms), \
        log_normaliser


class ChainState(NamedTuple):
    """The block's sites and their log density (the terms' sum).

    Attributes
    ----------
    x : ndarray of int64, shape (T,)
        Block order.
    logp : float
    """

    x: np.ndarray
    logp: float


def chain_logp(z: np.ndarray, unary: np.ndarray, pair: np.ndarray) -> float:
    """``l(z)`` for ``z`` in chain order."""
    n = z.size
    total = float(unary[np.arange(n), z].sum())
    if n > 1:
        total += float(pair[np.arange(n - 1), z[:-1], z[1:]].sum())
    return total


def init_chain_state(x: np.ndarray, logp: float) -> ChainState:
    """The state at ``x`` (block order) with its log density."""
    return ChainState(np.asarray(x, dtype=np.int64), float(logp))


def chain_gibbs_step(state: ChainState, rng: np.random.Generator, unary: np.ndarray,
                     pair: np.ndarray, layout: ChainLayout) -> tuple[ChainState, StepInfo]:
    """Draw the block anew from its conditional (the tables at the other variables'
    current values), whatever the current state.

    Returns
    -------
    new_state : ChainState
    info : StepInfo
        An exact draw: ``accept_prob`` 1, ``accepted`` True; ``n_proposed`` the number
        of sites whose value changed.
    """
    z, _ = ffbs(unary, pair, rng)
    x = np.empty_like(z)
    x[layout.order] = z
    n_changed = int(np.count_nonzero(x != state.x))
    return ChainState(x, chain_logp(z, unary, pair)), StepInfo(1.0, True, n_changed)
