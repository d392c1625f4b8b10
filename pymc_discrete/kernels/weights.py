"""Locally balanced weight functions.

A locally balanced function satisfies ``g(t) = t * g(1/t)``. Given a local log-ratio
``d = log pi(y) - log pi(x)`` the proposal weight of the move is ``g(exp(d))``. The kernels
work with *scaled linear* weights: ``w_i = g(exp(d_i)) / exp(log_scale)`` with one scale
per state, chosen so that the largest weight is of order one. A proposal probability only
involves ratios of weights of one state, so the scale cancels, and every weight costs a
single ``exp``. Weights too small to represent relative to the largest (below ~1e-308)
become exactly zero: the kernels then never propose those moves, and since forward and
reverse probabilities come from the same function the Metropolis-Hastings ratio stays
exact.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.common import sum_unmasked
from pymc_discrete.kernels.jit import njit_cached

__all__ = [
    "RESCALE_EFOLDS",
    "SMALLEST_TOTAL",
    "WEIGHT_CODES",
    "balanced_weights",
    "log_g",
    "rebalanced_weights",
    "weight_at_scale",
    "weight_code",
]

#: Integer codes of the weight functions, as the numba kernels take them.
WEIGHT_CODES: dict[str, int] = {"barker": 0, "sqrt": 1}


def weight_code(weight: str) -> int:
    """Return the kernel code of a weight function name.

    Parameters
    ----------
    weight : {"barker", "sqrt"}
        ``"barker"`` is g(t) = t / (1 + t); ``"sqrt"`` is g(t) = sqrt(t).

    Returns
    -------
    int
        The code the numba kernels take.

    Raises
    ------
    ValueError
        If ``weight`` names no known weight function.

    Examples
    --------
    >>> weight_code("barker"), weight_code("sqrt")
    (0, 1)
    """
    try:
        return WEIGHT_CODES[weight]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown weight {weight!r}: choose one of {sorted(WEIGHT_CODES)}"
        ) from None


#: Every kernel keeps its weights on one scale per state and rebuilds them all at a new
#: scale when a weight would exceed it by more than this many e-folds, or their total
#: fall below ``SMALLEST_TOTAL`` (no overflow, no underflow of the whole set).
RESCALE_EFOLDS = 600.0
SMALLEST_TOTAL = float(np.exp(-RESCALE_EFOLDS))


@njit_cached
def log_g(d: float, code: int) -> float:
    """``log g(e^d)`` of the weight function ``code``, without overflow.

    Parameters
    ----------
    d : float
        A local log-ratio.
    code : int
        Weight function code from :data:`WEIGHT_CODES`.

    Returns
    -------
    float

    Examples
    --------
    >>> round(float(log_g(0.0, 0)), 6), float(log_g(3.0, 1))
    (-0.693147, 1.5)
    """
    if code == 0:  # log(t / (1 + t)), without overflow
        if d > 0.0:
            return -np.log1p(np.exp(-d))
        return d - np.log1p(np.exp(d))
    return 0.5 * d


@njit_cached
def weight_at_scale(d: float, log_scale: float, code: int) -> float:
    """``g(e^d) / e^log_scale`` through ``log g`` (0 for NaN and -inf).

    Parameters
    ----------
    d : float
        A local log-ratio.
    log_scale : float
        The scale of the weights.
    code : int
        Weight function code.

    Returns
    -------
    float

    Examples
    --------
    >>> float(weight_at_scale(2.0, 1.0, 1)), float(weight_at_scale(float("nan"), 0.0, 0))
    (1.0, 0.0)
    """
    if not d > -np.inf:
        return 0.0
    return np.exp(log_g(d, code) - log_scale)


@njit_cached
def _scaled_weight(d: float, code: int, log_scale: float, inv_scale: float) -> float:
    """``g(e^d) / e^log_scale`` (0 for NaN and -inf); ``inv_scale = exp(-log_scale)``.

    Barker's ``g(e^d)`` is the sigmoid of d: one ``exp`` per weight when the scale is
    representable, instead of the exp, log1p and exp of going through ``log g``."""
    if not d > -np.inf:  # NaN or -inf
        return 0.0
    if code == 0 and log_scale > -700.0:
        if d > 0.0:
            return inv_scale / (1.0 + np.exp(-d))
        e = np.exp(d)
        return inv_scale * e / (1.0 + e)
    return np.exp(log_g(d, code) - log_scale)


@njit_cached
def balanced_weights(log_ratios: np.ndarray, code: int) -> tuple[np.ndarray, float]:
    """Scaled locally balanced weights of an array of local log-ratios.

    Parameters
    ----------
    log_ratios : ndarray of float64
        Local log-ratios, any shape. NaN counts as an impossible move (weight zero).
    code : int
        Weight function code from :data:`WEIGHT_CODES`.

    Returns
    -------
    weights : ndarray of float64
        ``g(exp(d)) / exp(log_scale)``, the shape of ``log_ratios``.
    log_scale : float
        ``log g(exp(max d))`` (``-inf`` if every ratio is NaN or -inf).

    Examples
    --------
    >>> import numpy as np
    >>> w, s = balanced_weights(np.array([0.0, 2000.0]), 1)  # sqrt: no overflow
    >>> float(s), w.tolist()
    (1000.0, [0.0, 1.0])
    """
    flat = log_ratios.ravel()
    d_max = -np.inf
    for i in range(flat.size):
        if flat[i] > d_max:  # NaN compares False
            d_max = flat[i]
    out = np.zeros(flat.size)
    if d_max == -np.inf:
        return out.reshape(log_ratios.shape), -np.inf
    log_scale = log_g(d_max, code)
    inv_scale = np.exp(-log_scale)
    for i in range(flat.size):
        out[i] = _scaled_weight(flat[i], code, log_scale, inv_scale)
    return out.reshape(log_ratios.shape), log_scale


@njit_cached
def rebalanced_weights(
    log_ratios: np.ndarray,
    old_ratios: np.ndarray,
    old_weights: np.ndarray,
    old_log_scale: float,
    code: int,
) -> tuple[np.ndarray, float]:
    """Weights of new local log-ratios, reusing the old weights where a ratio is unchanged.

    After a move that changes a few sites, most local log-ratios are bitwise the same as
    before (those of sites that share no term with the moved ones); their weights are
    copied and only the changed entries cost an ``exp``. The result is on the old scale,
    unless a new weight would exceed it by more than ``exp(600)`` or the total fall below
    ``exp(-600)``: then every weight is recomputed by :func:`balanced_weights`.

    Parameters
    ----------
    log_ratios : ndarray of float64
        The new local log-ratios (NaN or -inf: weight zero).
    old_ratios, old_weights : ndarray of float64
        The previous ratios and their weights, same shape.
    old_log_scale : float
        Scale of ``old_weights``.
    code : int
        Weight function code.

    Returns
    -------
    weights : ndarray of float64
    log_scale : float
        Identical in meaning to the output of :func:`balanced_weights`.

    Examples
    --------
    >>> import numpy as np
    >>> w0, s0 = balanced_weights(np.array([0.0, 1.0, -1.0]), 1)
    >>> w1, s1 = rebalanced_weights(np.array([0.0, 1.0, 3.0]), np.array([0.0, 1.0, -1.0]),
    ...                             w0, s0, 1)
    >>> w, s = balanced_weights(np.array([0.0, 1.0, 3.0]), 1)
    >>> bool(s1 == s0 and np.allclose(w1 * np.exp(s1), w * np.exp(s)))
    True
    """
    flat = log_ratios.ravel()
    old = old_ratios.ravel()
    if not old_log_scale > -np.inf:
        return balanced_weights(log_ratios, code)
    n = flat.size
    # indices of the changed ratios, gathered without a branch per site (which ratios
    # changed is unpredictable, and a mispredicted branch costs as much as a few sites)
    changed = np.empty(n, np.int64)
    n_changed = 0
    for i in range(n):
        d = flat[i]
        o = old[i]
        changed[n_changed] = i
        n_changed += (d != o) & ((d == d) | (o == o))  # not equal, and not both NaN
    top = -np.inf
    for j in range(n_changed):
        d = flat[changed[j]]
        if d > top:  # g is increasing: the largest new weight is that of the largest d
            top = d
    if top > -np.inf and log_g(top, code) - old_log_scale > RESCALE_EFOLDS:
        return balanced_weights(log_ratios, code)
    out = old_weights.ravel().copy()
    inv_scale = np.exp(-old_log_scale)
    for j in range(n_changed):
        i = changed[j]
        out[i] = _scaled_weight(flat[i], code, old_log_scale, inv_scale)
    if not sum_unmasked(out, np.zeros(0, np.bool_)) > np.exp(-RESCALE_EFOLDS):
        return balanced_weights(log_ratios, code)
    return out.reshape(log_ratios.shape), old_log_scale
