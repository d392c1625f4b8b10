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

The fit is a deterministic function of the indicators and the other variables (never of
the current coefficients): Newton steps from a fixed anchor. So the reverse proposal is
the fit at the current indicators, and

    log alpha = log p(g', b') - log p(g, b) + log q(b | g) - log q(b' | g').

This is a valid Metropolis-Hastings step whatever the model; only the acceptance depends
on the fit. Where the coefficients' conditional is Gaussian (a linear regression given
the noise scale and intercept) one Newton step is exact and the move accepts with the
ratio of the indicators' probabilities with the coefficients integrated out: a collapsed
Gibbs sampler of the indicators. Elsewhere (a logistic or Poisson regression) the fit is
the Laplace approximation of the conditional: Newton ascent to its mode
(:func:`newton_ascent`), the precision the negative Hessian at its last point. A fit
stopped short of the mode can be a poor proposal, not merely a slightly worse one: in a
logistic regression with strong effects, two Newton steps from 0 leave the mean several
of the conditional's standard deviations short and the precision (the curvature at an
earlier point) too high, so ``log p - log q`` varies by tens of units over the
conditional and the flips are practically never accepted.

The model's gradient, Hessian and the fit's last Newton step are PyTensor graphs, built
by :class:`~pymc_discrete.pymc.steps.paired.PairedFlip`; here are the ascent that drives them
and what the Metropolis-Hastings step does with the fit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["GaussianFit", "log_density", "metropolis_log_ratio", "newton_ascent",
           "MAX_NEWTON_STEPS", "NEWTON_TOLERANCE", "MAX_HALVINGS"]

#: most Newton steps of a fit where the conditional is not Gaussian (damped Newton ascent
#: on a log-concave conditional converges in far fewer; the cap bounds the cost where it
#: does not)
MAX_NEWTON_STEPS = 50
#: the ascent has reached the mode once the Newton decrement ``grad' P^-1 grad`` (the
#: squared length of the step in the fit's own metric) is below this: the step left is
#: then far below the conditional's standard deviations, and the last one, taken in the
#: proposal, leaves an error of its square
NEWTON_TOLERANCE = 1e-10
#: halvings of a Newton step before the line search gives up (the ascent then stops
#: where it is)
MAX_HALVINGS = 30


class GaussianFit(NamedTuple):
    """A Gaussian proposal: its mean, the Cholesky factor of its precision and its log
    normaliser."""

    #: the mean
    mean: np.ndarray
    #: lower-triangular ``L`` with precision ``L L^T``
    chol_precision: np.ndarray
    #: ``log det L - p/2 log(2 pi)``
    log_norm: float


def log_density(x: np.ndarray, fit: GaussianFit) -> float:
    """The fit's log density at ``x``."""
    z = (x - fit.mean) @ fit.chol_precision
    return float(fit.log_norm - 0.5 * (z @ z))


def newton_ascent(newton, start: np.ndarray, max_steps: int,
                  tolerance: float = NEWTON_TOLERANCE) -> np.ndarray:
    """The point from which a fit's last Newton step is taken: damped Newton ascent of a
    log density from ``start``.

    Each step goes from ``b`` along the Newton direction ``P^-1 grad`` (``P`` the negative
    Hessian), halved until the log density rises by at least a quarter of what the
    quadratic model promises (Armijo's rule) and ``P`` is positive definite at the new
    point; the ascent stops once the Newton decrement is below ``tolerance``, after
    ``max_steps - 1`` steps (the caller takes the last), or where no halving qualifies.
    Every operation is deterministic, so the point depends on ``start`` and the log
    density only: a fit built on it is the same whenever it is recomputed, as the
    reverse move of Metropolis-Hastings needs.

    Parameters
    ----------
    newton : callable
        ``b -> (log density, gradient, Newton step P^-1 grad)``, the step non-finite
        where ``P`` is not positive definite.
    start : numpy.ndarray
        The fixed anchor.
    max_steps : int
        Newton steps of the whole fit, the caller's last one included.
    tolerance : float
        Newton decrement at which the ascent has converged.

    Returns
    -------
    numpy.ndarray
        The last point reached (``start`` when the log density is not concave there).

    Examples
    --------
    >>> import numpy as np
    >>> def newton(b):  # log density -cosh(b - 3): concave, mode at 3
    ...     return -np.cosh(b[0] - 3), -np.sinh(b - 3), -np.tanh(b - 3)
    >>> point = newton_ascent(newton, np.zeros(1), 50)
    >>> bool(abs(point[0] - 3) < 1e-5)
    True
    """
    b = np.asarray(start, dtype=float)
    if max_steps <= 1:
        return b
    logp, gradient, step = newton(b)
    if not _usable(logp, step):
        return b
    for _ in range(max_steps - 1):
        decrement = float(gradient @ step)
        if decrement <= tolerance:
            break
        t = 1.0
        for _ in range(MAX_HALVINGS):
            trial = b + t * step
            trial_logp, trial_gradient, trial_step = newton(trial)
            # a rise of a quarter of the promise: a full step near the mode, where the
            # quadratic model is right, always qualifies (convergence stays quadratic)
            if (_usable(trial_logp, trial_step)
                    and trial_logp >= logp + 0.25 * t * decrement):
                break
            t *= 0.5
        else:
            break
        b, logp, gradient, step = trial, trial_logp, trial_gradient, trial_step
    return b


def _usable(logp, step) -> bool:
    """Whether a point can carry on the ascent: finite density, a Newton step (positive
    definite ``P``)."""
    return bool(np.isfinite(logp) and np.all(np.isfinite(step)))


def metropolis_log_ratio(logp_current: float, logp_proposal: float, log_q_reverse: float,
                         log_q_forward: float) -> float:
    """``log alpha`` of a proposal: -inf where its density is -inf or the ratio is nan
    (such proposals are refused), ``+inf`` from an impossible current state."""
    if logp_proposal == -np.inf:
        return -np.inf
    ratio = logp_proposal - logp_current + log_q_reverse - log_q_forward
    return -np.inf if np.isnan(ratio) else float(ratio)
