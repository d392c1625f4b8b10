"""The scale of each draw after tuning: the tuned one, or now and then a smaller one.

A tuned scale R is right on average over the states tuning visited. A chain can reach a
state where no move of that size is ever accepted (a mixture's labels after its means
moved, say) and then repeat that state for good. Drawing, independently of the state,
a smaller scale for a share of the draws keeps small moves possible there: each scale's
kernel leaves the target invariant and is reversible, and a mixture of them with
weights that do not depend on the state is too, so the chain stays exact. The cost is
the share of draws run at a scale below the optimal one.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["SMALL_SCALE_SHARE", "scale_for_draw"]

#: share of the draws after tuning that run at a smaller scale than the tuned one. Small,
#: so that the draws keep the tuned scale's efficiency where it moves (the efficiency of
#: locally balanced proposals is flat near its optimum, and a draw at a smaller scale
#: still moves); large enough that a chain stuck at the tuned scale tries small moves
#: every few draws
SMALL_SCALE_SHARE = 0.1


def scale_for_draw(tuned: float, lower: float, rng: np.random.Generator) -> float:
    """The scale one draw after tuning runs at.

    With probability :data:`SMALL_SCALE_SHARE` a scale drawn log-uniformly between
    ``lower`` and ``tuned`` (so moves of every size down to the smallest are tried),
    else ``tuned``. Two uniform numbers are drawn from ``rng`` every time, whatever the
    outcome, so the stream the kernel draws from afterwards does not depend on it.

    Parameters
    ----------
    tuned : float
        The scale tuning froze.
    lower : float
        The smallest scale of the step (1 site, or the shortest path).
    rng : numpy.random.Generator

    Returns
    -------
    float
        A scale in ``[lower, tuned]``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> scales = np.array([scale_for_draw(40.0, 1.0, rng) for _ in range(10_000)])
    >>> bool(((scales >= 1.0) & (scales <= 40.0)).all())
    True
    >>> round(float(np.mean(scales < 40.0)), 2)
    0.1
    """
    choose, size = rng.random(2)
    if choose >= SMALL_SCALE_SHARE or tuned <= lower:
        return tuned
    return float(math.exp(math.log(lower) + size * (math.log(tuned) - math.log(lower))))
