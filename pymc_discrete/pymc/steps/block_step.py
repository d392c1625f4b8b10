"""The lifecycle every step of this package shares: a block of discrete sites as a PyMC
step method (``pymc.step_methods.arraystep.ArrayStepShared``).

:class:`SiteBlockStep` checks the block, holds the scale's tuner, runs the draw's
Metropolis-Hastings steps, reports the per-draw statistics, refuses a chain that never
moved and warns when tuning missed its target. An algorithm's step subclasses it as a
builder: ``_build_proposal`` compiles what the kernel evaluates and ``_make_kernel``
returns the algorithm as one record (:class:`~pymc_discrete.pymc.steps.step_kernel.StepKernel`),
which the lifecycle drives without asking again which algorithm it is; the steps driven by
local ratios go through :class:`~pymc_discrete.pymc.steps.informed_step.InformedStep`.
"""

from __future__ import annotations

import numpy as np
from pymc.blocking import RaveledVars, StatsType
from pymc.model import modelcontext
from pymc.pytensorf import make_shared_replacements
from pymc.stats.convergence import SamplerWarning
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence

from pymc_discrete.adaptation.scale_mixture import scale_for_draw
from pymc_discrete.kernels.common import StepsInfo
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.validation import (
    SUPPORTED_OPS,
    block_value_vars,
    check_auto_or_positive_int,
    check_discrete_block,
    check_initial_point,
    check_unit_interval,
    site_support_problem,
)
from pymc_discrete.pymc.steps.chain_state import SavedChain, SiteBlockStepState
from pymc_discrete.pymc.steps.draw_stats import (
    STATS_DTYPES_SHAPES,
    progressbar_config,
    progressbar_update_functions,
)
from pymc_discrete.pymc.steps.scalar_point import ScalarSitesMapping
from pymc_discrete.pymc.steps.stall import STALLED_DRAWS_FAILING, StallWatch
from pymc_discrete.pymc.steps.step_kernel import StepKernel
from pymc_discrete.pymc.steps.tuning import ScaleTuning, max_scale

__all__ = [
    "STALLED_DRAWS_FAILING",
    "STATS_DTYPES_SHAPES",
    "SiteBlockStep",
    "SiteBlockStepState",
    "max_scale",
]


class SiteBlockStep(ScalarSitesMapping, ScaleTuning, SavedChain, ArrayStepShared):
    """Shared machinery of the M-H steps on a block of discrete sites.

    Subclasses provide ``_build_proposal(compile_kwargs)`` (called once, at construction,
    before the tuner is built) and ``_make_kernel()`` (the algorithm's record, built right
    after it and again whenever the step changes algorithm).
    """

    default_blocked = True
    stats_dtypes_shapes = STATS_DTYPES_SHAPES
    #: name of the constructor argument that sets the initial scale (for error messages)
    _scale_parameter = "initial_scale"
    #: name of the constructor argument that sets the steps per draw
    _steps_parameter = "steps_per_draw"
    _state_class = SiteBlockStepState

    def __init__(
        self,
        vars,
        *,
        target_accept: float | None,
        initial_scale: float,
        adapt: bool,
        steps_per_draw: int | str,
        model,
        initial_point,
        compile_kwargs: dict | None,
        rng,
        blocked: bool,
        shared: dict | None = None,
    ) -> None:
        model = modelcontext(model)
        #: the acceptance rate the scale is tuned toward (None: a step that tunes nothing)
        self.target_accept = (None if target_accept is None
                              else check_unit_interval("target_accept", target_accept))
        #: the number of steps per draw asked for (``"auto"``: chosen after tuning,
        #: :func:`~pymc_discrete.adaptation.steps_per_draw.auto_steps_per_draw`)
        self.steps_per_draw = check_auto_or_positive_int(self._steps_parameter, steps_per_draw)
        value_vars = block_value_vars(model, vars, type(self).__name__, self.competence)
        if initial_point is None:
            initial_point = model.initial_point()
        support = check_discrete_block(model, value_vars, type(self).__name__, initial_point)
        self.model = model
        self.shapes = [tuple(np.shape(initial_point[v.name])) for v in value_vars]
        self.n_sites = int(sum(np.prod(s, dtype=int) for s in self.shapes))
        #: number of values of every site, raveled in block order
        self.n_categories = support.n_values
        #: smallest value of every site (a site's index v stands for the value offset + v)
        self.offsets = support.offsets
        self._offset = bool(self.offsets.any())
        self._counts = support.counts
        self._categorical = support.categorical
        #: whether every variable is Bernoulli (the binary fast path)
        self.is_binary = support.is_binary
        #: whether a variable has no continuous relaxation (DiscreteUniform, Binomial, ...)
        self.has_finite_integers = support.finite_integer
        #: the model's log density at the point the step was built at (NaN when it is
        #: not finite there, or not needed at construction: ``pm.sample(initvals=...)``
        #: may start elsewhere, and the start is checked at the first draw instead)
        self._initial_logp = check_initial_point(
            model, initial_point, value_vars, support, strict=False,
            evaluate=self._checks_at_construction,
        )
        self.tune = True
        self._n_tune: int | None = None
        self._resumed_draw_steps: int | None = None
        self._reset_tuning_record()
        self._reset_progress()
        self._state = None
        self._shared_seen: list[np.ndarray] | None = None
        self._resumed_scale: float | None = None
        if shared is None:  # else: those of a structure already compiled for this block
            shared = make_shared_replacements(initial_point, value_vars, model)
        self._initial_point = initial_point
        super().__init__(value_vars, shared, blocked=blocked, rng=rng)
        # the proposal is settled (including any fallback) before the scale's bounds,
        # which may depend on it, are checked and the tuner is built
        self._build_proposal(compile_kwargs)
        self._kernel = self._make_kernel()
        self.adapter = self._build_adapter(initial_scale, adapt)
        self._stall_watch = StallWatch(type(self).__name__, self.var_names, self._stall_advice)

    def _build_proposal(self, compile_kwargs: dict | None) -> None:
        """Compile what the kernel evaluates (the log density, the local ratios)."""
        raise NotImplementedError

    def _make_kernel(self) -> StepKernel:
        """The step's algorithm (:class:`~pymc_discrete.pymc.steps.step_kernel.StepKernel`),
        from what :meth:`_build_proposal` compiled."""
        raise NotImplementedError

    def _rebuild_kernel(self) -> None:
        """Build the kernel again after the step changed algorithm (a switch to exact
        ratios, or back in a restored state); the chain's state is then rebuilt too."""
        self._kernel = self._make_kernel()
        self._state = None

    @property
    def kernel(self) -> StepKernel:
        """The algorithm a draw runs (:class:`~pymc_discrete.pymc.steps.step_kernel.StepKernel`):
        ``kernel.init(x)`` and ``kernel.step(state, scale, rng)`` run it outside
        ``pm.sample`` on int64 site indices ``x`` (value minus the site's smallest value)."""
        return self._kernel

    @property
    def exact_ratios(self):
        """The block's exact ratios (:class:`~pymc_discrete.pymc.model.exact.ExactRatios`: terms,
        colouring, set-up report) where the step uses them, else None."""
        return None

    @property
    def draw_steps(self) -> int:
        """Steps (sweeps) per draw in use: the number asked for, or after tuning the one
        ``steps_per_draw="auto"`` chose."""
        return self._draw_steps

    def _block_exact_ratios(self, compile_kwargs: dict | None) -> ExactRatios:
        """The block's :class:`~pymc_discrete.pymc.model.exact.ExactRatios`: those handed to
        the constructor (``exact_ratios=``, checked to be this block's; taken once), or
        compiled now."""
        exact, self._prebuilt = getattr(self, "_prebuilt", None), None
        if exact is not None:
            self._check_prebuilt(exact)
            return exact
        return ExactRatios(
            self.model, self.vars, self._initial_point, self._shared_vars(),
            compile_kwargs, n_categories=None if self.is_binary else self.n_categories,
            offsets=self.offsets,
        )

    def _check_prebuilt(self, exact) -> None:
        """Refuse exact ratios compiled for another block (e.g. the whole block handed
        to one step per variable with ``blocked=False``)."""
        if tuple(exact.var_names) != tuple(self.var_names):
            raise ValueError(
                f"exact_ratios were compiled for the block {list(exact.var_names)}, not for "
                f"this step's {list(self.var_names)}"
            )

    def _shared_vars(self) -> dict:
        """Other value variable -> the shared variable PyMC keeps its current value in."""
        name_to_value = {v.name: v for v in self.model.value_vars}
        return {name_to_value[name]: s for name, s in self.shared.items()}

    # ---- sampling --------------------------------------------------------------------
    def _others_changed(self) -> bool:
        """Whether another step changed the variables outside the block since the last draw."""
        if not self.shared:
            return False
        current = [s.get_value(borrow=True) for s in self.shared.values()]
        seen = self._shared_seen
        if seen is not None and all(np.array_equal(a, b) for a, b in zip(seen, current)):
            return False
        self._shared_seen = [np.array(c, copy=True) for c in current]
        return True

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, StatsType]:
        if self.n_sites == 0:  # an empty variable: nothing to sample
            stats = {"accept": 1.0, "accepted": 1.0, "scaling": float(self.adapter.scale),
                     "jump_distance": 0, "n_proposed": 0, "target_accept": self._target_stat,
                     "steps_per_draw": 0, "draw_scale": float(self.adapter.scale),
                     "warning": None}
            return q0, [self._with_progress(stats, moved=True)]
        x = np.asarray(q0.data, dtype=np.int64)
        if self._offset:
            x = x - self.offsets
        state = self._state
        if self._others_changed() or state is None or not np.array_equal(state.x, x):
            state = self._kernel.init(x)
            if self._refuses_impossible_start and not np.isfinite(state.logp):
                raise ValueError(
                    f"{type(self).__name__}: the current point has log density {state.logp}"
                    f"{self._offending_terms(x)}; start from a point of positive "
                    "probability (pm.sample(initvals=...))"
                )
            if not self._start_checked:
                self._check_start(x, state.logp)
        start, tuned, scale = state.x, self.adapter.scale, self._draw_scale()
        state, info = self._kernel.run(state, scale, self._draw_steps, self.rng)
        self._state = state
        jump = int(np.count_nonzero(state.x != start))
        if self.tune:
            self._observe_draw(state, info, scale)
            # one update per draw, at the scale every step of the draw used: updating after
            # each step would move the scale between steps that all ran at the old one,
            # and credit their acceptance to scales they never used
            self.adapter.update(float(info.accept_prob.sum()) / len(info.accept_prob))
            self._record_tuning(info)
            if self._n_tune is not None and self._phase_draws >= self._n_tune // 2:
                self._late_tune_steps += len(info.accept_prob)
                self._late_tune_changes += jump
                if self._late_tune_moves is None:
                    self._late_tune_moves = np.zeros(self.n_sites, dtype=np.int64)
                self._late_tune_moves += state.x != start
        n_steps = len(info.accept_prob)
        stats = {  # sums of short arrays: np.mean's overhead exceeds the work
            "accept": float(info.accept_prob.sum()) / n_steps,
            "accepted": float(info.accepted.sum()) / n_steps,
            "scaling": float(tuned),
            "draw_scale": float(scale),
            "jump_distance": jump,
            "n_proposed": int(info.n_proposed.sum()),
            "target_accept": self._target_stat,
            "steps_per_draw": n_steps,
        }
        stats = self._with_progress(stats, moved=stats["jump_distance"] > 0)
        stats["warning"] = self._stall_warning(stats["jump_distance"] > 0, state)
        values = state.x + self.offsets if self._offset else state.x
        return RaveledVars(values.astype(q0.data.dtype, copy=True), q0.point_map_info), [stats]

    #: whether a current point of zero probability is an error (a step whose move
    #: depends on the current state cannot leave it); a step whose draw does not may
    #: start anywhere
    _refuses_impossible_start = True

    def _draw_scale(self) -> float:
        """The scale of this draw: the tuner's while tuning (its target is measured at
        it) or with a fixed scale; after tuning, the tuned scale or now and then a
        smaller one (:func:`~pymc_discrete.adaptation.scale_mixture.scale_for_draw`), so a
        chain that reaches a state no move of the tuned size leaves still moves."""
        if self.tune or not self.adapter.adapt:
            return self.adapter.scale
        return scale_for_draw(self.adapter.scale, self.adapter.lower, self.rng)

    #: what to try when a chain stopped moving after tuning (the stall warning's advice)
    _stall_advice = (
        "Look at the chain's trace (sample_stats 'stalled' counts the unchanged draws). "
        "Try more tuning draws, another step (pmd.recommend() says which the package "
        "would choose and why) or PAS, whose paths cross valleys between states."
    )

    def _stall_warning(self, moved: bool, state) -> SamplerWarning | None:
        """The warning this draw reports when the chain stopped moving after tuning
        (none for a block where no move is possible: every site pinned)."""
        warning = self._stall_watch.record(moved, self.tune)
        if warning is not None and state is not None and not self._has_possible_move(state):
            return None
        return warning

    def _with_progress(self, stats: dict, moved: bool) -> dict:
        """Add the running means of the phase and the stall count to a draw's stats."""
        self._phase_draws += 1
        self._phase_accept_sum += stats["accept"]
        self._phase_jump_sum += stats["jump_distance"]
        self._stalled = 0 if moved else self._stalled + 1
        stats["mean_accept"] = self._phase_accept_sum / self._phase_draws
        stats["mean_jump"] = self._phase_jump_sum / self._phase_draws
        stats["stalled"] = self._stalled
        return stats

    # ---- progress bar (pymc_discrete.pymc.steps.draw_stats) ---------------------------------
    _progressbar_config = staticmethod(progressbar_config)
    _make_progressbar_update_functions = staticmethod(progressbar_update_functions)

    def _record_tuning(self, info: StepsInfo) -> None:
        """Count the tuning steps and accepted moves (for :meth:`_refuse_a_frozen_chain`)."""
        self._tune_steps += len(info.accept_prob)
        moves = info.n_proposed > 0
        self._tune_moves += int(np.count_nonzero(info.accepted & moves))
        self._tune_accept_sum += float(info.accept_prob[moves].sum())

    #: whether the constructor runs checks that need the model's log density at the
    #: initial point (the relaxation's check): else it is not evaluated there, and the
    #: first draw's start is the first point checked
    _checks_at_construction = False

    @property
    def _start_checked(self) -> bool:
        """Whether the checks that need a point of positive probability have run."""
        return bool(np.isfinite(self._initial_logp))

    def _check_start(self, x: np.ndarray, logp: float) -> None:
        """Checks deferred from the constructor to the first point of positive
        probability (the step was built where the model's log density is not finite)."""
        self._initial_logp = float(logp)

    def _current_point(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The model's point with the block at ``x`` and the others at their current values."""
        point = dict(self._initial_point)
        for name, s in self.shared.items():
            point[name] = s.get_value()
        start = 0
        for v, shape in zip(self.vars, self.shapes):
            size = int(np.prod(shape, dtype=int))
            values = x[start : start + size] + self.offsets[start : start + size]
            point[v.name] = values.reshape(shape).astype(point[v.name].dtype)
            start += size
        return point

    def _sites_of(self, point: dict[str, np.ndarray]) -> np.ndarray:
        """The block's site indices (value minus offset, raveled) at a model point."""
        values = [np.ravel(point[v.name]) for v in self.vars]
        x = np.concatenate(values) if values else np.zeros(0)
        return x.astype(np.int64) - self.offsets

    def _offending_terms(self, x: np.ndarray) -> str:
        """`` (terms: name=-inf, ...)`` for the terms that are not finite at ``x``."""
        try:
            logps = self.model.point_logps(self._current_point(x), round_vals=12)
        except Exception:  # the message must not fail; the error is raised regardless
            return ""
        bad = [f"{name}={lp}" for name, lp in logps.items() if not np.isfinite(lp)]
        return f" (terms: {', '.join(bad)})" if bad else ""

    def _observe_draw(self, state, info, scale: float) -> None:
        """Hook: what a tuning draw tells the step beyond its acceptance (PAS: the jumps
        of its paths; ARWM: the spread of ordinal sites), before the tuner's update."""

    #: how well the step suits a variable it supports (PyMC picks the
    #: step of the highest competence for each variable)
    _competence_level = Competence.IDEAL

    @classmethod
    def competence(cls, var, has_grad=False):
        """The step's competence for Bernoulli, Categorical and finite integer variables
        (DiscreteUniform, Binomial, BetaBinomial) whose values are a fixed range of at
        most :data:`~pymc_discrete.pymc.model.validation.MAX_VALUES`: IDEAL for ALBP,
        COMPATIBLE for the others; INCOMPATIBLE for any other variable
        (:func:`~pymc_discrete.pymc.model.validation.site_support_problem` says why), which
        ``pm.sample`` then leaves to PyMC's own steps."""
        op = getattr(var.owner, "op", None)
        if isinstance(op, SUPPORTED_OPS) and site_support_problem(var) is None:
            return cls._competence_level
        return Competence.INCOMPATIBLE
