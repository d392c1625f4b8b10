"""Several PAS or PAFS steps on binary or categorical sites inside one compiled loop.

:func:`~pymc_discrete.kernels.pas.pafs_step` and :func:`~pymc_discrete.kernels.pas.pas_step`
call the log density from Python: once per step (PAFS) or once per move of the path
(PAS). Here the log density is itself a numba-compiled function (for instance the
NUMBA-mode build of a PyTensor graph), called from inside the loop, so ``n_steps``
Metropolis-Hastings steps cost one call from Python.

The chain is exactly the one the Python steps produce with the same function and
generator. The loop takes the chain's ``numpy.random.Generator`` itself: numba draws
from its bit generator, so ``rng.random(4)`` (the path length, the acceptance uniform and
the seed of a linearised path, :func:`~pymc_discrete.kernels.pas.draw_path_length`) and
``rng.integers(0, 2**32)`` (the seed of every move of an exact path,
:func:`~pymc_discrete.kernels.common.kernel_seed`) read the same numbers in the same
order as numpy does in the Python steps, and leave the generator where they would (the
32-bit draws share the bit generator's buffered half word with numpy's). Everything else
is the same compiled helpers of :mod:`~pymc_discrete.kernels.pas` called in the same
order on the same arrays: the path walks, the reuse of unchanged site weights, the
Metropolis-Hastings decision. The Generator is unboxed once per loop, not per step
(unboxing it costs more than a step's arithmetic: :mod:`pymc_discrete.kernels`,
"Randomness").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np
from numba import types
from numba.extending import overload

from pymc_discrete.kernels.albp_loop import _evaluate, _evaluate_first_class, evaluator
from pymc_discrete.kernels.common import metropolis_hastings
from pymc_discrete.kernels.first_class import FirstClassTarget, calling_first_class
from pymc_discrete.kernels.pas import (
    PathState,
    init_path_state,
    path_draw,
)
from pymc_discrete.kernels.path_moves import (
    binary_forward,
    binary_reverse,
    binary_weights_reusing,
    linearised_forward,
    linearised_reverse,
    move_logprob,
    seeded_draw_move,
    site_weights_reusing,
)
from pymc_discrete.kernels.ratios import (
    _potentials_from_flips,
    _potentials_from_table,
    potential_table,
)
from pymc_discrete.kernels.sum_tree import tree_from_leaves

__all__ = ["PathStepsInfo", "first_class_pas_loop", "init_compiled_path_state", "pas_steps",
           "specialise_pas_loop"]

#: ``(x as float64, *extra) -> (log density, local log-ratios)``, numba-compiled
CompiledTarget = Callable[..., tuple]


class PathStepsInfo(NamedTuple):
    """What several path steps did, one entry per step (the fields of
    :class:`~pymc_discrete.kernels.pas.PathStepInfo` as arrays).

    Attributes
    ----------
    accept_prob : ndarray of float64
        ``min(1, exp(log_alpha))`` of each proposal (0 for impossible paths).
    accepted : ndarray of bool
    n_proposed : ndarray of int64
        The path length L of each step.
    distance : ndarray of int64
        Hamming distance of each proposal from the point it started at (0 for impossible
        paths).
    """

    accept_prob: np.ndarray
    accepted: np.ndarray
    n_proposed: np.ndarray
    distance: np.ndarray

    @classmethod
    def from_steps(cls, steps: list) -> PathStepsInfo:
        """Collect the :class:`~pymc_discrete.kernels.pas.PathStepInfo` of consecutive
        steps (as :meth:`~pymc_discrete.kernels.common.StepsInfo.from_steps`)."""
        return cls(
            np.array([s.accept_prob for s in steps], dtype=np.float64),
            np.array([s.accepted for s in steps], dtype=np.bool_),
            np.array([s.n_proposed for s in steps], dtype=np.int64),
            np.array([s.distance for s in steps], dtype=np.int64),
        )


def _potentials(x, ratios):
    """:func:`~pymc_discrete.kernels.ratios.potential_table`, callable from numba."""
    return potential_table(x, ratios)


@overload(_potentials)
def _potentials_compiled(x, ratios):
    # the layout is a property of the target's type: pick the conversion at compile time
    if isinstance(ratios, types.Array) and ratios.ndim == 1:
        return lambda x, ratios: _potentials_from_flips(x, ratios)
    return lambda x, ratios: _potentials_from_table(x, ratios)


@numba.njit  # not cached: it calls the target, a dispatcher (as albp_loop's _evaluate)
def _state_at(target, extra, y, old_x, old_potentials, old_weights, old_log_scale, code):
    """``init_path_state(y, target, code, previous=old)`` inside numba: the log density,
    potential table, site weights and log scale at y."""
    logp, ratios = _evaluate(target, extra, y)
    potentials = _potentials(y, ratios)
    # two values per site: the binary fast path, as init_path_state chooses it (by the
    # table's width, so a categorical block of two-valued sites takes it too)
    if potentials.shape[1] == 2:
        weights, log_scale = binary_weights_reusing(
            y, potentials, old_x, old_potentials, old_weights, old_log_scale, code)
    else:
        weights, log_scale = site_weights_reusing(
            y, potentials, old_x, old_potentials, old_weights, old_log_scale, code)
    return logp, potentials, weights, log_scale


@numba.njit  # not cached, as _state_at
def _pafs_proposal(target, extra, x, logp, potentials, log_scale, weights, length, seed, code):
    """:func:`~pymc_discrete.kernels.pas.pafs_step`'s proposal: the end y of a linearised
    path, its state and ``log q(y -> x) - log q(x -> y)`` (``ok`` False when the path
    was impossible)."""
    if potentials.shape[1] == 2:
        y, sites, previous, logq_forward = binary_forward(
            x, potentials, log_scale, weights, length, code, seed)
    else:
        y, sites, previous, logq_forward = linearised_forward(
            x, potentials, log_scale, weights, length, code, seed)
    if not logq_forward > -np.inf:
        return False, x, logp, potentials, log_scale, weights, 0.0
    logp_y, potentials_y, weights_y, log_scale_y = _state_at(
        target, extra, y, x, potentials, weights, log_scale, code)
    if potentials_y.shape[1] == 2:
        logq_reverse = binary_reverse(
            y, potentials_y, log_scale_y, weights_y, sites, previous, code)
    else:
        logq_reverse = linearised_reverse(
            y, potentials_y, log_scale_y, weights_y, sites, previous, code)
    return True, y, logp_y, potentials_y, log_scale_y, weights_y, logq_reverse - logq_forward


@numba.njit  # not cached, as _state_at
def _pas_proposal(target, extra, x, logp, potentials, log_scale, weights, length, rng, code):
    """:func:`~pymc_discrete.kernels.pas.pas_step`'s proposal: a path of ``length``
    moves, each drawn from the exact ratios at its start (one seed from ``rng`` per
    move), the state at its end and the log ratio of the reverse and forward path
    probabilities (``ok`` False when a move was impossible)."""
    tree = tree_from_leaves(weights)
    log_q_ratio = 0.0
    z_x, z_logp, z_potentials, z_log_scale, z_weights = x, logp, potentials, log_scale, weights
    for _ in range(length):
        z = z_x.copy()
        seed = rng.integers(0, 4294967296)  # kernel_seed(rng), the same number
        i, c, logq_forward = seeded_draw_move(tree, z_potentials, z, z_log_scale, code, seed)
        if i < 0:
            return False, x, logp, potentials, log_scale, weights, 0.0
        z[i] = c
        logp_f, potentials_f, weights_f, log_scale_f = _state_at(
            target, extra, z, z_x, z_potentials, z_weights, z_log_scale, code)
        tree = tree_from_leaves(weights_f)  # also the next move's tree
        logq_reverse = move_logprob(tree, potentials_f, z, i, z_x[i], log_scale_f, code)
        log_q_ratio += logq_reverse - logq_forward
        z_x, z_logp, z_potentials, z_log_scale, z_weights = (
            z, logp_f, potentials_f, log_scale_f, weights_f)
    return True, z_x, z_logp, z_potentials, z_log_scale, z_weights, log_q_ratio


@numba.njit  # not cached, as _state_at
def _pas_loop(target, extra, x, logp, potentials, log_scale, weights, scale, rng, n_steps,
              code, linearised):
    accept_probs = np.zeros(n_steps)
    accepted = np.zeros(n_steps, np.bool_)
    lengths = np.empty(n_steps, np.int64)
    distances = np.zeros(n_steps, np.int64)
    for j in range(n_steps):
        length, u_accept, seed = path_draw(scale, rng.random(4))
        lengths[j] = length
        if linearised:
            ok, y, logp_y, potentials_y, log_scale_y, weights_y, log_q_ratio = _pafs_proposal(
                target, extra, x, logp, potentials, log_scale, weights, length, seed, code)
        else:
            ok, y, logp_y, potentials_y, log_scale_y, weights_y, log_q_ratio = _pas_proposal(
                target, extra, x, logp, potentials, log_scale, weights, length, rng, code)
        if not ok:  # an impossible path: probability 0, distance 0, as the Python steps
            continue
        move, prob = metropolis_hastings(logp, logp_y, log_q_ratio, u_accept)
        accept_probs[j] = prob
        distances[j] = np.count_nonzero(y != x)
        if move:
            accepted[j] = True
            x, logp, potentials, log_scale, weights = (
                y, logp_y, potentials_y, log_scale_y, weights_y)
    return x, logp, potentials, log_scale, weights, accept_probs, accepted, lengths, distances


# The loop again, calling the target as a first-class function (a pointer): cached on
# disk (:mod:`~pymc_discrete.kernels.first_class`)
_state_at_first_class = calling_first_class(_state_at, {"_evaluate": _evaluate_first_class})
_pas_loop_first_class = calling_first_class(_pas_loop, {
    "_pafs_proposal": calling_first_class(_pafs_proposal, {"_state_at": _state_at_first_class}),
    "_pas_proposal": calling_first_class(_pas_proposal, {"_state_at": _state_at_first_class}),
})


def first_class_pas_loop(target: CompiledTarget, x: np.ndarray, extra: tuple) -> Callable:
    """The compiled PAS/PAFS loop calling ``target`` through a pointer: the same chain as
    :func:`specialise_pas_loop`'s, from a loop numba caches on disk (compiled once per
    machine and set of types, not once per process).

    Parameters
    ----------
    target : numba dispatcher
        As for :func:`specialise_pas_loop`, star-args.
    x, extra
        A point and the further arguments, for the target's signature.

    Returns
    -------
    callable
        The loop, to pass to :func:`pas_steps`.
    """
    first_class = FirstClassTarget(target, np.asarray(x, dtype=np.float64), tuple(extra))

    def pas_loop(extra, *args):
        return _pas_loop_first_class(first_class, extra, *args)

    return pas_loop


def specialise_pas_loop(target: CompiledTarget) -> Callable:
    """The compiled PAS/PAFS loop with ``target`` built in.

    Calling a numba function with another numba function as an argument makes numba
    type that argument at every call, which costs more than a short loop's work; the
    specialised loop holds ``target`` as a constant instead. It is compiled at its first
    call, both proposals at once (and not cached on disk: it depends on ``target``).

    Parameters
    ----------
    target : numba dispatcher
        ``(y as float64, *extra) -> (log density, local log-ratios)``: shape (N,) for
        binary sites, (N, K) for categorical ones (NaN at the current values).

    Returns
    -------
    callable
        The loop, to pass to :func:`pas_steps`.
    """

    @numba.njit
    def pas_loop(extra, x, logp, potentials, log_scale, weights, scale, rng, n_steps, code,
                 linearised):
        return _pas_loop(target, extra, x, logp, potentials, log_scale, weights, scale, rng,
                         n_steps, code, linearised)

    return pas_loop


def init_compiled_path_state(
    x: np.ndarray, target: CompiledTarget, extra: tuple, code: int,
    previous: PathState | None = None, source: Callable | None = None,
) -> PathState:
    """:func:`~pymc_discrete.kernels.pas.init_path_state` from a compiled target.

    Parameters
    ----------
    x : ndarray of int64, shape (N,)
    target : numba dispatcher
        ``(x as float64, *extra) -> (log density (float or 0-d array), local log-ratios)``.
    extra : tuple
        Further arguments of ``target`` (e.g. the current values of a model's other
        variables).
    code : int
        Weight function code.
    previous : PathState, optional
        As in :func:`~pymc_discrete.kernels.pas.init_path_state`.
    source : callable, optional
        A Python callable running ``target`` itself: see
        :func:`~pymc_discrete.kernels.albp_loop.init_compiled_lb_state`.

    Returns
    -------
    PathState
    """
    x = np.ascontiguousarray(x, dtype=np.int64)
    return init_path_state(x, evaluator(target, extra, source), code, previous=previous)


def pas_steps(
    state: PathState,
    scale: float,
    rng: np.random.Generator,
    n_steps: int,
    loop: Callable,
    extra: tuple,
    code: int,
    linearised: bool,
) -> tuple[PathState, PathStepsInfo]:
    """``n_steps`` M-H steps of PAFS (``linearised``) or PAS in one compiled loop.

    The same chain, bit for bit, as ``n_steps`` calls of
    :func:`~pymc_discrete.kernels.pas.pafs_step` (or
    :func:`~pymc_discrete.kernels.pas.pas_step`) with ``logp_and_ratios = lambda y:
    target(y, *extra)`` (``target`` the function the loop was specialised on) and the
    same generator, which ends where those calls leave it (see the module docstring).

    Parameters
    ----------
    state : PathState
        Current state (from :func:`init_compiled_path_state` or
        :func:`~pymc_discrete.kernels.pas.init_path_state` with the same target).
    scale : float
        Mean path length X >= 1, the same for every step of the loop.
    rng : numpy.random.Generator
        Source of randomness, drawn from inside the loop.
    n_steps : int
        Number of Metropolis-Hastings steps.
    loop : callable
        The loop specialised on the target (:func:`specialise_pas_loop`).
    extra : tuple
        Further arguments of ``target``.
    code : int
        Weight function code.
    linearised : bool
        PAFS (one evaluation of the target per step, the path scored with the
        linearisations at its two ends) if True, else PAS (an evaluation at every point
        of the path: exact when the target's ratios are).

    Returns
    -------
    new_state : PathState
    info : PathStepsInfo
        Acceptance probability, decision, path length and Hamming distance of every step.

    Examples
    --------
    >>> import numba, numpy as np
    >>> @numba.njit
    ... def target(x, log_odds):  # independent sites
    ...     return np.sum(log_odds * x), log_odds * (1.0 - 2.0 * x)
    >>> extra = (np.full(10, 0.5),)
    >>> state = init_compiled_path_state(np.zeros(10, dtype=np.int64), target, extra, 1)
    >>> loop = specialise_pas_loop(target)
    >>> state, info = pas_steps(state, 3.0, np.random.default_rng(0), 5, loop, extra, 1,
    ...                         linearised=True)
    >>> bool(np.all((1 <= info.n_proposed) & (info.n_proposed <= 5)))
    True
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    n_steps = int(n_steps)
    if n_steps < 0:
        raise ValueError(f"n_steps must be >= 0, got {n_steps}")
    x, logp, potentials, log_scale, weights, probs, accepted, lengths, distances = loop(
        tuple(extra), np.ascontiguousarray(state.x, dtype=np.int64), float(state.logp),
        np.ascontiguousarray(state.potentials, dtype=np.float64), float(state.log_scale),
        np.ascontiguousarray(state.site_weights, dtype=np.float64), float(scale), rng,
        n_steps, int(code), bool(linearised),
    )
    return (
        PathState(x, float(logp), potentials, float(log_scale), weights),
        PathStepsInfo(probs, accepted, lengths, distances),
    )
