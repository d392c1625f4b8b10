"""The scale's tuning in a site step's lifecycle: bounds, tuner, chain starts, end of tuning.

:class:`ScaleTuning` is a base of :class:`~pymc_discrete.pymc.steps.block_step.SiteBlockStep`
(ahead of PyMC's ``ArrayStepShared``): it builds the tuner of the scale within the block's
bounds, restarts it at every chain (``setup_chain``, ``reset_tuning``), and at the end of
tuning (``stop_tuning``) freezes the scale, chooses ``steps_per_draw="auto"``, refuses a
chain that never moved and warns when the target acceptance was out of reach. The draw
itself, and the records this reads, are the lifecycle's.
"""

from __future__ import annotations

import warnings

from pymc_discrete.adaptation import FixedScale, ScaleAdapter
from pymc_discrete.adaptation.steps_per_draw import auto_steps_per_draw, moving_sites
from pymc_discrete.pymc.exceptions import TuningWarning

__all__ = ["ScaleTuning", "max_scale"]


def max_scale(n_sites: int) -> float:
    """Largest scale R the tuner may reach: half the sites (at least 1).

    Changing more than half of the sites of a small block is close to "flip everything",
    an involution that makes the chain nearly periodic (and its ESS estimates wrong); the
    optimal R grows like N^(2/3), far below N/2 once N is in the tens. The number of
    changes of each step is random around R
    (:func:`~pymc_discrete.kernels.common.number_of_changes`), so no value of R fixes the
    parity of the number of ones or the joint state of a few free sites.

    Examples
    --------
    >>> max_scale(1), max_scale(4), max_scale(7)
    (1.0, 2.0, 3.0)
    """
    return float(max(1, n_sites // 2))


class ScaleTuning:
    """The tuning part of a site step's lifecycle (module docstring)."""

    def _build_adapter(self, initial_scale, adapt: bool) -> ScaleAdapter | FixedScale:
        """Check the initial scale against the block's bounds and build the tuner (a
        fixed scale where ``target_accept`` is None)."""
        name = self._scale_parameter
        initial_scale = self._resolve_initial_scale(initial_scale)
        try:
            initial_scale = float(initial_scale)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number, got {initial_scale!r}") from None
        lower, upper = self._min_scale(), self._max_scale(self.n_sites)
        if not lower <= initial_scale <= upper:
            raise ValueError(
                f"{name} must lie in [{lower:g}, {upper:g}] for this block of {self.n_sites} "
                f"sites ({self._scale_bounds_reason}), got {initial_scale!r}"
            )
        if self.target_accept is None:  # nothing is tuned (the Gibbs steps)
            return FixedScale(initial_scale)
        return ScaleAdapter(self.target_accept, initial_scale, lower, upper, adapt=adapt)

    #: why the scale is bounded as it is (for error messages)
    _scale_bounds_reason = (
        "R is the mean number of sites a step changes, at least 1 and at most half the "
        "sites: changing more is close to flipping everything, which makes the chain "
        "nearly periodic"
    )

    def _min_scale(self) -> float:
        """Lower bound of the scale."""
        return 1.0

    def _max_scale(self, n_sites: int) -> float:
        """Upper bound of the scale: :func:`max_scale`."""
        return max_scale(n_sites)

    def _resolve_initial_scale(self, initial_scale):
        """The initial scale to use (subclasses may fill in a default)."""
        return initial_scale

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain: new generator, tuning restarted for ``tune`` draws.

        A chain with ``tune=0`` samples at the initial scale, or at the scale of the
        state given to :meth:`resume` (never at a scale left over from an earlier run:
        with one core the step object ran the chains, with several it did not).
        """
        super().setup_chain(rng, tune, draws)
        self._stall_watch.start_chain(self.rng, draws)
        self._n_tune = int(tune)
        self.tune = tune > 0
        self._start_tuner()
        self._reset_tuning_record()
        self._reset_progress()
        self._state = None

    def reset_tuning(self) -> None:
        """Restart the adaptation of the scale from its initial value (PyMC calls this at
        the start of every chain); a chain without tuning keeps the current scale."""
        self._start_tuner()
        self._reset_tuning_record()
        self._reset_progress()
        self.tune = self._n_tune != 0

    def _start_tuner(self) -> None:
        self.adapter.start(self._tuning_updates())
        if self._n_tune == 0 and self._resumed_scale is not None:
            self.adapter.scale = self._resumed_scale

    def _reset_tuning_record(self) -> None:
        self._tune_steps = 0  # M-H steps of this chain's tuning
        self._tune_moves = 0  # of which accepted moves (stays excluded)
        self._tune_accept_sum = 0.0  # their acceptance probabilities (stays excluded)
        # steps of the second half of tuning and the sites their draws changed: what
        # steps_per_draw="auto" is chosen from
        self._late_tune_steps = 0
        self._late_tune_changes = 0
        self._late_tune_moves = None  # per site, the draws that changed it
        if self._n_tune == 0 and self._resumed_draw_steps is not None:
            self._draw_steps = self._resumed_draw_steps  # a resumed chain's choice
        else:
            self._draw_steps = 1 if self.steps_per_draw == "auto" else self.steps_per_draw

    def _reset_progress(self) -> None:
        """Restart the running means of the progress bar (a new chain or phase)."""
        self._phase_draws = 0
        self._phase_accept_sum = 0.0
        self._phase_jump_sum = 0.0
        self._stalled = 0

    #: a chain is stuck when it accepted no move in at least ``_FROZEN_AFTER`` tuning
    #: steps whose acceptance probabilities add up to less than this: it could not
    #: expect a single move (a sharp target that accepts 1 move in 200 is not stuck)
    _STUCK_EXPECTED_MOVES = 0.05

    def _stuck(self) -> bool:
        return (
            self._tune_steps >= self._FROZEN_AFTER
            and self._tune_moves == 0
            and self._tune_accept_sum < self._STUCK_EXPECTED_MOVES
        )

    def stop_tuning(self) -> None:
        """End of tuning: freeze the averaged scale; refuse a chain that never moved and
        warn if the target acceptance was out of reach."""
        self.adapter.stop()
        self.tune = False
        self._reset_progress()
        if self.steps_per_draw == "auto" and self._n_tune:  # (PyMC stops tuning at draw
            # 0 of a chain without tuning: a resumed chain keeps its number)
            self._draw_steps = self._auto_steps_per_draw()
        self._refuse_a_frozen_chain()
        advice = self._stuck_advice()
        if advice is not None and self.adapter.adapt and self.adapter.stuck_below_target():
            warnings.warn(
                f"{type(self).__name__}: tuning ended at the smallest {self._scale_parameter} "
                f"({self.adapter.lower:g}) with an acceptance rate of "
                f"{self.adapter.late_acceptance:.2f}, well below the target "
                f"{self.target_accept}. {advice}",
                TuningWarning,
                stacklevel=2,
            )

    def _auto_steps_per_draw(self) -> int:
        """Steps per draw after tuning, from the sites the late tuning steps changed
        (:func:`~pymc_discrete.adaptation.steps_per_draw.auto_steps_per_draw`)."""
        if self._late_tune_steps == 0 or self._late_tune_moves is None:
            return auto_steps_per_draw(0, None)
        # sites that never moved (pinned by the data) do not dilute the share a draw
        # changes: counted, they would let the moving sites be thinned
        return auto_steps_per_draw(self.n_sites,
                                   self._late_tune_changes / self._late_tune_steps,
                                   moving=moving_sites(self._late_tune_moves))

    #: a chain stuck (:meth:`_stuck`) through at least this many tuning steps is refused
    #: (its draws would all be its initial value)
    _FROZEN_AFTER = 50

    def _refuse_a_frozen_chain(self) -> None:
        """Raise if the chain was stuck through the whole of its tuning (:meth:`_stuck`),
        unless no move of the block is possible at all."""
        if not self._stuck():
            return
        if self._state is not None and not self._has_possible_move(self._state):
            return  # every site is pinned (zero probability of any other value)
        raise RuntimeError(
            f"{type(self).__name__} accepted none of its {self._tune_steps} proposals for "
            f"{self.var_names} during tuning (their acceptance probabilities add up to "
            f"{self._tune_accept_sum:.2g}): its draws would all be the initial value, "
            "not a posterior. Either the posterior of this block is concentrated on one "
            "state (then it needs no sampler: fix those values), or the chain starts in "
            f"a state that these moves cannot leave. {self._frozen_advice}"
        )

    #: what to try when a chain never moved
    _frozen_advice = "Try ALBP, or a different starting point (initvals)."

    def _has_possible_move(self, state) -> bool:
        """Whether some move from ``state`` has positive proposal probability."""
        return True

    def _stuck_advice(self) -> str | None:
        """What to tell a user whose tuning ended stuck at the smallest scale (None: the
        low acceptance is the target's nature, not a fault of the proposal)."""
        return None

    def _tuning_updates(self) -> int | None:
        """Number of updates of the tuner in the tune phase: one per draw, with the mean
        acceptance probability of the draw's steps."""
        return self._n_tune

    @property
    def _target_stat(self) -> float:
        """The ``target_accept`` stat: the tuner's target (NaN if the scale is fixed)."""
        tuned = self.adapter.adapt and self._n_tune != 0
        return self.target_accept if tuned else float("nan")

    @property
    def scale(self) -> float:
        """Current scale R (real-valued; each draw rounds it probabilistically)."""
        return self.adapter.scale
