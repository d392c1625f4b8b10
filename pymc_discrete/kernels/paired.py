"""Flips of a binary indicator with a fresh draw of the coefficients it switches.

In a spike-and-slab regression written as ``g * beta``, the coefficient ``beta_j`` enters
the likelihood only while ``g_j = 1``; while ``g_j = 0`` it wanders under its prior. A
flip of ``g_j`` alone then proposes to switch on a coefficient drawn from the prior,
which the likelihood nearly always refuses; and with correlated predictors, flipping one
indicator while the other coefficients stay put is refused too. The move here flips
``g_j`` and, in the same Metropolis-Hastings proposal, draws the whole coefficient vector
from a Gaussian fitted to its conditional given the flipped indicators and the other
variables::

    q(b | g) = Normal(m_g, P_g^-1),   (m_g, P_g) from Newton steps on log p(g, b, rest)

The fit starts from a fixed anchor (not from the current coefficients), so ``q`` depends
on the indicators and the other variables only, and the reverse proposal is the fit at
the current indicators:

    log alpha = log p(g', b') - log p(g, b) + log q(b | g) - log q(b' | g').

This is a valid Metropolis-Hastings step whatever the model (a poor fit only lowers the
acceptance). Where the coefficients' conditional is Gaussian (a linear regression given
the noise scale and intercept) the fit is exact after one step and the move accepts with
the ratio of the indicators' probabilities with the coefficients integrated out: a
collapsed Gibbs sampler of the indicators.

Pure numerics: the Newton step (the log density's gradient and Hessian) comes in as a
callable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["GaussianFit", "gaussian_fit", "fit_gaussian", "draw", "log_density", "NEWTON_STEPS"]

#: Newton steps of a fit (one is exact for a Gaussian conditional; the second corrects a
#: mildly non-Gaussian one, e.g. a logistic regression)
NEWTON_STEPS = 2


class GaussianFit(NamedTuple):
    """A Gaussian proposal: its mean and the Cholesky factor of its precision."""

    #: the mean
    mean: np.ndarray
    #: lower-triangular ``L`` with precision ``L L^T``
    chol_precision: np.ndarray
    #: ``L^-T``: a draw is ``mean + L^-T z``
    scale: np.ndarray
    #: ``log det L - p/2 log(2 pi)``: the log density's constant
    log_norm: float


def gaussian_fit(mean: np.ndarray, chol_precision: np.ndarray,
                 scale: np.ndarray | None = None) -> GaussianFit:
    """The fit of a mean and the Cholesky factor ``L`` of a precision (``scale``:
    ``L^-T``, computed if not given)."""
    if scale is None:
        scale = solve_triangular(chol_precision, np.eye(mean.size), lower=True, trans="T")
    log_norm = float(np.log(np.diag(chol_precision)).sum() - 0.5 * mean.size * np.log(2 * np.pi))
    return GaussianFit(mean, chol_precision, scale, log_norm)


def fit_gaussian(newton_step: Callable[[np.ndarray], tuple[np.ndarray, ...]],
                 anchor: np.ndarray, steps: int = NEWTON_STEPS) -> GaussianFit:
    """Gaussian fit of a log density by Newton steps from ``anchor``.

    Parameters
    ----------
    newton_step : callable
        ``b -> (b + P^-1 gradient, L, L^-T)`` with ``P = -Hessian = L L^T`` of the log
        density at ``b``; nan where ``P`` is not positive definite or a value is not
        finite.
    anchor : ndarray
        Where the steps start. It must not depend on the chain's current coefficients,
        or the proposal is not the one the reverse move computes.
    steps : int
        Newton steps.

    Returns
    -------
    GaussianFit
        The mean after the last step taken and the precision where that step started.
        A step is taken only where everything is finite; if the first is not, the fit
        is the anchor with unit precision (the move stays exact, only its acceptance
        suffers).
    """
    x = np.asarray(anchor, dtype=float)
    fit = None
    for _ in range(steps):
        mean, chol, scale = newton_step(x)
        if not (np.isfinite(mean).all() and np.isfinite(chol).all()
                and np.isfinite(scale).all()):
            break
        x = np.asarray(mean, dtype=float)
        fit = gaussian_fit(x, np.asarray(chol, dtype=float), np.asarray(scale, dtype=float))
    return fit if fit is not None else gaussian_fit(x.copy(), np.eye(x.size), np.eye(x.size))


def draw(fit: GaussianFit, normal: np.ndarray) -> np.ndarray:
    """A draw of the fit from standard normal variates ``normal``."""
    return fit.mean + fit.scale @ normal


def log_density(x: np.ndarray, fit: GaussianFit) -> float:
    """The fit's log density at ``x``."""
    z = (x - fit.mean) @ fit.chol_precision
    return float(fit.log_norm - 0.5 * (z @ z))
