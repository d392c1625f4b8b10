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

import numba
import numpy as np

__all__ = ["WEIGHT_CODES", "weight_code", "balanced_weights"]

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
    """
    try:
        return WEIGHT_CODES[weight]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown weight {weight!r}: choose one of {sorted(WEIGHT_CODES)}"
        ) from None


@numba.njit(cache=True)
def _log_g(d: float, code: int) -> float:
    if code == 0:  # log(t / (1 + t)), without overflow
        if d > 0.0:
            return -np.log1p(np.exp(-d))
        return d - np.log1p(np.exp(d))
    return 0.5 * d


@numba.njit(cache=True)
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
    log_scale = _log_g(d_max, code)
    if code == 0 and log_scale > -700.0:
        # Barker: g(e^d) = sigmoid(d) in (0, 1), one exp per site, divided by the scale
        inv_scale = np.exp(-log_scale)
        for i in range(flat.size):
            d = flat[i]
            if d > 0.0:
                out[i] = inv_scale / (1.0 + np.exp(-d))
            elif d > -np.inf:  # excludes NaN and -inf
                e = np.exp(d)
                out[i] = inv_scale * e / (1.0 + e)
    else:
        for i in range(flat.size):
            d = flat[i]
            if d > -np.inf:
                out[i] = np.exp(_log_g(d, code) - log_scale)
    return out.reshape(log_ratios.shape), log_scale
