"""A chain's state as PyMC saves and restores it (``sampling_state``), and resuming a
saved chain."""

from __future__ import annotations

from dataclasses import field, fields

import numpy as np
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import WithSamplingState, dataclass_state, equal_dataclass_values

__all__ = ["SavedChain", "SiteBlockStepState"]


@dataclass_state
class SiteBlockStepState(StepMethodState):
    """What a chain of a :class:`SiteBlockStep` carries from draw to draw, as PyMC's
    ``sampling_state``: the scale's tuner (its scale and averages), the tuning record
    that decides whether a chain never moved, the progress bar's running means and the
    kernel's state at the last draw (``pm.sample`` restores it before every sequential
    chain; a ``ZarrTrace`` stores it at the end of each chain).

    The settings are frozen fields: a state only goes back into a step built with the
    same variables, target and steps per draw.
    """

    tune: bool
    _n_tune: int | None
    _tuner: dict
    _tune_steps: int
    _tune_moves: int
    _tune_accept_sum: float
    _phase_draws: int
    _phase_accept_sum: float
    _phase_jump_sum: float
    _stalled: int
    # the kernel's state at the last draw and the other variables' values it was computed
    # at: a restored chain continues bit for bit (recomputing the weights from scratch
    # rounds differently from updating them)
    _state: object
    _shared_seen: list | None
    _resumed_scale: float | None
    _late_tune_steps: int
    _late_tune_changes: int
    _late_tune_moves: np.ndarray | None
    _draw_steps: int
    target_accept: float | None = field(metadata={"frozen": True})
    steps_per_draw: int | str = field(metadata={"frozen": True})


class SavedChain:
    """``sampling_state`` and :meth:`resume` of a
    :class:`~pymc_discrete.pymc.steps.block_step.SiteBlockStep` (a mixin ahead of PyMC's
    ``ArrayStepShared``: its ``sampling_state`` checks a state before anything is
    overwritten)."""

    _state_class = SiteBlockStepState

    def resume(self, state: SiteBlockStepState) -> None:
        """Continue a saved chain: take its state, and sample chains without tuning
        (``pm.sample(tune=0)``) at the scale it froze.

        Parameters
        ----------
        state : SiteBlockStepState
            A chain's ``sampling_state``, e.g. the one a ``ZarrTrace`` stored at the end
            of the chain (``trace._sampling_state.sampling_state[chain]``); it must come
            from a step built with the same variables and settings.

        Examples
        --------
        >>> import pymc as pm, pymc_discrete as pmd
        >>> with pm.Model():
        ...     x = pm.Bernoulli("x", 0.3, shape=10)
        ...     step = pmd.ALBP([x])
        ...     saved = step.sampling_state  # in practice: a finished chain's state
        ...     step.resume(saved)
        ...     idata = pm.sample(step=step, tune=0, draws=100,
        ...                       progressbar=False)  # doctest: +SKIP
        """
        if state._tuner.get("tuning"):
            raise ValueError(
                "this state was saved in the middle of tuning: its scale is not frozen; "
                "resume from a state saved after tuning"
            )
        self.sampling_state = state
        self._resumed_scale = float(state._tuner["scale"])
        self._resumed_draw_steps = int(state._draw_steps)

    #: settings of the tuner that a restored state must share with the step
    _FROZEN_TUNER_SETTINGS = ("adapt", "target_accept", "lower")

    @property
    def sampling_state(self) -> SiteBlockStepState:
        """The chain's state as PyMC saves it (:class:`SiteBlockStepState`)."""
        return WithSamplingState.sampling_state.fget(self)

    @sampling_state.setter
    def sampling_state(self, state: SiteBlockStepState) -> None:
        # refuse a state of another step before anything is overwritten (PyMC's setter
        # checks the frozen fields only as it reaches them, after the others)
        if not isinstance(state, self._state_class):
            raise ValueError(
                f"not a state of {type(self).__name__}: {type(state).__name__}"
            )
        for f in fields(state):
            if f.metadata.get("frozen") and not f.metadata.get("tensor_name"):
                if not equal_dataclass_values(getattr(state, f.name), getattr(self, f.name)):
                    raise ValueError(
                        f"the state's {f.name} ({getattr(state, f.name)!r}) differs from "
                        f"this step's ({getattr(self, f.name)!r})"
                    )
        mine = self.adapter.snapshot()
        if set(state._tuner) != set(mine) or any(
            state._tuner[k] != mine[k] for k in self._FROZEN_TUNER_SETTINGS
        ):
            raise ValueError(
                "the state's tuner differs from this step's (its kind, adapt, target or "
                "bounds): it comes from a step built with other settings"
            )
        WithSamplingState.sampling_state.fset(self, state)

    @property
    def _tuner(self) -> dict:
        """The tuner's whole state (for ``sampling_state``)."""
        return self.adapter.snapshot()

    @_tuner.setter
    def _tuner(self, snapshot: dict) -> None:
        self.adapter.restore(snapshot)

