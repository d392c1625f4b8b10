"""ARWM: one Metropolis-Hastings step of the adaptive random walk on binary, categorical
and ordinal integer sites.

R (:func:`~pymc_discrete.kernels.common.number_of_changes`: random, with mean the scale)
sites are drawn uniformly without replacement. A binary site flips; a categorical site
moves to a uniformly chosen *other* value (its values have no order, so none is nearer
than another). An *ordinal* site (an integer count or index with values 0 .. K-1, such as
a Binomial, BetaBinomial or DiscreteUniform variable) takes a random-walk step instead:
up or down with probability 1/2, by a distance m drawn from near values first, and a
value past either end reflected back into 0 .. K-1 with the end value repeated
(``... 1 0 | 0 1 ... K-1 | K-1 K-2 ...``). The distance is

- uniform on 1 .. w given a step width w for the site (``widths``), or
- without a width, log-uniform on 1 .. K-1: ``m = floor(K ** u)``, u uniform, so
  ``P(m) = log((m + 1) / m) / log(K)``.

Why: a uniform new value lands within s of the current one with probability about
2 s / K, so on a site whose posterior spans a few of many values most proposals are
refused. A step of the right size needs the posterior's spread, which a
kernel does not know; the log-uniform distance needs none (every range of distances 1-2,
2-4, 4-8, ... gets about the same share, so some proposals are of the right size
whatever the spread, the nearest the most likely), and is what a step uses until it has
learnt a width (:class:`~pymc_discrete.ARWM` learns one while tuning). A width matched to
the spread does better when several sites move at once: one far proposal among them
makes the whole proposal fail.

Why the reflection keeps the proposal symmetric: the probability of a step d depends only
on the size of d (and the site), and folding with the end values repeated matches the steps that
take x to y one to one with those that take y to x (a step that stays on the range with
its opposite, one that folds with itself), so the Metropolis-Hastings ratio is the
target's ratio. A reflection without the repeated end (``1 0 1``) would propose the end
values half as often as it proposes leaving them. A fold may bring a site back to its
own value; such a site is not counted as changed, and a proposal that changes nothing is
a step that stays.

The kernels take plain callables and an ``np.random.Generator``; they know nothing of
PyMC.
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

__all__ = ["LogpFn", "RWState", "arwm_step", "ordinal_moves"]

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
    ordinal: np.ndarray | None = None,
    widths: np.ndarray | None = None,
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
    ordinal : ndarray of bool, shape (N,), optional
        Which sites are ordinal (random-walk steps, module docstring); the others move to
        a uniform other value. Needs ``n_categories``. None: no site is ordinal.
    widths : ndarray of int64, shape (N,), optional
        Step width w of every site, in 1 .. K-1 where the site is ordinal (read only
        there): distances uniform on 1 .. w. None: log-uniform distances.

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
    >>> state = RWState(np.full(3, 20, dtype=np.int64), 0.0)
    >>> state, info = arwm_step(state, 1.0, rng, lambda x: 0.0, np.full(3, 41),
    ...                         np.ones(3, dtype=bool))
    >>> int(np.abs(state.x - 20).sum()) <= 40
    True
    """
    n = state.x.size
    r, u_accept, _ = draw_proposal_size(scale, rng, n)
    if r == 0:
        return state, STAY
    picks = rng.choice(n, size=r, replace=False)
    if n_categories is None:
        y = _flip(state.x, picks)
        n_changed = r
    else:
        y = state.x.copy()
        k = n_categories[picks]
        u = rng.random(r)
        shift = 1 + (u * (k - 1)).astype(np.int64)
        y[picks] = (y[picks] + shift) % k
        n_changed = r
        if ordinal is not None:
            # drawn whenever the block has ordinal sites, so the order of the draws does
            # not depend on which sites were picked
            signs = rng.random(r)
            walk = ordinal[picks]
            if walk.any():
                sites = picks[walk]
                y[sites] = ordinal_moves(state.x[sites], k[walk], u[walk], signs[walk],
                                         None if widths is None else widths[sites])
                n_changed = int(np.count_nonzero(y[picks] != state.x[picks]))
                if n_changed == 0:  # every walking site folded back onto its value
                    return state, STAY
    logp_y = float(logp(y))
    accepted, prob = metropolis_hastings(state.logp, logp_y, 0.0, u_accept)
    return step_result(state, RWState(y, logp_y), accepted, prob, n_changed)


def ordinal_moves(x: np.ndarray, k: np.ndarray, u_distance: np.ndarray,
                  u_sign: np.ndarray, width: np.ndarray | None = None) -> np.ndarray:
    """The new values of ordinal sites: a random-walk step reflected into the range
    (module docstring).

    Parameters
    ----------
    x : ndarray of int64
        Current values, in 0 .. K-1.
    k : ndarray of int64
        Number of values K of every site (>= 2).
    u_distance, u_sign : ndarray of float
        Uniforms on [0, 1): the distance (``1 + floor(u_distance * w)``, or
        ``floor(K ** u_distance)`` without a width), down if ``u_sign < 1/2`` else up.
    width : ndarray of int64, optional
        Step width w of every site, in 1 .. K-1; None: log-uniform distances.

    Returns
    -------
    ndarray of int64
        The proposed values, in 0 .. K-1 (possibly equal to ``x`` after a fold).

    Examples
    --------
    >>> import numpy as np
    >>> ordinal_moves(np.array([5, 0, 9]), np.array([10, 10, 10]),
    ...               np.array([0.0, 0.5, 0.5]), np.array([0.9, 0.1, 0.9])).tolist()
    [6, 2, 7]
    >>> ordinal_moves(np.array([5, 0]), np.array([10, 10]), np.array([0.99, 0.3]),
    ...               np.array([0.9, 0.1]), np.array([2, 2])).tolist()
    [7, 0]
    """
    if width is None:
        # K ** u is in [1, K); the minimum guards the rounding of u just below 1
        distance = np.minimum(np.exp(u_distance * np.log(k)).astype(np.int64), k - 1)
    else:
        distance = 1 + (u_distance * width).astype(np.int64)
    z = x + np.where(u_sign < 0.5, -distance, distance)
    # fold onto 0 .. K-1 with period 2K, the end values repeated: -1 -> 0, K -> K-1
    z = np.mod(z, 2 * k)
    return np.where(z < k, z, 2 * k - 1 - z)
