"""A step's algorithm as one record, built when the step is built.

Every site step (ALBP, ARWM, PAS, BlockedGibbs, JointGibbs) is a thin builder of a
:class:`StepKernel`: which kernel (binary or categorical, gradient or exact ratios, a
Python step or a compiled loop) and what it evaluates are fixed there, once, and the
shared lifecycle (:class:`~pymc_discrete.pymc.steps.block_step.SiteBlockStep`) drives any such
record: ``init`` at a new point, ``run`` for a draw's steps. Nothing in a draw's path asks
again which algorithm it is; a step that changes algorithm (a gradient proposal replaced
by exact ratios during tuning) builds a new record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from pymc_discrete.kernels.common import StepsInfo

__all__ = ["StepKernel", "python_run", "loop_run"]

#: ``(state, scale, rng) -> (state, info)``: one Metropolis-Hastings step (a sweep)
Step = Callable[[Any, float, np.random.Generator], tuple[Any, Any]]
#: ``(state, scale, n_steps, rng) -> (state, info with one entry per step)``
Run = Callable[[Any, float, int, np.random.Generator], tuple[Any, Any]]


class StepKernel(NamedTuple):
    """What a step's draws run, fixed when the step (or its algorithm) is built.

    Attributes
    ----------
    proposal : str
        What drives the moves: ``"gradient"`` or ``"exact"`` local ratios (ALBP, PAS),
        ``"random walk"`` (ARWM), ``"conditionals"`` (BlockedGibbs), ``"joint"``
        (JointGibbs).
    target : callable
        What the kernel evaluates: ``x -> (logp, local log-ratios)`` for ALBP and PAS,
        ``x -> logp`` for ARWM, the block's exact ratios
        (:class:`~pymc_discrete.pymc.model.exact.ExactRatios`) for the Gibbs steps.
    init : callable
        ``x -> state``: the kernel's state at the sites ``x`` (int64 site indices).
    step : callable
        ``(state, scale, rng) -> (state, info)``: one step of the kernel (a sweep for
        BlockedGibbs, a draw for JointGibbs), ``info`` a
        :class:`~pymc_discrete.kernels.common.StepInfo` or a richer record with its
        fields first.
    run : callable
        ``(state, scale, n_steps, rng) -> (state, info)``: the ``n_steps`` steps of a
        draw at one scale, in Python or in a compiled loop (the same chain either way),
        ``info`` a :class:`~pymc_discrete.kernels.common.StepsInfo` or a richer record with
        its fields first, one entry per step.
    """

    proposal: str
    target: Callable
    init: Callable[[np.ndarray], Any]
    step: Step
    run: Run


def python_run(step: Step, collect: Callable[[list], Any] = StepsInfo.from_steps) -> Run:
    """``run`` of a kernel whose steps run one Python call each.

    Parameters
    ----------
    step : callable
        ``(state, scale, rng) -> (state, info)``.
    collect : callable
        Turns the list of the steps' infos into the draw's info (default
        :meth:`StepsInfo.from_steps`).

    Returns
    -------
    callable
        ``(state, scale, n_steps, rng) -> (state, info)``.

    Examples
    --------
    >>> from pymc_discrete.kernels.common import StepInfo
    >>> def stay(state, scale, rng):
    ...     return state, StepInfo(1.0, True, 0)
    >>> state, info = python_run(stay)(0, 1.0, 3, None)
    >>> info.accepted.tolist()
    [True, True, True]
    """

    def run(state, scale: float, n_steps: int, rng: np.random.Generator):
        infos = []
        for _ in range(n_steps):
            state, info = step(state, scale, rng)
            infos.append(info)
        return state, collect(infos)

    return run


def loop_run(step: Step, loop: Run, collect: Callable[[list], Any] = StepsInfo.from_steps
             ) -> Run:
    """``run`` of a kernel with a compiled loop: a draw of one step runs the Python step
    (the same step, and cheaper than entering the loop), a draw of several the loop.

    Parameters
    ----------
    step : callable
        ``(state, scale, rng) -> (state, info)``, the Python step.
    loop : callable
        ``(state, scale, n_steps, rng) -> (state, info)``, the same chain in one compiled
        call.
    collect : callable
        As for :func:`python_run`.

    Returns
    -------
    callable
        ``(state, scale, n_steps, rng) -> (state, info)``.
    """
    single = python_run(step, collect)

    def run(state, scale: float, n_steps: int, rng: np.random.Generator):
        if n_steps == 1:
            return single(state, scale, 1, rng)
        return loop(state, scale, n_steps, rng)

    return run
