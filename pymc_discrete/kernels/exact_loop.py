"""Exact local log-ratios inside compiled code.

:class:`~pymc_discrete.pymc.model.exact.ExactRatios` evaluates the model's batched terms from
Python; here the terms are the NUMBA-mode build of the same PyTensor graph, and the states,
the terms and the ratios are computed in one compiled function with the signature of a
compiled gradient target, ``(sites as float64, *extra) -> (log density, ratios)``, so the
compiled loops of ALBP and PAS run on exact ratios too. The numbers are those of
``ExactRatios.__call__`` on the same terms, to the bit: the same states, the same compiled
helpers, and the log density summed as numpy sums (pairwise).
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.exact_tables import (
    binary_colour_states,
    categorical_colour_ratios,
    categorical_colour_value_states,
    colour_ratios,
    failed_colours,
    patch_site_ratios,
    row_total,
    site_by_site_states,
    site_by_site_table,
    sites_of_colour,
)
from pymc_discrete.kernels.first_class import call_packed
from pymc_discrete.kernels.jit import njit_cached

__all__ = ["exact_flip_ratios", "exact_ratio_table", "exact_ratios_from_python", "terms_at"]


@njit_cached
def terms_at(target, extra, states, offsets, like, rows):
    """The terms at every row of ``states`` and whether every check held there, with the
    rows where a check failed set to -inf (as ``ExactRatios.batch_terms``); ``target`` is
    the batched terms as a :class:`~pymc_discrete.kernels.first_class.FirstClassTarget`."""
    if offsets.size:
        states = states + offsets
    typed = states.astype(like.dtype)  # a fresh C-contiguous array
    n = typed.shape[0]
    if n <= rows:
        # whole, not sliced: a slice is typed as a non-contiguous array, for which the
        # compiled graph is specialised again, with slower code
        terms, held = call_packed(target, typed, extra)
        terms = np.ascontiguousarray(terms)
        all_held = set_failed_rows(terms, held)
        return terms, all_held
    terms = np.empty((n, 0))
    all_held = True
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        part, held = call_packed(target, np.ascontiguousarray(typed[start:stop]), extra)
        part = np.ascontiguousarray(part)
        all_held = set_failed_rows(part, held) and all_held
        if start == 0:
            terms = np.empty((n, part.shape[1]))
        terms[start:stop] = part
    return terms, all_held


@njit_cached
def set_failed_rows(terms, held):
    """Set the rows where a check failed to -inf; whether every check held. ``held`` has
    a value per row, or one for all rows (no check reads the sites)."""
    flat = held.ravel()
    per_row = flat.size > 1
    all_held = True
    for r in range(terms.shape[0]):
        if not flat[r if per_row else 0]:
            all_held = False
            terms[r, :] = -np.inf
    return all_held


@njit_cached
def exact_flip_ratios(*args):
    """``(sites as float64, terms, shared values, layout) -> (log density, exact flip
    ratios)`` of a binary block, from the batched terms ``terms`` (a
    :class:`~pymc_discrete.kernels.first_class.FirstClassTarget` of ``(states, *shared
    values) -> (terms (rows, M), checks held (rows,) or ())``) with ``layout = (colour,
    n_colours, site_ptr, site_terms, n_categories, k, offsets, like, rows)`` (see
    :meth:`~pymc_discrete.pymc.model.exact.ExactRatios.compiled_target`).

    Every argument is star-args, as in PyTensor's NUMBA-mode functions, so the compiled
    loops call both kinds of target alike; the terms come as a pointer, so numba caches
    this function on disk.
    """
    y, terms, shared, layout = args
    colour, n_colours, site_ptr, site_terms, ks, k, offsets, like, rows = layout
    x = y.astype(np.int64)
    values, held = terms_at(terms, shared,
                                        binary_colour_states(x, colour, n_colours),
                                        offsets, like, rows)
    ratios = colour_ratios(values, site_ptr, site_terms, colour)
    if not held:
        _site_by_site_where_failed(ratios, values, x, terms, shared, layout, 1)
    return row_total(values, 0), ratios


@njit_cached
def _site_by_site_where_failed(ratios, values, x, terms, shared, layout, rows_per_colour):
    """``ExactRatios.__call__``'s repair where a check failed in a colour's states: that
    colour's ratios taken site by site (the same helpers, in the same order)."""
    colour, n_colours, _, _, ks, k, offsets, like, rows = layout
    if np.all(np.isneginf(values[0])):
        return  # x itself is impossible: its ratios play no part
    for c in failed_colours(values, n_colours, rows_per_colour):
        sites = sites_of_colour(colour, c)
        site_values, _ = terms_at(terms, shared,
                                              site_by_site_states(x, sites, ks, k),
                                              offsets, like, rows)
        _, table = site_by_site_table(site_values, x, sites, ks, k)
        patch_site_ratios(ratios, table, x, sites)


@njit_cached
def exact_ratio_table(*args):
    """:func:`exact_flip_ratios` of a categorical block: the (N, K) table of exact ratios
    (NaN at the current values, -inf at values a site does not have)."""
    y, terms, shared, layout = args
    colour, n_colours, site_ptr, site_terms, ks, k, offsets, like, rows = layout
    x = y.astype(np.int64)
    states = categorical_colour_value_states(x, colour, n_colours, ks, k)
    values, held = terms_at(terms, shared, states, offsets, like, rows)
    table = categorical_colour_ratios(values, site_ptr, site_terms, colour, x, ks, k)
    if not held:
        _site_by_site_where_failed(table, values, x, terms, shared, layout, k)
    return row_total(values, 0), table


@njit_cached
def exact_ratios_from_python(y, terms, shared, layout, binary):
    """:func:`exact_flip_ratios` or :func:`exact_ratio_table` called from Python through
    a function of fixed arguments: numba types a call of a star-args function from
    Python far more slowly than one of fixed arguments, slowly enough to outweigh the
    function's own work on a small block."""
    if binary:
        logp, ratios = exact_flip_ratios(y, terms, shared, layout)
        return logp, ratios.reshape((-1, 1))
    return exact_ratio_table(y, terms, shared, layout)
