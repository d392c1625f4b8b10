"""Locally balanced weight functions in log space.

A locally balanced function satisfies ``g(t) = t * g(1/t)``. Given a local
log-ratio ``d = log pi(y) - log pi(x)`` the proposal weight of the move is
``g(exp(d))``; everything here works with ``log g(exp(d))`` so that sqrt weights
of large ratios never overflow.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["WEIGHT_CODES", "weight_code", "log_balanced_weights"]

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


@numba.njit(cache=True, inline="always")
def _log_weight(d: float, code: int) -> float:
    if np.isnan(d):
        return -np.inf
    if code == 0:
        # log(t / (1 + t)) = -log1p(exp(-d)), evaluated without overflow
        if d > 0.0:
            return -np.log1p(np.exp(-d))
        return d - np.log1p(np.exp(d))
    return 0.5 * d


@numba.njit(cache=True)
def log_balanced_weights(log_ratios: np.ndarray, code: int) -> np.ndarray:
    """Log of the locally balanced weights of an array of local log-ratios.

    Parameters
    ----------
    log_ratios : ndarray of float64
        Local log-ratios ``log pi(y) - log pi(x)``, any shape. NaN counts as an
        impossible move (weight zero, log weight ``-inf``).
    code : int
        Weight function code from :data:`WEIGHT_CODES`.

    Returns
    -------
    ndarray of float64
        ``log g(exp(log_ratios))`` with the shape of ``log_ratios``.
    """
    flat = log_ratios.ravel()
    out = np.empty(flat.size)
    for i in range(flat.size):
        out[i] = _log_weight(flat[i], code)
    return out.reshape(log_ratios.shape)
