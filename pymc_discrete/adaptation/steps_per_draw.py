"""How many Metropolis-Hastings steps a draw makes when the user leaves it to the step.

A draw of PyMC costs a fixed amount besides the step's own work (turning the point into
arrays, recording it, the stats), comparable on a large block to a step of a locally
balanced proposal (docs/algorithms.md gives the figures). Several steps per draw share
that cost, at the price of keeping only every k-th state. Keeping fewer states costs
nothing in precision when consecutive steps are strongly correlated anyway: if the
steps of a draw change on average ``k m`` sites of ``N`` (m per step), a site is left
untouched by the draw with probability about ``exp(-k m / N)``, so with
``k m <= N / 4`` at least 78 % of the sites (and of any sum over them, the log density
included) still hold their value from the previous draw, and the draws of k steps lose
little effective sample size against all the steps, while their PyMC cost is shared k
ways.

So the number of steps per draw is chosen after tuning, from what the tuned chain did:
``k = floor(M / (4 m))``, between 1 and :data:`MAX_STEPS_PER_DRAW`, and 1 for a block
of fewer than :data:`LARGE_BLOCK` sites. M counts the sites that move: sites pinned by
the data (occupied sites of an occupancy model) never do, and counted they would make a
draw's changes look like a small share of the block while the sites that do move are
thinned. M is the number of sites seen moving in the second half of tuning plus an
estimate of the movable ones a short tuning left unmoved by chance, from the sites that
moved once and twice (Chao's estimator of the unseen, :func:`moving_sites`; a lower
bound when some sites move more often than others, which errs toward fewer steps). In a small
block a step changes a large share of
the sites (k = 1 anyway), PyMC's per-draw cost is small, and in a model with other
steps (NUTS on the continuous variables) the draw's cost is theirs, not ours to share.
Blocked Gibbs sweeps redraw every site, so a sweep usually changes a large share of them
and k stays 1; on a strongly coupled block where a sweep changes few sites, the same
rule applies.

The choice depends only on the block's size and the tuning draws (which the seed fixes),
never on timings: the same seed gives the same draws.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["LARGE_BLOCK", "MAX_STEPS_PER_DRAW", "SHARE_CHANGED_PER_DRAW", "auto_steps_per_draw",
           "moving_sites"]

#: blocks of fewer sites keep one step per draw
LARGE_BLOCK = 1000
#: most steps per draw the automatic choice makes (with this many steps PyMC's per-draw
#: cost is already a small share of a draw's, and more would only thin the draws
#: further)
MAX_STEPS_PER_DRAW = 8
#: the largest mean share of the sites a draw's steps may change
SHARE_CHANGED_PER_DRAW = 0.25


def auto_steps_per_draw(n_sites: int, changed_per_step: float | None,
                        moving: float | None = None) -> int:
    """Steps per draw for a block of ``n_sites``, ``moving`` of which move, whose tuned
    steps changed ``changed_per_step`` sites each on average.

    Parameters
    ----------
    n_sites : int
        Sites of the block (fewer than :data:`LARGE_BLOCK`: one step per draw).
    changed_per_step : float or None
        Mean number of sites a step changed over the second half of tuning (None: the
        chain did not tune, nothing is known and a draw is one step).
    moving : float, optional
        Sites that move (:func:`moving_sites` of the second half of tuning; default
        ``n_sites``): sites pinned by the data would dilute the share a draw changes.

    Returns
    -------
    int
        Between 1 and :data:`MAX_STEPS_PER_DRAW`.

    Examples
    --------
    >>> auto_steps_per_draw(2500, 20.0)  # 2500 / 80 = 31, capped
    8
    >>> auto_steps_per_draw(2500, 200.0), auto_steps_per_draw(500, 1.0)
    (3, 1)
    >>> auto_steps_per_draw(2500, 20.0, moving=400.0)  # 400 / 80
    5
    >>> auto_steps_per_draw(2500, 1500.0), auto_steps_per_draw(2500, None)
    (1, 1)
    """
    if n_sites < LARGE_BLOCK or changed_per_step is None or not math.isfinite(changed_per_step):
        return 1
    if changed_per_step <= 0.0:  # nothing moved while tuning: thinning loses nothing
        return MAX_STEPS_PER_DRAW
    share = n_sites if moving is None else moving
    k = math.floor(SHARE_CHANGED_PER_DRAW * share / changed_per_step)
    return int(min(max(k, 1), MAX_STEPS_PER_DRAW))


def moving_sites(changes: np.ndarray) -> float:
    """Estimated number of sites that move, from how many draws changed each site.

    The sites seen moving, plus an estimate of the movable ones that did not move by
    chance: ``f1 (f1 - 1) / (2 (f2 + 1))`` (Chao's bias-corrected estimator of the unseen,
    from the f1 sites that moved once and the f2 that moved twice), at most the sites
    never seen moving.

    Parameters
    ----------
    changes : ndarray of int
        Per site, the number of draws that changed it.

    Returns
    -------
    float

    Examples
    --------
    >>> moving_sites(np.array([0, 0, 5, 7, 9]))  # pinned sites are not guessed at
    3.0
    >>> moving_sites(np.array([0, 0, 1, 1, 1, 2]))  # three seen once: some are unseen
    5.5
    """
    changes = np.asarray(changes)
    seen = int(np.count_nonzero(changes))
    f1 = int(np.count_nonzero(changes == 1))
    f2 = int(np.count_nonzero(changes == 2))
    unseen = f1 * (f1 - 1) / (2.0 * (f2 + 1)) if f1 > 1 else 0.0
    return float(seen + min(unseen, changes.size - seen))
