"""Joint Gibbs: the whole block drawn at once from its exact joint conditional.

A block whose sites have ``K_1, ..., K_N`` values has ``S = K_1 K_2 ... K_N`` joint
states. When S is small (a few thousand at most) every one of them can be listed once,
the log density evaluated at all of them given everything else, and the new state drawn
from the normalised ``p(s) = exp(l(s) - max l) / sum_t exp(l(t) - max l)``: an
independent draw from the conditional, whatever the current state.

Single-site moves cross a valley of low probability only by visiting it: two causes of
one observed effect (rain or sprinkler, given wet grass) leave the posterior on two
states whose path goes through a third of probability 0.004, which single-site Gibbs
must visit to move from one to the other. The joint draw jumps between any two states of
positive probability in one step, so its transition matrix is ``T(x, y) = p(y)``:
reversible with respect to p, irreducible on the states of positive probability and
aperiodic (``T(x, x) = p(x) > 0``).

States are listed in the order of ``itertools.product`` over the sites' values (the
last site fastest). States whose log density is -inf or NaN get probability zero; a
conditional without any state of positive probability is an error, as is a log density
of +inf (an improper conditional). The draw takes a single uniform from the chain's
``numpy.random.Generator`` and inverts the cumulative distribution; the cumulative sums
are computed once per value of the other variables and kept in the state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.common import StepInfo

__all__ = [
    "JOINT_MAX_STATES",
    "JointState",
    "count_joint_states",
    "describe_count",
    "draw_from_cumulative",
    "init_joint_state",
    "joint_gibbs_step",
    "joint_index",
    "joint_probabilities",
    "joint_states",
]

#: Most joint states a block may have. Whenever another variable has changed, a draw
#: evaluates the terms that depend on the block at every joint state: S rows of a batched
#: call, against 2 N rows for a single-site sweep of N binary sites. At 4096 states (12
#: binary sites) a draw costs the evaluation of about 170 such sweeps, a price worth
#: paying where single-site moves must cross states of low probability, and one that
#: doubles with every further binary site. At this limit the evaluation also stays one
#: batched call (``pymc_discrete.pymc.model.exact.MAX_BATCH_VALUES`` = 2**22 values) for blocks
#: of up to 1024 terms, and the listed states take at most 4096 x 12 integers (every site
#: has at least two values).
JOINT_MAX_STATES = 4096


class JointState(NamedTuple):
    """State of a joint Gibbs chain, with the conditional it was drawn from.

    Attributes
    ----------
    x : ndarray of int64, shape (N,)
        The point (site indices).
    logp : float
        Its log density (up to a constant that does not depend on the block).
    state_logps : ndarray of float64, shape (S,)
        The log density at every joint state given the other variables' values the
        state was built at (-inf or NaN where impossible).
    cumulative : ndarray of float64, shape (S,)
        Cumulative sums of ``exp(state_logps - max)`` (0 for impossible states): the
        distribution the next draw inverts.

    Examples
    --------
    >>> import numpy as np
    >>> state = init_joint_state(np.array([1]), np.array([0.0, np.log(3.0)]), [2])
    >>> state.cumulative.tolist()
    [0.3333333333333333, 1.3333333333333333]
    """

    x: np.ndarray
    logp: float
    state_logps: np.ndarray
    cumulative: np.ndarray


def count_joint_states(n_values: Sequence[int] | np.ndarray) -> int:
    """The number of joint states of sites with ``n_values`` values each (an exact
    Python integer: the product of many sites' counts overflows 64 bits).

    Parameters
    ----------
    n_values : sequence of int
        Number of values of every site.

    Returns
    -------
    int

    Examples
    --------
    >>> count_joint_states([2, 3, 2]), count_joint_states([])
    (12, 1)
    >>> count_joint_states([2] * 100) == 2**100
    True
    """
    return math.prod(int(k) for k in np.ravel(n_values))


def joint_states(n_values: Sequence[int] | np.ndarray,
                 max_states: int = JOINT_MAX_STATES) -> np.ndarray:
    """Every joint state of sites with ``n_values`` values, in the order of
    ``itertools.product`` (the last site fastest).

    Parameters
    ----------
    n_values : sequence of int
        Number of values of every site (each at least 1).
    max_states : int
        Refuse more joint states than this.

    Returns
    -------
    ndarray of int64, shape (S, N)
        Row ``s`` is the state whose index is ``s`` (:func:`joint_index`).

    Raises
    ------
    ValueError
        If there are more than ``max_states`` joint states.

    Examples
    --------
    >>> joint_states([2, 3]).tolist()
    [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    """
    ks = tuple(int(k) for k in np.ravel(n_values))
    total = count_joint_states(ks)
    if total > max_states:
        raise ValueError(
            f"{len(ks)} sites with {describe_count(total)} joint states: more than the "
            f"{max_states} that may be enumerated"
        )
    if not ks:
        return np.zeros((1, 0), dtype=np.int64)
    return np.stack(np.unravel_index(np.arange(total), ks), axis=1).astype(np.int64)


def describe_count(total: int) -> str:
    """``total`` with thousands separators, or as a power of ten when it is huge.

    Examples
    --------
    >>> describe_count(8192), describe_count(2**100)
    ('8,192', 'about 10^30')
    """
    if total < 10**12:
        return f"{total:,}"
    return f"about 10^{len(str(total)) - 1}"


def joint_index(x: np.ndarray, n_values: Sequence[int] | np.ndarray) -> int:
    """The row of state ``x`` in :func:`joint_states`.

    Parameters
    ----------
    x : ndarray of int64, shape (N,)
        Site indices, each below its number of values.
    n_values : sequence of int
        Number of values of every site.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> joint_index(np.array([1, 2]), [2, 3])
    5
    """
    ks = tuple(int(k) for k in np.ravel(n_values))
    if not ks:
        return 0
    return int(np.ravel_multi_index(tuple(int(v) for v in np.ravel(x)), ks))


def _weights(state_logps: np.ndarray) -> np.ndarray:
    """``exp(l - max l)`` over the finite log densities, 0 at -inf and NaN (raises when
    none is finite, or one is +inf)."""
    logps = np.asarray(state_logps, dtype=np.float64)
    if np.any(logps == np.inf):
        bad = int(np.flatnonzero(logps == np.inf)[0])
        raise ValueError(
            f"the log density is +inf at joint state {bad}: the conditional is improper"
        )
    possible = logps > -np.inf  # False at -inf and at NaN
    if not possible.any():
        raise ValueError(
            f"every one of the {logps.size} joint states has log density -inf or NaN: the "
            "conditional has no state of positive probability"
        )
    weights = np.zeros(logps.size)
    finite = logps[possible]
    # the largest state's weight is exactly 1: the sum is at least 1, never 0 or inf
    weights[possible] = np.exp(finite - finite.max())
    return weights


def joint_probabilities(state_logps: np.ndarray) -> np.ndarray:
    """The normalised conditional ``p(s) ∝ exp(l(s))`` over the joint states; 0 where
    the log density is -inf or NaN.

    Parameters
    ----------
    state_logps : ndarray of float64, shape (S,)
        Log density at every joint state (up to one constant).

    Returns
    -------
    ndarray of float64, shape (S,)

    Raises
    ------
    ValueError
        If no state has a finite log density, or one has +inf.

    Examples
    --------
    >>> import numpy as np
    >>> joint_probabilities(np.array([0.0, np.log(3.0), -np.inf, np.nan])).tolist()
    [0.25, 0.75, 0.0, 0.0]
    """
    weights = _weights(state_logps)
    return weights / weights.sum()


def draw_from_cumulative(cumulative: np.ndarray, u: float) -> int:
    """Inverse CDF: the first state whose cumulative weight exceeds ``u`` times the
    total, so state s is drawn for u in ``[c(s-1), c(s)) / c(S-1)``, an interval of
    length ``w(s) / sum w``; a state of weight 0 has an empty interval and is never drawn.

    Parameters
    ----------
    cumulative : ndarray of float64, shape (S,)
        Cumulative sums of non-negative weights, the last one positive.
    u : float
        A uniform draw on [0, 1).

    Returns
    -------
    int
        The drawn state's row in :func:`joint_states`.

    Examples
    --------
    >>> import numpy as np
    >>> c = np.cumsum([1.0, 0.0, 3.0])
    >>> draw_from_cumulative(c, 0.2), draw_from_cumulative(c, 0.25), draw_from_cumulative(c, 0.9)
    (0, 2, 2)
    """
    total = cumulative[-1]
    s = int(np.searchsorted(cumulative, u * total, side="right"))
    if s >= cumulative.size:
        # u * total rounded up to the total: the last state of positive weight (the
        # first whose cumulative sum reaches the total)
        s = int(np.searchsorted(cumulative, total, side="left"))
    return s


def init_joint_state(x: np.ndarray, state_logps: np.ndarray,
                     n_values: Sequence[int] | np.ndarray) -> JointState:
    """The state at ``x`` with the conditional at every joint state.

    Parameters
    ----------
    x : ndarray of int64, shape (N,)
        The current point (site indices).
    state_logps : ndarray of float64, shape (S,)
        Log density at every row of :func:`joint_states` given the other variables.
    n_values : sequence of int
        Number of values of every site.

    Returns
    -------
    JointState
        ``logp`` is the log density at ``x`` (-inf or NaN if ``x`` is impossible).

    Raises
    ------
    ValueError
        If no joint state has a finite log density, or one has +inf.

    Examples
    --------
    >>> import numpy as np
    >>> state = init_joint_state(np.array([0, 1]), np.log([1.0, 2.0, 3.0, 4.0]), [2, 2])
    >>> state.x.tolist(), round(state.logp, 6)
    ([0, 1], 0.693147)
    """
    logps = np.asarray(state_logps, dtype=np.float64)
    cumulative = np.cumsum(_weights(logps))
    x = np.asarray(x, dtype=np.int64)
    return JointState(x, float(logps[joint_index(x, n_values)]), logps, cumulative)


def joint_gibbs_step(state: JointState, rng: np.random.Generator,
                     states: np.ndarray) -> tuple[JointState, StepInfo]:
    """Draw the block's new joint state from its conditional, independently of the
    current one.

    Parameters
    ----------
    state : JointState
        The current state and its conditional (:func:`init_joint_state`).
    rng : numpy.random.Generator
        One uniform is drawn from it.
    states : ndarray of int64, shape (S, N)
        The joint states (:func:`joint_states`).

    Returns
    -------
    new_state : JointState
        The drawn state, with the same conditional.
    info : StepInfo
        An exact draw: ``accept_prob`` 1, ``accepted`` True; ``n_proposed`` the number
        of sites whose value changed.

    Examples
    --------
    >>> import numpy as np
    >>> states = joint_states([2, 2])
    >>> logps = np.array([-np.inf, 0.0, 0.0, -np.inf])  # only (0, 1) and (1, 0)
    >>> state = init_joint_state(np.array([0, 1]), logps, [2, 2])
    >>> new, info = joint_gibbs_step(state, np.random.default_rng(1), states)
    >>> new.x.tolist() in ([0, 1], [1, 0]), info.accept_prob
    (True, 1.0)
    """
    s = draw_from_cumulative(state.cumulative, float(rng.random()))
    x = states[s].copy()
    n_changed = int(np.count_nonzero(x != state.x))
    new = JointState(x, float(state.state_logps[s]), state.state_logps, state.cumulative)
    return new, StepInfo(1.0, True, n_changed)
