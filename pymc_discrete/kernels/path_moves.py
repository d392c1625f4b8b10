"""The single-site moves a path of PAS or PAFS is made of, and their probabilities.

A site's moves are weighted by the locally balanced function of their log-ratios, read
from a potential table anchored at a point (:mod:`pymc_discrete.kernels.ratios`); the site
weights live in the leaves of a sum tree, so drawing a move and updating a site cost
O(K + log N). :func:`linearised_forward` and :func:`linearised_reverse` draw and score a
whole linearised path (PAFS). Binary sites take a fast path with the same proposal and the
same numbers (:func:`binary_forward`, :func:`binary_reverse`): a site's only move is a
flip, so a move costs one draw from the tree, one ``exp`` and one ``log``, and the reverse
walk keeps a compensated running total instead of a tree.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.jit import njit_cached
from pymc_discrete.kernels.sum_tree import (
    tree_draw,
    tree_from_leaves,
    tree_leaf,
    tree_set,
    tree_total,
)
from pymc_discrete.kernels.weights import (
    RESCALE_EFOLDS,
    SMALLEST_TOTAL,
    log_g,
    weight_at_scale,
)

__all__ = [
    "binary_forward",
    "binary_reverse",
    "binary_weights_at",
    "binary_weights_reusing",
    "draw_move",
    "linearised_forward",
    "linearised_reverse",
    "move_logprob",
    "move_site",
    "seeded_draw_move",
    "site_weights_at",
    "site_weights_reusing",
]


# ---- weights of one site ---------------------------------------------------------------
@njit_cached
def _site_total(potentials, i, current, log_scale, code):
    """Scaled total weight of moving site i (at value ``current``) and the largest log
    weight among its moves."""
    base = potentials[i, current]
    total = 0.0
    top = -np.inf
    for c in range(potentials.shape[1]):
        d = potentials[i, c] - base
        if c != current and d > -np.inf:
            lw = log_g(d, code)
            if lw > top:
                top = lw
            total += np.exp(lw - log_scale)
    return total, top


@njit_cached
def _row_top_ratio(potentials, i, current) -> float:
    """Largest log-ratio of any move of site i from value ``current`` (-inf if none)."""
    base = potentials[i, current]
    top = -np.inf
    for c in range(potentials.shape[1]):
        d = potentials[i, c] - base
        if c != current and d > top:
            top = d
    return top


@njit_cached
def site_weights_at(z, potentials, code):
    """Scaled site weights of every site at z and their common log scale (the largest
    log weight of any move, so no weight overflows)."""
    n = potentials.shape[0]
    top = -np.inf  # g is increasing: the largest weight is that of the largest ratio
    for i in range(n):
        top = max(top, _row_top_ratio(potentials, i, z[i]))
    weights = np.zeros(n)
    if not top > -np.inf:
        return weights, -np.inf
    log_scale = log_g(top, code)
    for i in range(n):
        weights[i] = _site_total(potentials, i, z[i], log_scale, code)[0]
    return weights, log_scale


@njit_cached
def site_weights_reusing(z, potentials, old_z, old_potentials, old_weights, old_log_scale,
                          code):
    """:func:`site_weights_at`, bitwise, copying the old weight of every site whose value
    and potentials are unchanged (bitwise) when the scale (the log weight of the largest
    ratio) is unchanged too; a new scale recomputes every weight. The state is then a
    function of its point alone, not of the states before it, so a chain resumed from
    its point (a restored ``sampling_state``) continues bit for bit."""
    n, k = potentials.shape
    top = -np.inf  # g is increasing: the largest weight is that of the largest ratio
    for i in range(n):
        top = max(top, _row_top_ratio(potentials, i, z[i]))
    if not top > -np.inf or log_g(top, code) != old_log_scale:
        return site_weights_at(z, potentials, code)
    weights = np.empty(n)
    for i in range(n):
        same = z[i] == old_z[i]
        if same:
            for c in range(k):
                if potentials[i, c] != old_potentials[i, c]:
                    same = False
                    break
        if same:
            weights[i] = old_weights[i]
        else:
            weights[i] = _site_total(potentials, i, z[i], old_log_scale, code)[0]
    return weights, old_log_scale


@njit_cached
def move_site(tree, potentials, z, i, c, log_scale, code) -> float:
    """Set ``z[i] = c`` and its leaf; rebuild the whole tree at a new scale if the new
    weights would overflow or the total underflow. Returns the log scale in use."""
    z[i] = c
    total, top = _site_total(potentials, i, c, log_scale, code)
    if top - log_scale < RESCALE_EFOLDS:
        tree_set(tree, i, total)
        if tree_total(tree) > SMALLEST_TOTAL:
            return log_scale
    weights, log_scale = site_weights_at(z, potentials, code)
    tree[:] = tree_from_leaves(weights)
    return log_scale


@njit_cached
def draw_move(tree, potentials, z, log_scale, code):
    """Draw (site, new value) with probability ``w(i, c) / Z(z)``; returns the site, the
    value and the log-probability (site -1 when no move is possible)."""
    total = tree_total(tree)
    if not total > 0.0:
        return -1, -1, -np.inf
    i = tree_draw(tree)
    a = z[i]
    base = potentials[i, a]
    k = potentials.shape[1]
    site_total = tree_leaf(tree, i)
    while True:
        u = np.random.random() * site_total
        acc = 0.0
        c = -1
        lw_c = -np.inf
        for v in range(k):
            d = potentials[i, v] - base
            if v == a or not d > -np.inf:
                continue
            lw = log_g(d, code)
            w = np.exp(lw - log_scale)
            if w > 0.0:
                c = v
                lw_c = lw
                acc += w
                if u < acc:
                    break
        if c >= 0 and u < acc:
            break
    return i, c, lw_c - log_scale - np.log(total)


@njit_cached
def seeded_draw_move(tree, potentials, z, log_scale, code, seed):
    np.random.seed(seed)
    return draw_move(tree, potentials, z, log_scale, code)


@njit_cached
def move_logprob(tree, potentials, z, i, c, log_scale, code) -> float:
    """Log-probability of moving site i of z to value c: ``log w(i, c) - log Z(z)``."""
    total = tree_total(tree)
    d = potentials[i, c] - potentials[i, z[i]]
    if not total > 0.0 or c == z[i] or not d > -np.inf:
        return -np.inf
    lw = log_g(d, code)
    if not np.exp(lw - log_scale) > 0.0:
        return -np.inf
    return lw - log_scale - np.log(total)


# ---- paths -----------------------------------------------------------------------------
@njit_cached
def linearised_forward(x, potentials, log_scale, site_weights, length, code, seed):
    """Draw a path of ``length`` moves under the linearisation at x (numba's generator
    seeded with ``seed``).

    Returns the end point, the moved sites and their previous values (in path order) and
    the log-probability of the path (-inf when a move was impossible).
    """
    np.random.seed(seed)
    tree = tree_from_leaves(site_weights)
    z = x.copy()
    sites = np.empty(length, np.int64)
    previous = np.empty(length, np.int64)
    logq = 0.0
    for step in range(length):
        i, c, lp = draw_move(tree, potentials, z, log_scale, code)
        if i < 0:
            return z, sites, previous, -np.inf
        sites[step] = i
        previous[step] = z[i]
        logq += lp
        log_scale = move_site(tree, potentials, z, i, c, log_scale, code)
    return z, sites, previous, logq


@njit_cached
def linearised_reverse(y, potentials, log_scale, site_weights, sites, previous, code):
    """Log-probability of walking the path back from y under the linearisation at y."""
    tree = tree_from_leaves(site_weights)
    z = y.copy()
    logq = 0.0
    for step in range(sites.size - 1, -1, -1):
        i = sites[step]
        lp = move_logprob(tree, potentials, z, i, previous[step], log_scale, code)
        if not lp > -np.inf:
            return -np.inf
        logq += lp
        log_scale = move_site(tree, potentials, z, i, previous[step], log_scale, code)
    return logq


# ---------------------------------------------------------------------------------------
# Binary sites: the fast path (two values per site)


#: The reverse walk recomputes its running total exactly once the magnitudes added to it
#: exceed the total by this factor (so the compensated sum keeps ~1e-25 relative error).
_RECOMPUTE_RATIO = 2.0**20


@njit_cached
def _flip_ratio(potentials, i, value) -> float:
    """Log-ratio of moving site i from ``value`` to the other value (-inf if impossible)."""
    return potentials[i, 1 - value] - potentials[i, value]


@njit_cached
def binary_weights_at(z, potentials, code):
    """Scaled weight of every site's move at z and their log scale (the log weight of the
    largest ratio, so no weight exceeds 1).

    Returns
    -------
    weights : ndarray, shape (N,)
    log_scale : float
        ``-inf`` if no move is possible.
    """
    n = z.size
    ratios = np.empty(n)
    top = -np.inf
    for i in range(n):
        d = _flip_ratio(potentials, i, z[i])
        ratios[i] = d
        if d > top:
            top = d
    weights = np.zeros(n)
    if not top > -np.inf:
        return weights, -np.inf
    log_scale = log_g(top, code)
    for i in range(n):
        weights[i] = weight_at_scale(ratios[i], log_scale, code)
    return weights, log_scale


@njit_cached
def binary_weights_reusing(z, potentials, old_z, old_potentials, old_weights, old_log_scale,
                           code):
    """:func:`binary_weights_at`, bitwise, copying the old weight of every site whose
    value and potentials are bitwise unchanged when the scale (the log weight of the
    largest ratio) is unchanged too; a new scale recomputes every weight (a state is a
    function of its point alone, as :func:`site_weights_reusing` explains)."""
    n = z.size
    top = -np.inf
    for i in range(n):
        d = _flip_ratio(potentials, i, z[i])
        if d > top:
            top = d
    if not top > -np.inf or log_g(top, code) != old_log_scale:
        return binary_weights_at(z, potentials, code)
    weights = np.empty(n)
    for i in range(n):
        if (z[i] == old_z[i] and potentials[i, 0] == old_potentials[i, 0]
                and potentials[i, 1] == old_potentials[i, 1]):
            weights[i] = old_weights[i]
        else:
            weights[i] = weight_at_scale(_flip_ratio(potentials, i, z[i]), old_log_scale, code)
    return weights, old_log_scale


@njit_cached
def binary_forward(x, potentials, log_scale, site_weights, length, code, seed):
    """Draw a path of ``length`` moves from x under the linearisation anchored at x.

    Returns the end point, the moved sites, their previous values and the path's
    log-probability (-inf if no move was possible at some point).
    """
    np.random.seed(seed)
    tree = tree_from_leaves(site_weights)
    z = x.copy()
    sites = np.empty(length, np.int64)
    previous = np.empty(length, np.int64)
    logq = 0.0
    for step in range(length):
        total = tree_total(tree)
        if not total > 0.0:
            return z, sites, previous, -np.inf
        i = tree_draw(tree)  # a leaf of positive weight: d below is finite
        b = z[i]
        d = _flip_ratio(potentials, i, b)
        logq += log_g(d, code) - log_scale - np.log(total)
        sites[step] = i
        previous[step] = b
        z[i] = 1 - b
        back = log_g(-d, code) - log_scale
        if back < RESCALE_EFOLDS:
            tree_set(tree, i, np.exp(back))
            if tree_total(tree) > SMALLEST_TOTAL:
                continue
        weights, log_scale = binary_weights_at(z, potentials, code)
        tree = tree_from_leaves(weights)
    return z, sites, previous, logq


@njit_cached
def binary_reverse(y, potentials, log_scale, site_weights, sites, previous, code) -> float:
    """Log-probability of walking the path back from y (undoing ``sites`` in reverse order)
    under the linearisation anchored at y."""
    weights = site_weights.copy()
    z = y.copy()
    total = weights.sum()
    compensation = 0.0
    magnitude = total
    logq = 0.0
    for step in range(sites.size - 1, -1, -1):
        i = sites[step]
        b = z[i]
        d = _flip_ratio(potentials, i, b)
        current = total + compensation
        if previous[step] == b or not d > -np.inf or not current > 0.0:
            return -np.inf
        lw = log_g(d, code) - log_scale
        if not np.exp(lw) > 0.0:
            return -np.inf  # a zero weight: the forward sampler could not draw this move
        logq += lw - np.log(current)
        z[i] = 1 - b
        back = log_g(-d, code) - log_scale
        if back >= RESCALE_EFOLDS:
            weights, log_scale = binary_weights_at(z, potentials, code)
            total, compensation = weights.sum(), 0.0
            magnitude = total
            continue
        new = np.exp(back)
        delta = new - weights[i]
        weights[i] = new
        updated = total + delta  # Neumaier's compensated summation
        if abs(total) >= abs(delta):
            compensation += (total - updated) + delta
        else:
            compensation += (delta - updated) + total
        total = updated
        magnitude += abs(delta)
        if magnitude > _RECOMPUTE_RATIO * abs(total + compensation) or not total > SMALLEST_TOTAL:
            total = weights.sum()
            if not total > SMALLEST_TOTAL:
                weights, log_scale = binary_weights_at(z, potentials, code)
                total = weights.sum()
            compensation, magnitude = 0.0, total
    return logq
