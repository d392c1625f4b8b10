"""ARWM: one Metropolis-Hastings step of the adaptive random walk on binary or categorical
sites.

R (:func:`~pymc_discrete.kernels.common.number_of_changes`: random, with mean the scale)
sites are drawn uniformly without replacement; a binary site flips, a categorical site
moves to a uniformly chosen *other* value. The proposal is symmetric. The kernels take
plain callables and an ``np.random.Generator``; they know nothing of PyMC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.albp import _flip
from pymc_discrete.kernels.common import (
    STAY,
    StepInfo,
    draw_proposal_size,
    metropolis_hastings,
    step_result,
)

__all__ = ["LogpFn", "RWState", "arwm_step"]

#: ``x -> log density``
LogpFn = Callable[[np.ndarray], float]


class RWState(NamedTuple):
    """State of a random-walk chain on binary or categorical sites: the point and its log
    density.

    Examples
    --------
    >>> import numpy as np
    >>> RWState(np.array([0, 2]), -1.5).x.tolist()
    [0, 2]
    """

    x: np.ndarray
    logp: float


def arwm_step(
    state: RWState,
    scale: float,
    rng: np.random.Generator,
    logp: LogpFn,
    n_categories: np.ndarray | None = None,
) -> tuple[RWState, StepInfo]:
    """One M-H step of random-walk Metropolis RWM-R (module docstring).

    Parameters
    ----------
    state : RWState
        Current state.
    scale : float
        Real-valued scale R_t >= 1.
    rng : numpy.random.Generator
        Source of randomness.
    logp : callable
        ``y -> logp(y)``; called once, at the proposal.
    n_categories : ndarray of int64, shape (N,), optional
        Number of values of every site (>= 2); None for binary sites.

    Returns
    -------
    new_state : RWState
    info : StepInfo

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> logp = lambda x: 0.5 * float(np.sum(x))
    >>> state = RWState(np.zeros(10, dtype=np.int64), 0.0)
    >>> state, info = arwm_step(state, 2.0, rng, logp)
    >>> 0 <= info.n_proposed <= 10
    True
    >>> state = RWState(np.zeros(4, dtype=np.int64), 0.0)
    >>> state, info = arwm_step(state, 1.0, rng, lambda x: 0.0, np.full(4, 3))
    >>> info.accepted, int((state.x != 0).sum())
    (True, 1)
    """
    n = state.x.size
    r, u_accept, _ = draw_proposal_size(scale, rng, n)
    if r == 0:
        return state, STAY
    picks = rng.choice(n, size=r, replace=False)
    if n_categories is None:
        y = _flip(state.x, picks)
    else:
        y = state.x.copy()
        shift = 1 + (rng.random(r) * (n_categories[picks] - 1)).astype(np.int64)
        y[picks] = (y[picks] + shift) % n_categories[picks]
    logp_y = float(logp(y))
    accepted, prob = metropolis_hastings(state.logp, logp_y, 0.0, u_accept)
    return step_result(state, RWState(y, logp_y), accepted, prob, r)
