"""Steps driven by local log-ratios (ALBP, PAS): where the ratios come from.

:class:`InformedStep` compiles the ratio source once at construction: the gradient of a
continuous relaxation (:mod:`~pymc_discrete.pymc.compiled`), exact ratios from the
model's elementwise terms (:mod:`~pymc_discrete.pymc.exact`), or the relaxation built for
the compiled loop. It falls back to exact ratios when the model cannot be relaxed, checks
the relaxation against the exact log density at the start, measures whether the ratios
are exact, and switches to exact ratios when a gradient proposal never moved during
tuning. ``proposal="auto"`` refuses a gradient whose proposal would practically never
offer some move the target allows (:mod:`~pymc_discrete.pymc.reachability`), then
weighs the two proposals by short trials.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable

import numpy as np
from pymc.step_methods.state import dataclass_state

from pymc_discrete.adaptation.steps_per_draw import LARGE_BLOCK
from pymc_discrete.kernels.common import StepsInfo
from pymc_discrete.kernels.gibbs import GibbsState, blocked_gibbs_sweep
from pymc_discrete.kernels.weights import log_g, weight_code
from pymc_discrete.pymc.block_step import SiteBlockStep, SiteBlockStepState
from pymc_discrete.pymc.compiled import compile_gradient_ratios
from pymc_discrete.pymc.exact import ExactRatios
from pymc_discrete.pymc.exceptions import RelaxationError, RelaxationWarning
from pymc_discrete.pymc.reachability import move_log_probabilities, underweighted_moves
from pymc_discrete.pymc.validation import check_choice

__all__ = ["InformedStep", "InformedStepState"]

#: model -> {(step class, block, weight, what was timed): the timing}: what
#: ``proposal="auto"`` measured, reused by a later construction of the same step on the
#: same model, so that the choice (and so the chain, for a given seed) does not depend
#: on timing noise within a process (a PyMC session building a step per run, or a
#: sampler run again with one core and then two)
_MEASURED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


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
        (:class:`~pymc_discrete.pymc.compiled.CompiledRatios`)."""
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
            self._choose_between_gradient_and_exact()

    #: Metropolis-Hastings steps of each proposal tried by ``proposal="auto"``
    AUTO_TRIAL_STEPS = 25

    def _measured(self, what: tuple, measure: Callable[[], object]):
        """``measure()``, the first time this step class measures ``what`` on this block
        of this model with this weight in the process; its remembered result after that
        (see :data:`_MEASURED`)."""
        key = (type(self).__name__, tuple(self.var_names), self.weight,
               getattr(self, "compiled_loop", False), what)
        memo = _MEASURED.setdefault(self.model, {})
        if key not in memo:
            memo[key] = measure()
        return memo[key]

    def _choose_between_gradient_and_exact(self) -> None:
        """``proposal="auto"``: keep the gradient's ratios when they are exact; refuse
        them when their proposal would practically never offer a move the target allows
        (:meth:`_exact_trial_starts`); else keep them when they accept often enough to
        pay for the exact ratios' extra cost, and use exact ratios otherwise. Says why.

        Both proposals run :attr:`AUTO_TRIAL_STEPS` steps at the smallest scale from a
        draw of the exact conditionals (the initial point itself is rarely typical: all
        labels in one component, every indicator at its start value), once with the
        other variables at their initial values and once moved to random values around
        them; the cost is the measured time of one exact call over one gradient call.
        The gradient is kept when its mean acceptance times that cost is at least the
        exact proposal's mean acceptance: per second it then accepts at least as many
        moves. A refusal for reachability depends on the model alone (seeded draws, no
        timings), and no trial is run then: a mean acceptance can look good while a few
        sites never move.
        """
        if self.ratios_are_exact:
            self.proposal_reason = (
                "the relaxation's gradient gives the exact local ratios for this model "
                "(checked against single-site moves), at one logp+gradient call per draw"
            )
            return
        gradient = self._logp_and_ratios
        self._compile_exact_ratios()
        exact = self._logp_and_ratios
        x0 = self._sites_of(self._initial_point)
        starts, settings, refusal = self._exact_trial_starts(x0, gradient)
        if refusal is not None:
            self._refuse_gradient(exact, refusal)
            return
        trials = []
        try:
            for start, values in zip(starts, settings):
                self._put_other_variables(values)
                trials.append((self._trial_acceptance(gradient, "gradient", start),
                               self._trial_acceptance(exact, "exact", start)))
        finally:
            self._put_other_variables(None)
        x1 = starts[0]
        cost = self._measured(("cost of an exact call in gradient calls",), lambda: (
            _seconds_per_call(exact, x1) / max(_seconds_per_call(gradient, x1), 1e-9)))
        # the setting where the gradient does worst against exact ratios decides
        accept_gradient, accept_exact = min(trials, key=lambda t: t[0] * cost - t[1])
        summary = (
            f"in {self.AUTO_TRIAL_STEPS} trial steps the gradient proposal accepted "
            f"{accept_gradient:.2f} on average and the exact one {accept_exact:.2f} (the "
            "worse of the initial and perturbed continuous values), and an exact call "
            f"costs {cost:.1f} gradient calls"
        )
        if accept_gradient * cost >= accept_exact:
            self._logp_and_ratios = gradient
            self.proposal = "gradient"
            self.proposal_reason = f"{summary}: the gradient is kept"
        else:
            self._logp_and_ratios = exact
            self.proposal = "exact"
            self.ratios_are_exact = True
            self.proposal_reason = f"{summary}: exact ratios are used"

    #: sweeps of the exact conditionals that ``proposal="auto"`` runs on from each trial
    #: start, comparing the gradient's proposal with the exact one move by move at the
    #: start and after every sweep (the states a chain visits, not only the start)
    AUTO_REACHABILITY_SWEEPS = 4

    def _exact_trial_starts(
        self, x0: np.ndarray, gradient,
    ) -> tuple[list[np.ndarray], list[dict], str | None]:
        """Starts of the trials of ``proposal="auto"``, the other variables' values they
        were drawn with, and why the gradient must be refused (None: it may be kept).

        A start is one sweep of the exact conditionals from ``x0`` (rarely typical
        itself), with the other variables at their initial values and moved to random
        values around them. In each of these two settings the gradient's proposal is
        compared with the exact one at the start and after each of
        :attr:`AUTO_REACHABILITY_SWEEPS` further sweeps
        (:func:`~pymc_discrete.pymc.reachability.underweighted_moves`): a move the target
        allows that the gradient would offer more than a thousand times less often than
        exact ratios do, at any of these states, refuses the gradient (the chain could
        leave a site at one value for the whole run). Everything is drawn from seeded
        generators: the result depends on the model, not on timings; the further sweeps
        have their own generator, so that the starts are those drawn without the check.
        """
        source = self._exact_source
        sites = source.colour_sites()
        rng = np.random.default_rng(0)
        check_rng = np.random.default_rng(1)
        starts, settings = [], []
        misses: dict[int, tuple] = {}
        n_states = 0
        try:
            for perturb in (False, True):
                self._set_other_variables(perturb, rng)
                settings.append({name: s.get_value() for name, s in self.shared.items()})
                state, _ = blocked_gibbs_sweep(
                    GibbsState(x0, 0.0), rng, source.colour_conditionals, sites, exact=True,
                )
                starts.append(state.x)
                for sweep in range(self.AUTO_REACHABILITY_SWEEPS + 1):
                    if sweep:
                        state, _ = blocked_gibbs_sweep(
                            state, check_rng, source.colour_conditionals, sites, exact=True,
                        )
                    n_states += self._record_underweighted(gradient, state.x, misses)
        finally:
            self._put_other_variables(None)
        return starts, settings, self._unreachable_reason(misses, n_states)

    def _record_underweighted(self, gradient, x: np.ndarray, misses: dict) -> int:
        """Compare the gradient's proposal with the exact one at ``x``; record in
        ``misses`` (site -> (log-probability gap, value, gradient's log-ratio, exact
        log-ratio), the worst seen) every move the gradient underweights. Returns 1 if
        the state was compared (0 where its log density is not finite)."""
        logp, exact = self._exact_source(x)
        if not np.isfinite(logp):
            return 0
        estimated = np.asarray(gradient(x)[1], dtype=np.float64).reshape(np.shape(exact))
        exact = np.asarray(exact, dtype=np.float64)
        flagged = underweighted_moves(estimated, exact, self._code)
        if not flagged.any():
            return 1
        gap = move_log_probabilities(exact, self._code) - move_log_probabilities(
            estimated, self._code)
        for move in zip(*np.nonzero(flagged)):
            site = int(move[0])
            value = int(move[1]) if exact.ndim == 2 else 1 - int(x[site])
            if site not in misses or gap[move] > misses[site][0]:
                misses[site] = (float(gap[move]), value, float(estimated[move]),
                                float(exact[move]))
        return 1

    def _unreachable_reason(self, misses: dict, n_states: int) -> str | None:
        """``proposal_reason`` of a gradient refused for the moves in ``misses`` (None if
        there are none), naming the sites."""
        if not misses:
            return None
        worst = sorted(misses, key=lambda i: -misses[i][0])
        shown = ", ".join(self._site_name(i) for i in sorted(worst[:8]))
        if len(worst) > 8:
            shown += f" and {len(worst) - 8} more"
        gap, value, estimated, exact = misses[worst[0]]
        to = "" if self.is_binary else f" to {value + self.offsets[worst[0]]}"
        how_rarely = (f"proposed {np.exp(gap):.2g} times less often than by exact ratios"
                      if gap < 700.0 else "never proposed")
        # the move's own weight, or its share beside moves whose estimates are far too
        # high (they take the proposal's mass, the more so with sqrt weights): say so
        # when the share loses more than the weight
        own = log_g(exact, self._code) - log_g(estimated, self._code)
        why = (", mostly crowded out by moves whose estimates are far too high"
               if own < gap / 2 else "")
        return (
            f"at {n_states} states drawn from the exact conditionals the gradient's "
            f"proposal would practically never move {shown} (e.g. {self._site_name(worst[0])}"
            f"{to}: estimated local log-ratio {estimated:.1f}, exact {exact:.1f}, "
            f"{how_rarely}{why}), although the target allows those moves: exact ratios are "
            "used"
        )

    def _site_name(self, site: int) -> str:
        """``name[index]`` of a site of the block (raveled index ``site``)."""
        start = 0
        for name, shape in zip(self.var_names, self.shapes):
            size = int(np.prod(shape, dtype=int))
            if site < start + size:
                if not shape:
                    return name
                index = np.unravel_index(site - start, shape)
                return f"{name}[{', '.join(str(int(i)) for i in index)}]"
            start += size
        return f"site {site}"

    def _refuse_gradient(self, exact, reason: str) -> None:
        """Use exact ratios (``exact``, the source the kernel calls) because the
        gradient's proposal would leave moves practically never offered."""
        self._logp_and_ratios = exact
        self.proposal = "exact"
        self.ratios_are_exact = True
        self.proposal_reason = reason

    def _trial_acceptance(self, source, proposal: str, x: np.ndarray) -> float:
        """Mean acceptance probability of a short run of this step's kernel built on the
        ratio source ``source``, at the smallest scale (its own generator: the chain's is
        left untouched)."""
        kernel = self._make_kernel(source, proposal)
        rng = np.random.default_rng(1)
        state = kernel.init(x)
        if not np.isfinite(state.logp):
            return 0.0
        total = 0.0
        for _ in range(self.AUTO_TRIAL_STEPS):
            state, info = kernel.step(state, self._min_scale(), rng)
            total += info.accept_prob
        return total / self.AUTO_TRIAL_STEPS

    def _set_other_variables(self, perturb: bool, rng: np.random.Generator) -> None:
        """Put the model's other variables at their initial values, or (``perturb``) their
        continuous ones at standard normal offsets from them: initial values are often
        atypical (coefficients at 0, cluster means on top of each other), where a
        first-order estimate can look exact or good."""
        for name, shared in self.shared.items():
            value = np.asarray(self._initial_point[name])
            if perturb and np.issubdtype(value.dtype, np.floating):
                value = value + rng.normal(0.0, 1.0, value.shape).astype(value.dtype)
            shared.set_value(value)

    def _put_other_variables(self, values: dict | None) -> None:
        """Put the model's other variables at ``values`` (name -> value, as recorded by
        :meth:`_exact_trial_starts`), or at their initial values (None)."""
        for name, shared in self.shared.items():
            shared.set_value(np.asarray(
                self._initial_point[name] if values is None else values[name]))

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
                self._set_other_variables(perturb, rng)
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
            self._set_other_variables(False, rng)

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


def _seconds_per_call(source, x: np.ndarray, repeats: int = 3) -> float:
    """Best of ``repeats`` timed calls of a ratio source at ``x``, after a warm call."""
    import time

    source(x)
    best = float("inf")
    for _ in range(repeats):
        tick = time.perf_counter()
        source(x)
        best = min(best, time.perf_counter() - tick)
    return best
