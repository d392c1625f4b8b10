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

The fit itself is a PyTensor graph (the model's gradient and Hessian), built by
:class:`~pymc_discrete.pymc.paired.PairedFlip`; here is what the Metropolis-Hastings step
does with it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["GaussianFit", "log_density", "metropolis_log_ratio", "NEWTON_STEPS"]

#: Newton steps of a fit (one is exact for a Gaussian conditional; the second corrects a
#: mildly non-Gaussian one, e.g. a logistic regression)
NEWTON_STEPS = 2


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


def metropolis_log_ratio(logp_current: float, logp_proposal: float, log_q_reverse: float,
                         log_q_forward: float) -> float:
    """``log alpha`` of a proposal: -inf where its density is -inf or the ratio is nan
    (such proposals are refused), ``+inf`` from an impossible current state."""
    if logp_proposal == -np.inf:
        return -np.inf
    ratio = logp_proposal - logp_current + log_q_reverse - log_q_forward
    return -np.inf if np.isnan(ratio) else float(ratio)
