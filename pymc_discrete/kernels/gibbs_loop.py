"""Several blocked Gibbs sweeps inside one compiled loop.

:func:`~pymc_discrete.kernels.gibbs.blocked_gibbs_sweep` calls the model's batched terms
from Python once per colour; here the batched terms are themselves a numba-compiled
function (the NUMBA-mode build of the PyTensor graph), called from inside the loop, so
``n_sweeps`` sweeps over every colour cost one call from Python. The chain is exactly the
one ``blocked_gibbs_sweep`` produces with the same terms and generator: the loop takes the
chain's ``numpy.random.Generator`` itself (numba draws from its bit generator, the same
numbers in the same order), builds the same states, calls the same compiled helpers in
the same order, and sums in the same order (:func:`~pymc_discrete.kernels.gibbs.row_total`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.common import StepsInfo
from pymc_discrete.kernels.exact_loop import terms_at
from pymc_discrete.kernels.exact_tables import (
    colour_conditional_table,
    colour_value_states,
    row_total,
    site_by_site_states,
    site_by_site_table,
    value_row_conditionals,
    value_rows,
)
from pymc_discrete.kernels.first_class import FirstClassTarget
from pymc_discrete.kernels.gibbs import (
    GibbsState,
    corrected_acceptance,
    draw_rows,
    site_transitions,
    update_colour,
)
from pymc_discrete.kernels.jit import njit_cached

__all__ = ["ColourLayout", "first_class_gibbs_loop", "gibbs_sweeps"]


class ColourLayout(NamedTuple):
    """What the compiled sweep needs to know of a block's term structure.

    Attributes
    ----------
    colour_order : ndarray of int64, shape (N,)
        The sites sorted by colour (each colour's sites in increasing order).
    colour_ptr : ndarray of int64, shape (colours + 1,)
        The sites of colour c are ``colour_order[colour_ptr[c]:colour_ptr[c + 1]]``.
    site_ptr, site_terms : ndarray of int64
        CSR lists of the terms of every site.
    n_categories : ndarray of int64, shape (N,)
        Number of values of every site.
    k : int
        Largest number of values.
    offsets : ndarray of int64, shape (N,) or (0,)
        Added to the site indices before the terms are evaluated (empty: none).
    like : ndarray, shape (0,)
        An empty array of the dtype the terms take their states in.
    rows : int
        Largest number of states per call of the terms (memory bound; more are chunked).
    proven : bool
        Whether the colouring is proven (exact Gibbs updates, else corrected ones).
    value_rows_only : bool
        Whether a colour's conditionals are read off its K value states alone
        (:attr:`~pymc_discrete.kernels.exact_tables.TermLayout.value_rows_only`).
    heat_bath_share : float
        Share of heat-bath draws in each site's update.
    """

    colour_order: np.ndarray
    colour_ptr: np.ndarray
    site_ptr: np.ndarray
    site_terms: np.ndarray
    n_categories: np.ndarray
    k: int
    offsets: np.ndarray
    like: np.ndarray
    rows: int
    proven: bool
    value_rows_only: bool
    heat_bath_share: float


@njit_cached
def _colour_conditionals(target, extra, x, sites, layout_arrays, like, k, rows,
                         value_rows_only):
    """``ExactRatios.colour_conditionals`` in compiled code."""
    site_ptr, site_terms, ks, offsets = layout_arrays
    if value_rows_only:
        terms, held = terms_at(target, extra, value_rows(x, sites, ks, k), offsets, like,
                               rows)
        if held:
            logp, table = value_row_conditionals(terms, site_ptr, site_terms, sites, x, ks, k)
            return logp, table, True
    else:
        terms, held = terms_at(target, extra, colour_value_states(x, sites, ks, k), offsets,
                               like, rows)
    if not held:
        states = site_by_site_states(x, sites, ks, k)
        terms, _ = terms_at(target, extra, states, offsets, like, rows)
        logp, table = site_by_site_table(terms, x, sites, ks, k)
        return logp, table, False
    table = colour_conditional_table(terms, site_ptr, site_terms, sites, x, ks, k)
    return row_total(terms, 0), table, True


@njit_cached
def _gather(x, sites):
    """``x[sites]`` as a plain loop, which numba compiles to faster code than its fancy
    indexing."""
    out = np.empty(sites.size, x.dtype)
    for j in range(sites.size):
        out[j] = x[sites[j]]
    return out


@njit_cached
def _scatter(x, sites, values):
    """``x[sites] = values``, as :func:`_gather`."""
    for j in range(sites.size):
        x[sites[j]] = values[j]


@njit_cached
def _gibbs_sweeps(target, extra, x, logp, colour_order, colour_ptr, layout_arrays, like, k,
                  rows, proven, value_rows_only, heat_bath_share, n_sweeps, rng):
    x = x.copy()  # the caller's state is left as it was
    n_colours = colour_ptr.size - 1
    accept_probs = np.empty(n_sweeps)
    accepted = np.empty(n_sweeps, np.bool_)
    proposed = np.zeros(n_sweeps, np.int64)
    for s in range(n_sweeps):
        prob_total = 0.0
        all_accepted = True
        for c in range(n_colours):
            sites = colour_order[colour_ptr[c] : colour_ptr[c + 1]]
            logp_x, table, held = _colour_conditionals(target, extra, x, sites, layout_arrays,
                                                       like, k, rows, value_rows_only)
            current = _gather(x, sites)
            if proven and held:
                drawn, n_changed, delta = update_colour(table, current, rng.random(sites.size),
                                                        heat_bath_share)
                if n_changed:
                    _scatter(x, sites, drawn)
                logp = logp_x + delta
                prob_total += 1.0
                proposed[s] += n_changed
                continue
            forward = site_transitions(table, current, heat_bath_share)
            drawn = draw_rows(forward, rng.random(sites.size), current)
            n_changed = 0
            for j in range(sites.size):
                if drawn[j] != current[j]:
                    n_changed += 1
            u = rng.random()
            if not n_changed:
                prob_total += 1.0
                logp = logp_x
                continue
            y = x.copy()
            _scatter(y, sites, drawn)
            logp_y, table_y, _ = _colour_conditionals(target, extra, y, sites, layout_arrays,
                                                      like, k, rows, value_rows_only)
            prob = corrected_acceptance(logp_x, logp_y, forward, table_y, current, drawn,
                                        heat_bath_share)
            prob_total += prob
            proposed[s] += n_changed
            if u < prob:
                x, logp = y, logp_y
            else:
                all_accepted = False
                logp = logp_x
        accept_probs[s] = prob_total / n_colours
        accepted[s] = all_accepted
    return x, logp, accept_probs, accepted, proposed


#: ``(states, *shared values) -> (terms, checks held)``, numba-compiled
CompiledTerms = Callable[..., tuple]

def first_class_gibbs_loop(target: CompiledTerms, n_sites: int, like: np.ndarray,
                           extra: tuple) -> Callable:
    """The compiled sweep loop, calling ``target`` through a pointer
    (:mod:`~pymc_discrete.kernels.first_class`), so that numba caches it on disk (compiled
    once per machine and set of types, not once per process).

    Parameters
    ----------
    target : numba dispatcher
        ``(states, *extra) -> (terms (rows, M), checks held)``, star-args; the checks
        have a value per row (rows,) or one for all rows ().
    n_sites : int
        Number of sites of a state.
    like : ndarray
        An array of the dtype the terms take their states in; with ``extra``, the
        further arguments, the signature the loop calls the terms with.
    extra : tuple

    Returns
    -------
    callable
        The loop, to pass to :func:`gibbs_sweeps`.
    """
    states = np.zeros((2, n_sites), dtype=like.dtype)
    first_class = FirstClassTarget(target, states, tuple(extra))

    def gibbs_loop(extra, *args):
        return _gibbs_sweeps(first_class, extra, *args)

    return gibbs_loop


def gibbs_sweeps(
    state: GibbsState,
    rng: np.random.Generator,
    n_sweeps: int,
    loop: Callable,
    extra: tuple,
    layout: ColourLayout,
) -> tuple[GibbsState, StepsInfo]:
    """``n_sweeps`` sweeps of blocked Gibbs in one compiled loop.

    The same chain as ``n_sweeps`` calls of
    :func:`~pymc_discrete.kernels.gibbs.blocked_gibbs_sweep` with the conditionals of the
    same terms and the same generator (module docstring).

    Parameters
    ----------
    state : GibbsState
    rng : numpy.random.Generator
        The chain's generator; the loop draws from it (and so advances it) directly.
    n_sweeps : int
    loop : callable
        :func:`first_class_gibbs_loop` of the terms.
    extra : tuple
        Further arguments of the terms (the shared variables' current values).
    layout : ColourLayout

    Returns
    -------
    new_state : GibbsState
    info : StepsInfo
        Per sweep: the mean acceptance probability over the colours, whether every
        colour's draw was accepted, and the number of sites whose drawn value differed
        from their current one.
    """
    x, logp, probs, accepted, proposed = loop(
        tuple(extra), np.ascontiguousarray(state.x, dtype=np.int64), float(state.logp),
        layout.colour_order, layout.colour_ptr,
        (layout.site_ptr, layout.site_terms, layout.n_categories, layout.offsets),
        layout.like, int(layout.k), int(layout.rows), bool(layout.proven),
        bool(layout.value_rows_only), float(layout.heat_bath_share), int(n_sweeps), rng,
    )
    return GibbsState(x, float(logp)), StepsInfo(probs, accepted, proposed)
