"""Several ALBP steps on binary or categorical sites inside one compiled loop.

:func:`~pymc_discrete.kernels.albp.albp_step` calls the log density from Python once per
step; here the log density is itself a numba-compiled function (for instance the NUMBA-mode
build of a PyTensor graph), called from inside the loop, so ``n_steps`` Metropolis-Hastings
steps cost one call from Python. The chain is exactly the one ``albp_step`` produces with
the same function and generator: step j reads the three uniforms ``rng.random((n_steps,
3))[j]``, the numbers ``n_steps`` calls of
:func:`~pymc_discrete.kernels.common.draw_proposal_size` would read, and uses them the
same way (the number of changes R, the acceptance decision, the seed of the picks). A
categorical block runs the same loop with :func:`~pymc_discrete.kernels.albp.albp_step`'s
categorical moves (the target then returns the (N, K) table of local log-ratios).
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np
from numba import types
from numba.extending import overload

from pymc_discrete.kernels.albp import (
    BinaryLBState,
    CategoricalLBState,
    _categorical_forward,
    _categorical_reverse,
    _flip,
    init_lb_state,
)
from pymc_discrete.kernels.common import StepsInfo, metropolis_hastings, number_of_changes
from pymc_discrete.kernels.first_class import FirstClassTarget, calling_first_class
from pymc_discrete.kernels.sampling import ordered_picks_logprob, sample_ordered_core
from pymc_discrete.kernels.weights import rebalanced_weights

__all__ = ["albp_steps", "first_class_albp_loop", "init_compiled_lb_state",
           "specialise_albp_loop", "specialise_albp_categorical_loop"]


def _as_float(value):
    """A float from a float or a 0-d array (what PyTensor's compiled functions return)."""
    return float(np.asarray(value))


@overload(_as_float)
def _as_float_compiled(value):
    if isinstance(value, types.Array) and value.ndim == 0:
        return lambda value: float(value[()])
    if isinstance(value, types.Array):  # any layout (PyTensor's outputs may be non-contiguous)
        return lambda value: float(np.ravel(value)[0])
    return lambda value: float(value)


def _as_float64_array(values):
    """``values`` as a C-contiguous float64 array (a copy only when it is not one)."""
    return np.ascontiguousarray(values, dtype=np.float64)


@overload(_as_float64_array)
def _as_float64_array_compiled(values):
    if values.dtype == types.float64:
        return lambda values: np.ascontiguousarray(values)
    return lambda values: np.ascontiguousarray(values).astype(np.float64)


# not cached: numba cannot cache a function specialised on another dispatcher
@numba.njit
def _evaluate(target, extra, y):
    """``target(y as float64, *extra)`` as ``(float logp, C-contiguous float64 ratios)``.

    The ratios are not copied when they already are such an array: the kernels never
    write into them."""
    logp, ratios = target(y.astype(np.float64), *extra)
    return _as_float(logp), _as_float64_array(ratios)


@numba.njit
def _evaluate_first_class(target, extra, y):
    """:func:`_evaluate` of a first-class target (:class:`FirstClassTarget`): the
    function of a star-args target takes its arguments as one tuple."""
    logp, ratios = target((y.astype(np.float64),) + extra)
    return _as_float(logp), _as_float64_array(ratios)


@numba.njit  # not cached, as _evaluate
def _albp_loop(target, extra, x, logp, ratios, weights, log_scale, scale, uniforms, code):
    n = x.size
    n_steps = uniforms.shape[0]
    accept_probs = np.zeros(n_steps)
    accepted = np.zeros(n_steps, np.bool_)
    proposed = np.empty(n_steps, np.int64)
    for j in range(n_steps):
        r = number_of_changes(scale, uniforms[j, 0], n)
        proposed[j] = r
        if r == 0:  # the step stays (trivially accepted), as albp_step's does
            accept_probs[j] = 1.0
            accepted[j] = True
            continue
        np.random.seed(np.int64(uniforms[j, 2] * 4294967296.0))
        picks = sample_ordered_core(weights, r)
        if picks.size == 0:  # fewer than r sites can move: nothing to propose
            continue
        y = _flip(x, picks)
        logq_forward = ordered_picks_logprob(weights, picks, False)
        logp_y, ratios_y = _evaluate(target, extra, y)
        weights_y, log_scale_y = rebalanced_weights(ratios_y, ratios, weights, log_scale, code)
        logq_reverse = ordered_picks_logprob(weights_y, picks, True)
        ok, prob = metropolis_hastings(logp, logp_y, logq_reverse - logq_forward, uniforms[j, 1])
        accept_probs[j] = prob
        if ok:
            accepted[j] = True
            x, logp, ratios, weights, log_scale = y, logp_y, ratios_y, weights_y, log_scale_y
    return x, logp, ratios, weights, log_scale, accept_probs, accepted, proposed


@numba.njit  # not cached, as _evaluate
def _albp_categorical_loop(target, extra, x, logp, table, weights, site_weights, log_scale,
                           scale, uniforms, code):
    n = x.size
    n_steps = uniforms.shape[0]
    accept_probs = np.zeros(n_steps)
    accepted = np.zeros(n_steps, np.bool_)
    proposed = np.empty(n_steps, np.int64)
    for j in range(n_steps):
        r = number_of_changes(scale, uniforms[j, 0], n)
        proposed[j] = r
        if r == 0:  # the step stays (trivially accepted), as albp_step's does
            accept_probs[j] = 1.0
            accepted[j] = True
            continue
        seed = np.int64(uniforms[j, 2] * 4294967296.0)
        y, picks, logq_forward = _categorical_forward(x, weights, site_weights, r, seed)
        if picks.size == 0:  # fewer than r sites can move: nothing to propose
            continue
        logp_y, table_y = _evaluate(target, extra, y)
        weights_y, site_weights_y, log_scale_y, logq_reverse = _categorical_reverse(
            x, table_y, table, weights, log_scale, code, picks)
        ok, prob = metropolis_hastings(logp, logp_y, logq_reverse - logq_forward, uniforms[j, 1])
        accept_probs[j] = prob
        if ok:
            accepted[j] = True
            x, logp, table, weights, site_weights, log_scale = (
                y, logp_y, table_y, weights_y, site_weights_y, log_scale_y)
    return x, logp, table, weights, site_weights, log_scale, accept_probs, accepted, proposed


#: ``(x as float64, *extra) -> (log density, local log-ratios)``, numba-compiled
CompiledTarget = Callable[..., tuple]

# The loops again, calling the target as a first-class function (a pointer): their
# signature names the target's types, not the target itself, so numba caches them on disk,
# and a new process (or a new model with the same types) loads them.
_albp_loop_cached = calling_first_class(_albp_loop, {"_evaluate": _evaluate_first_class})
_albp_categorical_loop_cached = calling_first_class(
    _albp_categorical_loop, {"_evaluate": _evaluate_first_class})


def specialise_albp_loop(target: CompiledTarget) -> Callable:
    """The compiled ALBP loop with ``target`` built in.

    Calling a numba function with another numba function as an argument makes numba
    type that argument at every call, which costs more than a short loop's work; the
    specialised loop holds ``target`` as a constant instead. It is compiled at its first
    call (and not cached on disk: it depends on ``target``).

    Parameters
    ----------
    target : numba dispatcher
        ``(y as float64, *extra) -> (log density, local log-ratios)``.

    Returns
    -------
    callable
        The loop, to pass to :func:`albp_steps`.
    """

    @numba.njit
    def albp_loop(extra, x, logp, ratios, weights, log_scale, scale, uniforms, code):
        return _albp_loop(target, extra, x, logp, ratios, weights, log_scale, scale,
                          uniforms, code)

    return albp_loop


def specialise_albp_categorical_loop(target: CompiledTarget) -> Callable:
    """The compiled ALBP loop of categorical blocks with ``target`` built in (as
    :func:`specialise_albp_loop`; ``target`` returns the (N, K) table of local
    log-ratios).

    Parameters
    ----------
    target : numba dispatcher
        ``(y as float64, *extra) -> (log density, (N, K) local log-ratios)``.

    Returns
    -------
    callable
        The loop, to pass to :func:`albp_steps` with a categorical state.
    """

    @numba.njit
    def albp_categorical_loop(extra, x, logp, table, weights, site_weights, log_scale, scale,
                              uniforms, code):
        return _albp_categorical_loop(target, extra, x, logp, table, weights, site_weights,
                                      log_scale, scale, uniforms, code)

    return albp_categorical_loop


def first_class_albp_loop(target: CompiledTarget, x: np.ndarray, extra: tuple,
                          categorical: bool) -> Callable:
    """The compiled ALBP loop calling ``target`` through a pointer: the same chain as
    :func:`specialise_albp_loop`'s, from a loop numba caches on disk (compiled once per
    machine and signature, not once per process), at the cost of boxing the pointer at
    every call of the loop (:mod:`~pymc_discrete.kernels.first_class`).

    Parameters
    ----------
    target : numba dispatcher
        As for :func:`specialise_albp_loop`.
    x, extra
        A point and the further arguments, for the target's signature.
    categorical : bool
        Whether the block is categorical (the target returns an (N, K) table).

    Returns
    -------
    callable
        The loop, to pass to :func:`albp_steps`.
    """
    first_class = FirstClassTarget(target, np.asarray(x, dtype=np.float64), tuple(extra))
    loop = _albp_categorical_loop_cached if categorical else _albp_loop_cached

    def albp_loop(extra, *args):
        return loop(first_class, extra, *args)

    return albp_loop


def init_compiled_lb_state(
    x: np.ndarray, target: CompiledTarget, extra: tuple, code: int,
    source: Callable | None = None,
) -> BinaryLBState:
    """The state of a locally balanced chain at ``x``, from a compiled target.

    Parameters
    ----------
    x : ndarray of int64, shape (N,)
        A point in {0, 1}^N, or of categorical sites.
    target : numba dispatcher
        ``(x as float64, *extra) -> (log density (float or 0-d array), local log-ratios
        of the N flips or their (N, K) table)``.
    extra : tuple
        Further arguments of ``target`` (e.g. the current values of a model's other
        variables).
    code : int
        Weight function code (:data:`~pymc_discrete.kernels.weights.WEIGHT_CODES`).
    source : callable, optional
        A Python callable ``x -> (logp, ratios)`` running ``target`` itself (e.g. the
        :class:`~pymc_discrete.pymc.model.compiled.CompiledRatios` it belongs to). Without it
        the state is computed by a numba function specialised on ``target``, compiled
        again in every process: numba cannot cache it.

    Returns
    -------
    BinaryLBState or CategoricalLBState
    """
    x = np.ascontiguousarray(x, dtype=np.int64)
    return init_lb_state(x, evaluator(target, extra, source), code)


def evaluator(target: CompiledTarget, extra: tuple, source: Callable | None) -> Callable:
    """``y -> (float logp, C-contiguous float64 ratios)`` of a compiled target: through
    its Python ``source`` when there is one (the same compiled code, so the same values
    to the bit, without compiling :func:`_evaluate` for ``target``), else through
    :func:`_evaluate`."""
    if source is None:
        extra = tuple(extra)
        return lambda y: _evaluate(target, extra, y)

    def evaluate(y: np.ndarray) -> tuple[float, np.ndarray]:
        logp, ratios = source(y)
        return _as_float(logp), _as_float64_array(ratios)

    return evaluate


def albp_steps(
    state: BinaryLBState | CategoricalLBState,
    scale: float,
    rng: np.random.Generator,
    n_steps: int,
    loop: Callable,
    extra: tuple,
    code: int,
) -> tuple[BinaryLBState, StepsInfo]:
    """``n_steps`` M-H steps of LBP-R on binary or categorical sites in one compiled loop.

    The same chain as ``n_steps`` calls of
    :func:`~pymc_discrete.kernels.albp.albp_step` with ``logp_and_ratios = lambda y:
    target(y, *extra)`` (``target`` the function the loop was specialised on) and the same
    generator (see the module docstring), without the
    Python work between steps.

    Parameters
    ----------
    state : BinaryLBState or CategoricalLBState
        Current state (from :func:`init_compiled_lb_state` or
        :func:`~pymc_discrete.kernels.albp.init_lb_state` with the same target).
    scale : float
        Real-valued scale R >= 1, the same for every step of the loop.
    rng : numpy.random.Generator
        Source of randomness: ``3 * n_steps`` uniforms, in one call.
    n_steps : int
        Number of Metropolis-Hastings steps.
    loop : callable
        The loop specialised on the target: :func:`specialise_albp_loop` for a binary
        state, :func:`specialise_albp_categorical_loop` for a categorical one.
    extra : tuple
        Further arguments of ``target``.
    code : int
        Weight function code.

    Returns
    -------
    new_state : BinaryLBState or CategoricalLBState
    info : StepsInfo
        Acceptance probability, decision and number of proposed sites of every step.

    Examples
    --------
    >>> import numba, numpy as np
    >>> @numba.njit
    ... def target(x, log_odds):  # independent sites
    ...     return np.sum(log_odds * x), log_odds * (1.0 - 2.0 * x)
    >>> extra = (np.full(10, 0.5),)
    >>> state = init_compiled_lb_state(np.zeros(10, dtype=np.int64), target, extra, 0)
    >>> loop = specialise_albp_loop(target)
    >>> state, info = albp_steps(state, 3.0, np.random.default_rng(0), 5, loop, extra, 0)
    >>> info.n_proposed.tolist()  # random around the scale 3
    [3, 1, 3, 5, 5]
    """
    uniforms = rng.random((int(n_steps), 3))
    if isinstance(state, CategoricalLBState):
        x, logp, table, weights, site_weights, log_scale, probs, accepted, proposed = loop(
            tuple(extra), state.x, float(state.logp), state.log_ratios, state.weights,
            state.site_weights, float(state.log_scale), float(scale), uniforms, int(code),
        )
        return (
            CategoricalLBState(x, float(logp), table, weights, site_weights, float(log_scale)),
            StepsInfo(probs, accepted, proposed),
        )
    x, logp, ratios, weights, log_scale, probs, accepted, proposed = loop(
        tuple(extra), state.x, float(state.logp), state.log_ratios, state.weights,
        float(state.log_scale), float(scale), uniforms, int(code),
    )
    return (
        BinaryLBState(x, float(logp), ratios, weights, float(log_scale)),
        StepsInfo(probs, accepted, proposed),
    )
