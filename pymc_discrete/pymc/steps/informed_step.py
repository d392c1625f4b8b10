"""Steps driven by local log-ratios (ALBP, PAS): where the ratios come from.

:class:`InformedStep` compiles the ratio source once at construction: the gradient of a
continuous relaxation (:mod:`~pymc_discrete.pymc.model.compiled`), exact ratios from the
model's elementwise terms (:mod:`~pymc_discrete.pymc.model.exact`), or the relaxation built for
the compiled loop. It falls back to exact ratios when the model cannot be relaxed, checks
the relaxation against the exact log density at the start, measures whether the ratios
are exact, and switches to exact ratios when a gradient proposal never moved during
tuning. ``proposal="auto"`` refuses a gradient whose proposal would practically never
offer some move the target allows (:mod:`~pymc_discrete.pymc.steps.reachability`), then
weighs the two proposals by short trials.
"""

from __future__ import annotations

import warnings

import numpy as np
from pymc.step_methods.state import dataclass_state

from pymc_discrete.adaptation.steps_per_draw import LARGE_BLOCK
from pymc_discrete.kernels.common import StepsInfo
from pymc_discrete.kernels.weights import weight_code
from pymc_discrete.pymc.exceptions import RelaxationError, RelaxationWarning
from pymc_discrete.pymc.model.compiled import compile_gradient_ratios
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.validation import check_choice
from pymc_discrete.pymc.steps.auto_proposal import (
    acceptance_per_cost,
    choose_proposal,
    set_other_variables,
)
from pymc_discrete.pymc.steps.block_step import SiteBlockStep, SiteBlockStepState

__all__ = ["InformedStep", "InformedStepState"]



@dataclass_state
class InformedStepState(SiteBlockStepState):
    """:class:`SiteBlockStepState` and whether the chain switched from the gradient to
    exact ratios during its tuning (a gradient proposal that never moved)."""

    _switched_to_exact: bool


class InformedStep(SiteBlockStep):
    """A step whose proposal is driven by local log-ratios (gradient or exact)."""

    _state_class = InformedStepState
    #: what the step used before a switch to exact ratios (None: no switch)
    _before_switch: tuple | None = None
    #: exact ratios once compiled (a chain that switches again reuses them)
    _exact_source: ExactRatios | None = None

    def _choose_proposal(self, weight: str, proposal: str) -> None:
        """Check and record the weight function and the source of the local ratios."""
        self.weight = check_choice("weight", weight, ("barker", "sqrt"))
        self.proposal = check_choice("proposal", proposal, ("auto", "gradient", "exact"))
        self.fallback_reason: str | None = None
        #: why the proposal in use was chosen (one line)
        self.proposal_reason = f"proposal={proposal!r} was asked for"
        self._code = weight_code(self.weight)

    #: why the compiled loop is on or off (one line)
    loop_reason: str = ""
    #: whether the loop was asked for as ``compiled_loop="auto"`` on a large block (it is
    #: then turned off, not refused, where PyTensor's NUMBA mode cannot compile what the
    #: chain needs, including exact ratios switched to during tuning, in any chain)
    _loop_auto = False

    def _compile_ratios_and_loop(self, compile_kwargs: dict | None) -> None:
        """:meth:`_compile_ratios`, with ``compiled_loop="auto"`` resolved: the loop is
        on for a block of at least :data:`LARGE_BLOCK` sites when the model's function
        compiles in PyTensor's NUMBA mode (its coverage of operations is narrower than
        the C backend's); otherwise the draw's steps run in Python."""
        if self.compiled_loop != "auto":
            self.loop_reason = f"compiled_loop={self.compiled_loop} was asked for"
            self._compile_ratios(compile_kwargs, numba_loop=self.compiled_loop)
            return
        if self.n_sites < LARGE_BLOCK:
            self.compiled_loop = False
            self.loop_reason = (
                f"a block of {self.n_sites} sites (fewer than {LARGE_BLOCK}): the Python "
                "between steps is not what a draw costs"
            )
            self._compile_ratios(compile_kwargs, numba_loop=False)
            return
        chosen = self.proposal, self.proposal_reason, self.fallback_reason
        self.compiled_loop = self._loop_auto = True
        try:
            self._compile_ratios(compile_kwargs, numba_loop=True)
        except Exception as err:  # noqa: BLE001 - any failure of the NUMBA build
            self._loop_off(err)
            self.proposal, self.proposal_reason, self.fallback_reason = chosen
            self._compile_ratios(compile_kwargs, numba_loop=False)
        else:
            if not self.compiled_loop:  # exact ratios whose terms did not compile
                return
            self.loop_reason = (
                f"a block of {self.n_sites} sites (at least {LARGE_BLOCK}) whose log "
                "density compiles in PyTensor's NUMBA mode: draws of several steps run "
                "in the compiled loop"
            )

    def _loop_off(self, err: Exception) -> None:
        """Turn off a loop that ``compiled_loop="auto"`` turned on, saying why."""
        self.compiled_loop = False
        self.loop_reason = (
            "the model's function did not compile in PyTensor's NUMBA mode "
            f"({type(err).__name__}: {err}): the draw's steps run in Python"
        )

    def _compile_ratios(self, compile_kwargs: dict | None, numba_loop: bool = False) -> None:
        """Compile ``x -> (logp, local log-ratios)`` for the proposal asked for, falling back
        from the gradient to exact ratios when the model cannot be relaxed. With
        ``numba_loop`` a binary block's function is built in PyTensor's NUMBA mode
        (:class:`~pymc_discrete.pymc.model.compiled.CompiledRatios`)."""
        self._compile_kwargs = compile_kwargs
        shared = self._shared_vars()
        auto = self.proposal == "auto"
        if auto or self.proposal == "gradient":
            try:
                self._logp_and_ratios = compile_gradient_ratios(
                    self.model, self.vars, self.shapes, self._categorical, self._counts,
                    shared, compile_kwargs, numba_loop=numba_loop,
                )
            except RelaxationError as err:
                if auto:
                    self.proposal = "exact"
                    self.proposal_reason = f"the model has no continuous relaxation ({err})"
                else:
                    self._fall_back_to_exact(str(err), stacklevel=4)
            else:
                if self._start_checked:
                    self._check_relaxation(self._initial_point, self._initial_logp)
                if auto:
                    self.proposal = "gradient"
        if self.proposal == "exact":
            self._compile_exact_ratios()
        self.ratios_are_exact = self._ratios_match_flips()
        if auto and self.proposal == "gradient":
            choose_proposal(self)

    _checks_at_construction = True

    #: how the trials of ``proposal="auto"`` compare the two proposals
    #: (:mod:`~pymc_discrete.pymc.steps.auto_proposal`)
    _auto_criterion = staticmethod(acceptance_per_cost)
    #: whether a gradient with exact single-site ratios is still weighed by trials
    _trial_exact_gradient = False

    def _compile_exact_ratios(self) -> None:
        if self._exact_source is None:
            self._exact_source = ExactRatios(
                self.model, self.vars, self._initial_point, self._shared_vars(),
                self._compile_kwargs,
                n_categories=None if self.is_binary else self.n_categories,
                offsets=self.offsets,
            )
        self._logp_and_ratios = self._exact_source
        if getattr(self, "compiled_loop", False):  # the loop calls their compiled target
            try:
                target = self._exact_source.compiled_target()
                if self._loop_auto:  # numba compiles at the first call: fail here, not later
                    target(self._sites_of(self._initial_point))
                self._logp_and_ratios = target
            except Exception as err:  # noqa: BLE001 - any failure of the NUMBA build
                if not self._loop_auto:
                    raise
                self._loop_off(err)  # a switch to exact ratios during tuning: go on

    def _fall_back_to_exact(self, reason: str, stacklevel: int) -> None:
        """Use exact local ratios from now on, saying why."""
        self.fallback_reason = reason
        self.proposal = "exact"
        warnings.warn(
            f"{type(self).__name__} cannot use gradient proposals for {self.var_names}: "
            f"{reason}. Falling back to proposal='exact'.",
            RelaxationWarning,
            stacklevel=stacklevel,
        )

    def _check_start(self, x: np.ndarray, logp: float) -> None:
        """The relaxation check, deferred to the first point of positive probability."""
        super()._check_start(x, logp)
        if self.proposal == "gradient":
            self._check_relaxation(self._current_point(x), None)

    def _check_relaxation(self, point: dict, exact: float | None) -> None:
        """The relaxed logp must equal the exact logp at an (integer) point of positive
        probability (``exact``: the model's log density there, computed if None)."""
        saved = {name: s.get_value() for name, s in self.shared.items()}
        try:
            for name, s in self.shared.items():
                s.set_value(point[name])
            x0 = self._sites_of(point)
            relaxed, _ = self._logp_and_ratios(x0)
        finally:
            for name, s in self.shared.items():
                s.set_value(saved[name])
        if exact is None:
            exact = float(sum(self.model.point_logps(point, round_vals=12).values()))
        # PyMC may evaluate some terms in float32 (constants such as p=0.5 are stored as
        # float32), so agreement is required to single precision, not to the last bit; a
        # wrong relaxation is off by O(1)
        if not np.isclose(relaxed, exact, rtol=1e-6, atol=1e-6):
            raise RuntimeError(
                f"the relaxed log density {relaxed!r} differs from the exact one {exact!r} at "
                "the initial point; the model has a term this relaxation does not cover"
            )

    def _ratios_match_flips(self, max_sites: int = 200) -> bool:
        """Compare the proposal's log-ratios with single flips (exact log densities) at the
        initial point, and again with the other continuous variables moved to random
        values (a coefficient at exactly 0 can make a first-order estimate look exact)."""
        point = self._initial_point
        rng = np.random.default_rng(0)
        x0 = self._sites_of(point)
        if x0.size == 0:
            return True  # an empty block: nothing to estimate
        sites = np.arange(x0.size)
        if x0.size > max_sites:
            sites = np.sort(rng.choice(x0.size, max_sites, replace=False))
        try:
            for perturb in (False, True):
                set_other_variables(self, perturb, rng)
                logp0, ratios = self._logp_and_ratios(x0)
                if not np.isfinite(logp0):
                    return False  # no point of positive probability to compare at
                table = np.asarray(ratios).reshape(x0.size, -1)
                for i in sites:
                    for v in range(self.n_categories[i]):
                        if v == x0[i]:
                            continue
                        y = x0.copy()
                        y[i] = v if not self.is_binary else 1 - y[i]
                        flip = self._logp_and_ratios(y)[0] - logp0
                        estimate = table[i, 0] if self.is_binary else table[i, v]
                        if not np.isclose(estimate, flip, rtol=1e-7, atol=1e-7) and not (
                            np.isneginf(flip) and np.isneginf(estimate)
                        ):
                            return False
            return True
        finally:
            set_other_variables(self, False, rng)

    def _stuck_advice(self) -> str | None:
        if self.proposal == "gradient" and not self.ratios_are_exact:
            return "The gradient's estimates of the local ratios may be poor: try proposal='exact'."
        return None  # exact ratios at the smallest scale: the target is just this sharp

    def _record_tuning(self, info: StepsInfo) -> None:
        super()._record_tuning(info)
        if self.proposal == "gradient" and self._stuck():
            self._switch_to_exact()

    def _switch_to_exact(self) -> None:
        """Replace a gradient proposal that never moved by exact ratios, and restart tuning
        for what is left of the tune phase."""
        n_steps = self._tune_steps
        self._use_exact_ratios(
            f"none of its first {n_steps} gradient proposals was accepted (the first-order "
            "estimates of the local ratios are far from the exact ones here, e.g. near "
            "values of zero probability)"
        )
        self._on_proposal_changed()
        remaining = self._tuning_updates()
        if remaining is not None:  # the tuner updates once per draw
            remaining = max(remaining - n_steps // self._draw_steps, 1)
        self.adapter.start(remaining)
        self._reset_tuning_record()

    def _use_exact_ratios(self, reason: str | None) -> None:
        """Switch this chain to exact ratios (``reason``: warn why), remembering the
        gradient proposal so that a restored ``sampling_state`` can switch back."""
        self._before_switch = (
            self._logp_and_ratios, self.proposal, self.ratios_are_exact,
            getattr(self, "compiled_loop", False), self.fallback_reason, self.loop_reason,
        )
        if reason is not None:
            self._fall_back_to_exact(reason, stacklevel=6)
        self.proposal = "exact"
        self._compile_exact_ratios()  # a compiled loop goes on, on their compiled target
        self.ratios_are_exact = True
        self._rebuild_kernel()

    @property
    def exact_ratios(self) -> ExactRatios | None:
        """The block's exact ratios where the step compiled them (its proposal, or the
        check of ``proposal="auto"``), else None."""
        return self._exact_source

    @property
    def _switched_to_exact(self) -> bool:
        """Whether this chain switched from the gradient to exact ratios (a field of
        ``sampling_state``: a new chain restored from the constructed state uses the
        gradient again)."""
        return self._before_switch is not None

    @_switched_to_exact.setter
    def _switched_to_exact(self, switched: bool) -> None:
        if switched == self._switched_to_exact:
            return
        if switched:  # the tuner's state, restored beside this field, has its bounds
            self._use_exact_ratios(None)
        else:
            (self._logp_and_ratios, self.proposal, self.ratios_are_exact,
             self.compiled_loop, self.fallback_reason, self.loop_reason) = self._before_switch
            self._before_switch = None
            self._rebuild_kernel()

    def _on_proposal_changed(self) -> None:
        """Hook: adjust what depends on the proposal after a switch to exact ratios."""

    def _has_possible_move(self, state) -> bool:
        weights = getattr(state, "site_weights", None)
        if weights is None:
            weights = state.weights
        return bool(np.any(np.asarray(weights) > 0.0))
