"""The linearised path auxiliary proposal specialised to two-valued sites.

Same proposal and same numbers as the general code in :mod:`pymc_discrete.kernels.path`
(potential table ``P`` of shape (N, 2), site weights scaled by ``exp(-log_scale)``), with
what two values allow: a site at value b has exactly one move, to ``1 - b``, with log-ratio
``d = P[i, 1 - b] - P[i, b]``, and after the move its only move has log-ratio ``-d``. So a
move costs one draw from the sum tree, one ``exp`` (the moved site's new weight) and one
``log`` (the total), and the reverse walk, which only scores moves, keeps a compensated
running total instead of a tree.
"""

from __future__ import annotations

import numba
import numpy as np

from pymc_discrete.kernels.sum_tree import (
    tree_draw,
    tree_from_leaves,
    tree_set,
    tree_total,
)
from pymc_discrete.kernels.weights import _log_g

__all__ = ["binary_forward", "binary_reverse", "binary_weights_at", "binary_weights_reusing"]

#: As in :mod:`pymc_discrete.kernels.path`: rescale when a weight would exceed this many
#: e-folds above the scale, or the total fall below exp(-_RESCALE).
_RESCALE = 600.0
_TINY = float(np.exp(-_RESCALE))
#: The reverse walk recomputes its running total exactly once the magnitudes added to it
#: exceed the total by this factor (so the compensated sum keeps ~1e-25 relative error).
_RECOMPUTE_RATIO = 2.0**20


@numba.njit(cache=True)
def _flip_ratio(potentials, i, value) -> float:
    """Log-ratio of moving site i from ``value`` to the other value (-inf if impossible)."""
    return potentials[i, 1 - value] - potentials[i, value]


@numba.njit(cache=True)
def _weight(d, log_scale, code) -> float:
    """Scaled weight ``g(e^d) / e^log_scale`` of a move with log-ratio d (0 if d = -inf)."""
    if not d > -np.inf:
        return 0.0
    return np.exp(_log_g(d, code) - log_scale)


@numba.njit(cache=True)
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
    log_scale = _log_g(top, code)
    for i in range(n):
        weights[i] = _weight(ratios[i], log_scale, code)
    return weights, log_scale


@numba.njit(cache=True)
def binary_weights_reusing(z, potentials, old_z, old_potentials, old_weights, old_log_scale,
                           code):
    """:func:`binary_weights_at`, copying the old weight of every site whose value and
    potentials are bitwise unchanged and computing the others on the old scale (unless it
    no longer fits: then everything is recomputed)."""
    n = z.size
    if not old_log_scale > -np.inf:
        return binary_weights_at(z, potentials, code)
    weights = np.empty(n)
    total = 0.0
    for i in range(n):
        if (z[i] == old_z[i] and potentials[i, 0] == old_potentials[i, 0]
                and potentials[i, 1] == old_potentials[i, 1]):
            weights[i] = old_weights[i]
        else:
            d = _flip_ratio(potentials, i, z[i])
            if d > -np.inf and _log_g(d, code) - old_log_scale > _RESCALE:
                return binary_weights_at(z, potentials, code)
            weights[i] = _weight(d, old_log_scale, code)
        total += weights[i]
    if not total > _TINY:
        return binary_weights_at(z, potentials, code)
    return weights, old_log_scale


@numba.njit(cache=True)
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
        logq += _log_g(d, code) - log_scale - np.log(total)
        sites[step] = i
        previous[step] = b
        z[i] = 1 - b
        back = _log_g(-d, code) - log_scale
        if back < _RESCALE:
            tree_set(tree, i, np.exp(back))
            if tree_total(tree) > _TINY:
                continue
        weights, log_scale = binary_weights_at(z, potentials, code)
        tree = tree_from_leaves(weights)
    return z, sites, previous, logq


@numba.njit(cache=True)
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
        lw = _log_g(d, code) - log_scale
        if not np.exp(lw) > 0.0:
            return -np.inf  # a zero weight: the forward sampler could not draw this move
        logq += lw - np.log(current)
        z[i] = 1 - b
        back = _log_g(-d, code) - log_scale
        if back >= _RESCALE:
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
        if magnitude > _RECOMPUTE_RATIO * abs(total + compensation) or not total > _TINY:
            total = weights.sum()
            if not total > _TINY:
                weights, log_scale = binary_weights_at(z, potentials, code)
                total = weights.sum()
            compensation, magnitude = 0.0, total
    return logq
