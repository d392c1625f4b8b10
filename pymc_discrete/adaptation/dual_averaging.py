"""Dual averaging (Nesterov 2009, as in Hoffman & Gelman's NUTS) of a log scale toward a
target acceptance rate.

The scale R of ALBP/ARWM is a number of sites: acceptance falls as R grows, as it falls
with the step size of HMC. The tuner works on log R, keeps the iterate inside
``[log lower, log upper]``, and returns the weighted average of the iterates (which
forgets the start quickly and smooths the noise of single acceptances) as the value to
freeze when tuning ends.
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = ["DualAveragingState", "dual_averaging_init", "dual_averaging_update", "dual_averaging_final"]


class DualAveragingState(NamedTuple):
    """State of the dual-averaging tuner.

    Attributes
    ----------
    step : int
        Number of updates so far.
    log_scale : float
        Current iterate, log of the scale to use for the next draw.
    log_scale_avg : float
        Weighted average of the iterates: the value frozen after tuning.
    error_avg : float
        Running average of ``target - acceptance``.
    mu : float
        Shrinkage point of the iterates.

    Examples
    --------
    >>> state = dual_averaging_init(1.0)
    >>> state.step, state.log_scale
    (0, 0.0)
    """

    step: int
    log_scale: float
    log_scale_avg: float
    error_avg: float
    mu: float


def dual_averaging_init(initial_scale: float, shrink_factor: float = 10.0) -> DualAveragingState:
    """Start tuning at ``initial_scale``.

    Parameters
    ----------
    initial_scale : float
        Scale of the first draw (> 0).
    shrink_factor : float
        The iterates are shrunk toward ``log(shrink_factor * initial_scale)``, which
        favours trying larger scales early (as NUTS does with ten times its step size).

    Returns
    -------
    DualAveragingState

    Examples
    --------
    >>> round(dual_averaging_init(2.0).mu, 4)  # log(10 * 2)
    2.9957
    """
    log0 = math.log(initial_scale)
    return DualAveragingState(0, log0, log0, 0.0, log0 + math.log(shrink_factor))


def dual_averaging_update(
    state: DualAveragingState,
    accept_prob: float,
    target: float,
    log_lower: float,
    log_upper: float,
    gamma: float = 0.05,
    t0: float = 10.0,
    kappa: float = 0.75,
) -> DualAveragingState:
    """Update the log scale after one draw whose acceptance probability was ``accept_prob``.

    Parameters
    ----------
    state : DualAveragingState
        Current tuner state.
    accept_prob : float
        M-H acceptance probability of the draw (NaN counts as 0).
    target : float
        Target acceptance rate in (0, 1).
    log_lower, log_upper : float
        Bounds of the log scale.
    gamma, t0, kappa : float
        Dual-averaging constants (Hoffman & Gelman 2014 defaults).

    Returns
    -------
    DualAveragingState

    Examples
    --------
    Accepting everything pushes the scale up:

    >>> import math
    >>> state = dual_averaging_init(1.0)
    >>> for _ in range(20):
    ...     state = dual_averaging_update(state, 1.0, 0.574, 0.0, math.log(100.0))
    >>> math.exp(state.log_scale) > 1.0
    True
    """
    if math.isnan(accept_prob):
        accept_prob = 0.0
    t = state.step + 1
    w = 1.0 / (t + t0)
    error_avg = (1.0 - w) * state.error_avg + w * (target - accept_prob)
    log_scale = state.mu - math.sqrt(t) / gamma * error_avg
    log_scale = min(max(log_scale, log_lower), log_upper)
    eta = t ** (-kappa)
    log_scale_avg = eta * log_scale + (1.0 - eta) * state.log_scale_avg
    return DualAveragingState(t, log_scale, log_scale_avg, error_avg, state.mu)


def dual_averaging_final(state: DualAveragingState) -> float:
    """The scale to freeze at the end of tuning: exp of the averaged iterate.

    Parameters
    ----------
    state : DualAveragingState

    Returns
    -------
    float

    Examples
    --------
    >>> import math
    >>> state = dual_averaging_init(4.0)
    >>> state = dual_averaging_update(state, 0.2, 0.574, 0.0, math.log(100.0))
    >>> 1.0 <= dual_averaging_final(state) <= 100.0
    True
    """
    return math.exp(state.log_scale_avg)
