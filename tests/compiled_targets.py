"""Small binary targets as numba functions ``(x as float64, *params) -> (logp, ratios)``,
the form of PyTensor's NUMBA-mode functions, for the compiled-loop kernels."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def quadratic(x, h, J):
    """``h.x + x'Jx/2``: multilinear, the gradient ratios are exact."""
    g = h + J @ x
    return np.array(h @ x + 0.5 * x @ J @ x), (1.0 - 2.0 * x) * g


@numba.njit(cache=True)
def gaussian(x, h, A, y, sigma):
    """Gaussian likelihood of ``A x``: first-order ratios only."""
    resid = y - A @ x
    grad = h + A.T @ resid / sigma**2
    return h @ x - 0.5 * (resid @ resid) / sigma**2, (1.0 - 2.0 * x) * grad


@numba.njit(cache=True)
def forbidden(x, h, J):
    """``quadratic`` with the all-ones state forbidden (logp -inf, ratios NaN there) and
    site 0 pinned at 0 (its flip has ratio -inf)."""
    n = x.size
    if x[0] > 0.5 or np.all(x > 0.5):
        return np.array(-np.inf), np.full(n, np.nan)
    logp, ratios = quadratic(x, h, J)
    ratios[0] = -np.inf
    return logp, ratios


def make_target(name: str, n: int, seed: int):
    """``(compiled target, its parameters, numpy wrapper x -> (logp, ratios))``."""
    rng = np.random.default_rng(seed)
    if name == "gaussian":
        A = rng.normal(0.0, 1.0, (6, n))
        y = A @ (rng.random(n) < 0.5) + rng.normal(0.0, 0.7, 6)
        target, extra = gaussian, (rng.normal(0.0, 0.5, n), A, y, 0.7)
    else:
        J = np.triu(rng.normal(0.0, 0.8, (n, n)), 1)
        target = quadratic if name == "quadratic" else forbidden
        extra = (rng.normal(0.0, 1.0, n), J + J.T)

    def numpy_target(x):
        logp, ratios = target(np.asarray(x, dtype=np.float64), *extra)
        return float(logp), np.asarray(ratios, dtype=np.float64)

    return target, extra, numpy_target
