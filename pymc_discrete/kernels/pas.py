"""One Metropolis-Hastings step of the path auxiliary sampler (PAS) and its fast,
linearised form (PAFS), on binary and categorical sites.

A path ``x = s_0 -> s_1 -> ... -> s_L = y`` of L single-site moves is drawn, each from the
locally balanced proposal ``Q(s, s') = g(pi(s') / pi(s)) / Z(s)`` over the neighbours of
``s`` (one site changed to one other value; sites may repeat along the path), and the
whole path is accepted or rejected with the path auxiliary ratio (Algorithm 1 and eq. 6
of the path auxiliary paper):

    alpha = pi(y) prod_l Q'(s_l, s_{l-1}) / (pi(x) prod_l Q(s_{l-1}, s_l)).

**PAS** (exact ratios) evaluates the local log-ratios afresh at every point of the path
(Q' = Q). **PAFS** (linearised) scores every move of the forward path with the
first-order expansion of the log density at x, and every move of the reverse path with
the expansion at y, so one evaluation of the log density and its local ratios at y is
all a draw needs. The formula above is used in both cases; with exact ratios and a
locally balanced g it equals ``Z(x) / Z(y)``, but computing the general form keeps the
chain exact even if the "exact" ratios were not.

Ratios are kept as a *potential table* ``P`` anchored at a point a: ``P[i, c]`` is the
log-ratio of moving site i from ``a_i`` to c, ``P[i, a_i] = 0``, and ``-inf`` marks
impossible values (padding of sites with fewer categories, moves with NaN or -inf log
density). Under the linearisation at a, the log-ratio of moving site i from any value
b to c is ``P[i, c] - P[i, b]``, so after a move only the moved site's weights change.
The site weights live in the leaves of a sum tree (every node the sum of its children,
recomputed, never updated by differences, so no cancellation builds up):
drawing a move and updating a site cost O(K + log N), and a PAFS path costs
O(N + L (K + log N)).

Tables with two values per site (binary blocks) take a fast path with the same proposal
and the same numbers (:mod:`pymc_discrete.kernels.path_moves`, which holds the moves a
path is made of): a site at value b has exactly one
move, to ``1 - b``, with log-ratio ``d = P[i, 1 - b] - P[i, b]``, and after the move its
only move has log-ratio ``-d``. So a move costs one draw from the sum tree, one ``exp``
(the moved site's new weight) and one ``log`` (the total), and the reverse walk, which
only scores moves, keeps a compensated running total instead of a tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.common import (
    kernel_seed,
    metropolis_hastings,
    probabilistic_round,
)
from pymc_discrete.kernels.jit import njit_cached
from pymc_discrete.kernels.path_moves import (
    binary_forward,
    binary_reverse,
    binary_weights_at,
    binary_weights_reusing,
    linearised_forward,
    linearised_reverse,
    move_logprob,
    move_site,
    seeded_draw_move,
    site_weights_at,
    site_weights_reusing,
)
from pymc_discrete.kernels.ratios import potential_table
from pymc_discrete.kernels.sum_tree import (
    tree_from_leaves,
)

__all__ = [
    "PathState",
    "PathStepInfo",
    "draw_path_length",
    "init_path_state",
    "pas_step",
    "pafs_step",
    "path_length_contrast",
    "path_logprob",
]

#: ``x -> (log density, local log-ratios)``: shape (N,) for binary sites (the ratio of
#: flipping each site) or (N, K) for categorical sites (NaN at the current values).
LogpAndRatios = Callable[[np.ndarray], tuple[float, np.ndarray]]

#: Upper bound of the rounded mean path length (the largest int32).
_MAX_HALF_LENGTH = 2**31 - 1


class PathState(NamedTuple):
    """State of a path auxiliary chain.

    Attributes
    ----------
    x : ndarray of int64, shape (N,)
        The point.
    logp : float
        Its log density.
    potentials : ndarray of float64, shape (N, K)
        Potential table anchored at ``x`` (module docstring); K = 2 for binary sites.
    log_scale : float
        The site weights are ``sum_c g(exp(P[i, c])) / exp(log_scale)``.
    site_weights : ndarray of float64, shape (N,)
        Scaled total weight of moving each site.

    Examples
    --------
    >>> import numpy as np
    >>> def target(x):
    ...     x = np.asarray(x)
    ...     return 0.5 * x.sum(), 0.5 * (1 - 2 * x)
    >>> state = init_path_state(np.array([0, 1]), target, 1)
    >>> state.potentials.tolist()
    [[0.0, 0.5], [-0.5, 0.0]]
    """

    x: np.ndarray
    logp: float
    potentials: np.ndarray
    log_scale: float
    site_weights: np.ndarray


class PathStepInfo(NamedTuple):
    """What one path step did: :class:`~pymc_discrete.kernels.common.StepInfo`'s fields
    and the Hamming distance of the proposal.

    Attributes
    ----------
    accept_prob : float
        ``min(1, exp(log_alpha))`` of the proposal (0 if the path was impossible).
    accepted : bool
        Whether the proposal became the new state.
    n_proposed : int
        The path length L.
    distance : int
        Number of sites at which the proposal (the end of the path) differs from the
        current point, accepted or not (0 if the path was impossible); ``accept_prob *
        distance`` is the step's expected jump.

    Examples
    --------
    >>> PathStepInfo(0.5, False, 3, 1).distance
    1
    """

    accept_prob: float
    accepted: bool
    n_proposed: int
    distance: int


def path_length_contrast(scale: float, length: int) -> float:
    """Weight of a path of ``length`` moves in the comparison of long and short paths at
    mean length X = ``scale``: positive if L > X, negative if L < X, 0 if L = X, scaled
    so that ``E[contrast * g(L)] = min(P(L > X), P(L < X)) (E[g | L > X] - E[g | L < X])``
    for any g, under the path-length prior of :func:`draw_path_length` (X rounded
    probabilistically, then L uniform on {1, ..., 2X - 1}). The weights lie in [-1, 1].

    Examples
    --------
    With X = 1.5, L = 1 has probability 2/3 and L in {2, 3} 1/3:

    >>> path_length_contrast(1.5, 1), path_length_contrast(1.5, 2)
    (-0.5, 1.0)
    >>> path_length_contrast(3.0, 3)
    0.0
    """
    below, above = _path_length_sides(scale)
    if length > scale and above > 0.0:
        return min(1.0, below / above)
    if length < scale and below > 0.0:
        return -min(1.0, above / below)
    return 0.0


def _path_length_sides(scale: float) -> tuple[float, float]:
    """``P(L < X)`` and ``P(L > X)`` under the path-length prior with mean ``scale``."""
    base = max(1, min(math.floor(scale), _MAX_HALF_LENGTH))
    frac = scale - base if base < _MAX_HALF_LENGTH else 0.0
    below = above = 0.0
    for half, weight in ((base, 1.0 - frac), (base + 1, frac)):
        if weight <= 0.0:
            continue
        n = 2 * half - 1
        below += weight * min(max(math.ceil(scale) - 1, 0), n) / n
        above += weight * min(max(n - math.floor(scale), 0), n) / n
    return below, above


# ---------------------------------------------------------------------------------------
# Steps


def init_path_state(
    x: np.ndarray, logp_and_ratios: LogpAndRatios, code: int, previous: PathState | None = None
) -> PathState:
    """Build the state of a path auxiliary chain at ``x``.

    Parameters
    ----------
    x : ndarray of int64, shape (N,)
    logp_and_ratios : callable
        ``x -> (logp, local log-ratios)``, shape (N,) for binary or (N, K) for categorical
        sites.
    code : int
        Weight function code.
    previous : PathState, optional
        A nearby state: the weights of sites whose value and ratios are unchanged are
        copied from it instead of recomputed.

    Returns
    -------
    PathState

    Examples
    --------
    >>> import numpy as np
    >>> table = np.array([[np.nan, 0.2, -np.inf], [0.1, np.nan, 0.4]])
    >>> state = init_path_state(np.array([0, 1]), lambda x: (0.0, table), 1)
    >>> state.potentials[0].tolist()  # 0 at the current value, -inf impossible
    [0.0, 0.2, -inf]
    """
    x = np.asarray(x, dtype=np.int64)
    logp, ratios = logp_and_ratios(x)
    potentials = potential_table(x, ratios)
    two_valued = potentials.shape[1] == 2
    if previous is None:
        weights_at = binary_weights_at if two_valued else site_weights_at
        weights, log_scale = weights_at(x, potentials, code)
    else:
        reusing = binary_weights_reusing if two_valued else site_weights_reusing
        weights, log_scale = reusing(
            x, potentials, previous.x, previous.potentials, previous.site_weights,
            previous.log_scale, code,
        )
    return PathState(x, float(logp), potentials, float(log_scale), weights)


def draw_path_length(scale: float, rng: np.random.Generator) -> tuple[int, float, int]:
    """Draw a path length, the uniform of the Metropolis-Hastings decision and a seed for
    the compiled path walk, from one call to ``rng``.

    The mean length X (``scale``) is rounded probabilistically to an integer, then L is
    uniform on {1, ..., 2X - 1} (the paper's prior, with mean X). The prior does not
    depend on the state, as the path auxiliary construction requires.

    Returns
    -------
    length : int
    u_accept : float
    seed : int
        In [0, 2**32), for numba's generator in the compiled path walk.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> lengths = {draw_path_length(2.0, rng)[0] for _ in range(100)}
    >>> sorted(lengths)
    [1, 2, 3]
    """
    length, u_accept, seed = path_draw(float(scale), rng.random(4))
    return int(length), float(u_accept), int(seed)


@njit_cached
def path_draw(scale, u):
    """:func:`draw_path_length` from its four uniforms ``u`` (shared with the compiled
    loop of :mod:`~pymc_discrete.kernels.pas_loop`, which draws them with the same
    generator inside numba): ``(length, u_accept, seed)``."""
    half = probabilistic_round(scale, u[0], _MAX_HALF_LENGTH)
    return 1 + np.int64(u[1] * (2 * half - 1)), u[2], np.int64(u[3] * 4294967296.0)


def _finish(state: PathState, proposed: PathState, log_q_ratio: float, u_accept: float,
            length: int) -> tuple[PathState, PathStepInfo]:
    accepted, prob = metropolis_hastings(state.logp, proposed.logp, log_q_ratio, u_accept)
    distance = int(np.count_nonzero(proposed.x != state.x))
    if not accepted:
        return state, PathStepInfo(prob, False, length, distance)
    return proposed, PathStepInfo(prob, True, length, distance)


def pafs_step(
    state: PathState,
    scale: float,
    rng: np.random.Generator,
    logp_and_ratios: LogpAndRatios,
    code: int,
) -> tuple[PathState, PathStepInfo]:
    """One M-H step of the fast path auxiliary sampler (linearised proposals).

    Parameters
    ----------
    state : PathState
        Current state; its potentials are the local log-ratios at x (a first-order
        estimate from the gradient, in practice).
    scale : float
        Mean path length X >= 1.
    rng : numpy.random.Generator
    logp_and_ratios : callable
        ``y -> (logp(y), local log-ratios at y)``; called once, at the end of the path.
    code : int
        Weight function code.

    Returns
    -------
    new_state : PathState
    info : PathStepInfo
        ``n_proposed`` is the path length L, ``distance`` the Hamming distance of the
        path's end from x.

    Examples
    --------
    >>> import numpy as np
    >>> def target(x):  # independent sites: the linearisation is exact
    ...     x = np.asarray(x)
    ...     return 0.5 * x.sum(), 0.5 * (1 - 2 * x)
    >>> rng = np.random.default_rng(0)
    >>> state = init_path_state(np.zeros(20, dtype=np.int64), target, 1)
    >>> new_state, info = pafs_step(state, 4.0, rng, target, 1)
    >>> 1 <= info.n_proposed <= 7, bool(np.count_nonzero(new_state.x != state.x) <= info.n_proposed)
    (True, True)
    """
    length, u_accept, seed = draw_path_length(scale, rng)
    two_valued = state.potentials.shape[1] == 2
    forward = binary_forward if two_valued else linearised_forward
    reverse = binary_reverse if two_valued else linearised_reverse
    y, sites, previous, logq_forward = forward(
        state.x, state.potentials, state.log_scale, state.site_weights, length, code, seed
    )
    if not logq_forward > -np.inf:
        return state, PathStepInfo(0.0, False, length, 0)
    proposed = init_path_state(y, logp_and_ratios, code, previous=state)
    logq_reverse = reverse(
        y, proposed.potentials, proposed.log_scale, proposed.site_weights, sites, previous,
        code,
    )
    return _finish(state, proposed, logq_reverse - logq_forward, u_accept, length)


def pas_step(
    state: PathState,
    scale: float,
    rng: np.random.Generator,
    logp_and_ratios: LogpAndRatios,
    code: int,
) -> tuple[PathState, PathStepInfo]:
    """One M-H step of the path auxiliary sampler with exact local ratios at every point
    of the path (L evaluations of the ratios per draw).

    Parameters
    ----------
    state : PathState
        Current state, with exact local log-ratios.
    scale : float
        Mean path length X >= 1.
    rng : numpy.random.Generator
    logp_and_ratios : callable
        ``z -> (logp(z), exact local log-ratios at z)``; called at every point of the
        path (L times per step).
    code : int
        Weight function code.

    Returns
    -------
    new_state : PathState
    info : PathStepInfo
        As :func:`pafs_step`.

    Examples
    --------
    >>> import numpy as np
    >>> def target(x):
    ...     x = np.asarray(x)
    ...     return 0.5 * x.sum(), 0.5 * (1 - 2 * x)
    >>> rng = np.random.default_rng(0)
    >>> state = init_path_state(np.zeros(20, dtype=np.int64), target, 1)
    >>> state, info = pas_step(state, 2.0, rng, target, 1)
    >>> 1 <= info.n_proposed <= 3
    True
    """
    length, u_accept, _ = draw_path_length(scale, rng)
    current = state
    tree = tree_from_leaves(current.site_weights)
    log_q_ratio = 0.0
    for _ in range(length):
        z = current.x.copy()
        i, c, logq_forward = seeded_draw_move(
            tree, current.potentials, z, current.log_scale, code, kernel_seed(rng)
        )
        if i < 0:
            return state, PathStepInfo(0.0, False, length, 0)
        z[i] = c
        following = init_path_state(z, logp_and_ratios, code, previous=current)
        tree = tree_from_leaves(following.site_weights)  # also the next move's tree
        logq_reverse = move_logprob(
            tree, following.potentials, z, i, current.x[i], following.log_scale, code
        )
        log_q_ratio += logq_reverse - logq_forward
        current = following
    return _finish(state, current, log_q_ratio, u_accept, length)


def path_logprob(
    potentials: np.ndarray, start: np.ndarray, moves: list[tuple[int, int]], code: int
) -> float:
    """Log-probability that the linearised proposal anchored by ``potentials`` walks
    ``moves`` from ``start`` (for tests and diagnostics).

    Parameters
    ----------
    potentials : ndarray, shape (N, K)
        Potential table (its anchor need not be ``start``).
    start : ndarray of int64, shape (N,)
    moves : list of (site, new value)
    code : int

    Returns
    -------
    float
    """
    z = np.asarray(start, dtype=np.int64).copy()
    weights, log_scale = site_weights_at(z, potentials, code)
    tree = tree_from_leaves(weights)
    total = 0.0
    for i, c in moves:
        total += move_logprob(tree, potentials, z, i, c, log_scale, code)
        log_scale = move_site(tree, potentials, z, i, c, log_scale, code)
    return total
