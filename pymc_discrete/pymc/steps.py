"""ALBP and ARWM as PyMC step methods (``pymc.step_methods.arraystep.ArrayStepShared``)."""

from __future__ import annotations

import warnings

import numpy as np
from pymc.blocking import RaveledVars, StatsType
from pymc.model import modelcontext
from pymc.pytensorf import make_shared_replacements
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence, StepMethodState
from pytensor.tensor.random.basic import BernoulliRV, CategoricalRV

from pymc_discrete.adaptation import ScaleAdapter
from pymc_discrete.kernels.albp import albp_step, init_lb_state
from pymc_discrete.kernels.albp_loop import (
    albp_steps,
    init_compiled_lb_state,
    specialise_albp_loop,
)
from pymc_discrete.kernels.arwm import RWState, arwm_step
from pymc_discrete.kernels.common import StepsInfo
from pymc_discrete.kernels.pas import init_path_state, pafs_step, pas_step
from pymc_discrete.kernels.weights import weight_code
from pymc_discrete.pymc.compiled import (
    compile_exact_logp,
    compile_logp_and_ratios,
    compile_logp_and_table,
)
from pymc_discrete.pymc.exact import ExactRatios
from pymc_discrete.pymc.relaxation import RelaxationError
from pymc_discrete.pymc.validation import (
    block_value_vars,
    check_bool,
    check_discrete_block,
    check_choice,
    check_initial_point,
    check_positive_int,
    check_unit_interval,
)

__all__ = ["ALBP", "ARWM", "PAS", "RelaxationWarning", "TuningWarning", "max_scale"]


class RelaxationWarning(UserWarning):
    """The gradient proposal was unavailable and the step fell back to exact ratios."""


class TuningWarning(UserWarning):
    """Tuning could not bring the acceptance rate near its target."""


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


#: Per-draw sampler statistics of every step of this package (name -> dtype, shape).
STATS_DTYPES_SHAPES: dict[str, tuple[type, list]] = {
    "accept": (np.float64, []),
    "accepted": (np.float64, []),
    "scaling": (np.float64, []),
    "jump_distance": (np.int64, []),
    "n_proposed": (np.int64, []),
}


class _SiteBlockStep(ArrayStepShared):
    """Shared machinery of the M-H steps on a block of discrete sites.

    Subclasses provide ``_init_state(x)`` and ``_kernel_step(state, scale)``.
    """

    default_blocked = True
    stats_dtypes_shapes = STATS_DTYPES_SHAPES
    #: name of the constructor argument that sets the initial scale (for error messages)
    _scale_parameter = "initial_scale"
    _state_class = StepMethodState

    def __init__(
        self,
        vars,
        *,
        target_accept: float,
        initial_scale: float,
        adapt: bool,
        steps_per_draw: int,
        model,
        initial_point,
        rng,
        blocked: bool,
    ) -> None:
        model = modelcontext(model)
        self.target_accept = check_unit_interval("target_accept", target_accept)
        self.steps_per_draw = check_positive_int("steps_per_draw", steps_per_draw)
        value_vars = block_value_vars(model, vars, type(self).__name__, self.competence)
        if initial_point is None:
            initial_point = model.initial_point()
        counts = check_discrete_block(model, value_vars, type(self).__name__, initial_point)
        self.model = model
        self.shapes = [tuple(np.shape(initial_point[v.name])) for v in value_vars]
        self.n_sites = int(sum(np.prod(s, dtype=int) for s in self.shapes))
        #: number of values of every site, raveled in block order
        self.n_categories = np.concatenate(
            [np.full(int(np.prod(s, dtype=int)), k, dtype=np.int64)
             for s, k in zip(self.shapes, counts)]
        )
        self._counts = counts
        self._categorical = [
            isinstance(model.values_to_rvs[v].owner.op, CategoricalRV) for v in value_vars
        ]
        self.is_binary = not any(self._categorical)
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
        self.adapter = ScaleAdapter(self.target_accept, initial_scale, lower, upper, adapt=adapt)

        #: the model's log density at the point the step was built at (NaN when it is
        #: not finite there: ``pm.sample(initvals=...)`` may start elsewhere, and the
        #: start is checked at the first draw instead)
        self._initial_logp = check_initial_point(
            model, initial_point, value_vars, counts, strict=False
        )
        self.tune = True
        self._n_tune: int | None = None
        self._state = None
        self._shared_seen: list[np.ndarray] | None = None
        shared = make_shared_replacements(initial_point, value_vars, model)
        self._initial_point = initial_point
        super().__init__(value_vars, shared, blocked=blocked, rng=rng)

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

    # ---- lifecycle -------------------------------------------------------------------
    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain: new generator, tuning restarted for ``tune`` draws."""
        super().setup_chain(rng, tune, draws)
        self._n_tune = int(tune)
        self.tune = tune > 0
        self.adapter.start(self._tuning_updates())
        self._reset_tuning_record()
        self._state = None

    def reset_tuning(self) -> None:
        """Restart the adaptation of the scale (PyMC calls this at the start of a chain)."""
        self.adapter.start(self._tuning_updates())
        self._reset_tuning_record()
        if self._n_tune is not None and self._n_tune == 0:
            self.tune = False

    def _reset_tuning_record(self) -> None:
        self._tune_steps = 0  # M-H steps of this chain's tuning
        self._tune_moves = 0  # of which accepted moves (stays excluded)
        self._tune_accept_sum = 0.0  # their acceptance probabilities (stays excluded)

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
        """Number of M-H steps of the tune phase (the tuner updates after every step)."""
        return None if self._n_tune is None else self._n_tune * self.steps_per_draw

    @property
    def scale(self) -> float:
        """Current scale R (real-valued; each draw rounds it probabilistically)."""
        return self.adapter.scale

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
                     "jump_distance": 0, "n_proposed": 0}
            return q0, [stats]
        x = np.asarray(q0.data, dtype=np.int64)
        state = self._state
        if self._others_changed() or state is None or not np.array_equal(state.x, x):
            state = self._init_state(x)
            if not np.isfinite(state.logp):
                raise ValueError(
                    f"{type(self).__name__}: the current point has log density {state.logp}"
                    f"{self._offending_terms(x)}; start from a point of positive "
                    "probability (pm.sample(initvals=...))"
                )
            if not self._start_checked:
                self._check_start(x, state.logp)
        start, scale = state.x, self.adapter.scale
        state, info = self._run_steps(state, scale, self.steps_per_draw)
        self._state = state
        if self.tune:
            for prob in info.accept_prob:
                self.adapter.update(float(prob))
            self._record_tuning(info)
        n_steps = len(info.accept_prob)
        stats = {  # sums of short arrays: np.mean's overhead is 10 us a call
            "accept": float(info.accept_prob.sum()) / n_steps,
            "accepted": float(info.accepted.sum()) / n_steps,
            "scaling": float(scale),
            "jump_distance": int(np.count_nonzero(state.x != start)),
            "n_proposed": int(info.n_proposed.sum()),
        }
        return RaveledVars(state.x.astype(q0.data.dtype, copy=True), q0.point_map_info), [stats]

    def _record_tuning(self, info: StepsInfo) -> None:
        """Count the tuning steps and accepted moves (for :meth:`_refuse_a_frozen_chain`)."""
        self._tune_steps += len(info.accept_prob)
        moves = info.n_proposed > 0
        self._tune_moves += int(np.count_nonzero(info.accepted & moves))
        self._tune_accept_sum += float(info.accept_prob[moves].sum())

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
            point[v.name] = x[start : start + size].reshape(shape).astype(point[v.name].dtype)
            start += size
        return point

    def _offending_terms(self, x: np.ndarray) -> str:
        """`` (terms: name=-inf, ...)`` for the terms that are not finite at ``x``."""
        try:
            logps = self.model.point_logps(self._current_point(x), round_vals=12)
        except Exception:  # the message must not fail; the error is raised regardless
            return ""
        bad = [f"{name}={lp}" for name, lp in logps.items() if not np.isfinite(lp)]
        return f" (terms: {', '.join(bad)})" if bad else ""

    def _run_steps(self, state, scale: float, n_steps: int) -> tuple[object, StepsInfo]:
        """``n_steps`` M-H steps at a fixed scale (the tuner sees their acceptance
        probabilities after the draw)."""
        infos = []
        for _ in range(n_steps):
            state, info = self._kernel_step(state, scale)
            infos.append(info)
        return state, StepsInfo.from_steps(infos)

    @staticmethod
    def competence(var, has_grad=False):
        """IDEAL for Bernoulli and Categorical variables, INCOMPATIBLE otherwise."""
        if isinstance(getattr(var.owner, "op", None), BernoulliRV | CategoricalRV):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE


class _InformedStep(_SiteBlockStep):
    """A step whose proposal is driven by local log-ratios (gradient or exact)."""

    def _choose_proposal(self, weight: str, proposal: str) -> None:
        """Check and record the weight function and the source of the local ratios."""
        self.weight = check_choice("weight", weight, ("barker", "sqrt"))
        self.proposal = check_choice("proposal", proposal, ("gradient", "exact"))
        self.fallback_reason: str | None = None
        self._code = weight_code(self.weight)

    def _compile_ratios(self, compile_kwargs: dict | None, numba_loop: bool = False) -> None:
        """Compile ``x -> (logp, local log-ratios)`` for the proposal asked for, falling back
        from the gradient to exact ratios when the model cannot be relaxed. With
        ``numba_loop`` a binary block's function is built in PyTensor's NUMBA mode
        (:class:`~pymc_discrete.pymc.compiled.CompiledRatios`)."""
        self._compile_kwargs = compile_kwargs
        shared = self._shared_vars()
        if self.proposal == "gradient":
            try:
                if self.is_binary:
                    self._logp_and_ratios = compile_logp_and_ratios(
                        self.model, self.vars, self.shapes, shared, compile_kwargs,
                        numba_loop=numba_loop,
                    )
                else:
                    self._logp_and_ratios = compile_logp_and_table(
                        self.model, self.vars, self.shapes, self._categorical,
                        self._counts, shared, compile_kwargs,
                    )
            except RelaxationError as err:
                self._fall_back_to_exact(str(err), stacklevel=4)
            else:
                if self._start_checked:
                    self._check_relaxation(self._initial_point, self._initial_logp)
        if self.proposal == "exact":
            self._compile_exact_ratios()
        self.ratios_are_exact = self._ratios_match_flips()

    def _compile_exact_ratios(self) -> None:
        self._logp_and_ratios = ExactRatios(
            self.model, self.vars, self._initial_point, self._shared_vars(),
            self._compile_kwargs, n_categories=None if self.is_binary else self.n_categories,
        )

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
            x0 = np.concatenate([np.ravel(point[v.name]) for v in self.vars]).astype(np.int64)
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
        x0 = np.concatenate([np.ravel(point[v.name]) for v in self.vars]).astype(np.int64)
        if x0.size == 0:
            return True  # an empty block: nothing to estimate
        sites = np.arange(x0.size)
        if x0.size > max_sites:
            sites = np.sort(rng.choice(x0.size, max_sites, replace=False))
        try:
            for perturb in (False, True):
                for name, s in self.shared.items():
                    value = np.asarray(point[name])
                    if perturb and np.issubdtype(value.dtype, np.floating):
                        value = value + rng.normal(0.0, 1.0, value.shape).astype(value.dtype)
                    s.set_value(value)
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
            for name, s in self.shared.items():
                s.set_value(point[name])

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
        self._fall_back_to_exact(
            f"none of its first {n_steps} gradient proposals was accepted (the first-order "
            "estimates of the local ratios are far from the exact ones here, e.g. near "
            "values of zero probability)",
            stacklevel=5,
        )
        self.compiled_loop = False
        self._compile_exact_ratios()
        self.ratios_are_exact = True
        self._state = None
        self._on_proposal_changed()
        remaining = self._tuning_updates()
        if remaining is not None:
            remaining = max(remaining - n_steps, 1)
        self.adapter.start(remaining)
        self._reset_tuning_record()

    def _on_proposal_changed(self) -> None:
        """Hook: adjust what depends on the proposal after a switch to exact ratios."""

    def _has_possible_move(self, state) -> bool:
        weights = getattr(state, "site_weights", None)
        if weights is None:
            weights = state.weights
        return bool(np.any(np.asarray(weights) > 0.0))


class ALBP(_InformedStep):
    """Adaptive locally balanced proposal for binary and categorical variables.

    Each draw picks R sites without replacement with probability proportional to the
    locally balanced weights ``g(pi(y) / pi(x))`` of flipping them, flips them all and
    accepts or rejects the move as a whole (Metropolis-Hastings on the ordered path). The
    weights come from one gradient of a continuous relaxation of the model, computed with
    the log density at the proposal: one compiled logp+gradient call per draw. During
    tuning R is adapted (dual averaging on log R) toward the acceptance rate
    ``target_accept``, 0.574 being asymptotically optimal; the averaged R is frozen when
    tuning ends.

    Parameters
    ----------
    vars : list of random variables, optional
        Bernoulli and Categorical variables to sample as one block (default: all free
        variables). For a categorical site the proposal picks the site by the sum of the
        weights of its other values, then a new value by weight; the gradient proposal
        relaxes a categorical variable to a one-hot vector.
    weight : {"barker", "sqrt"}
        Locally balanced function: ``t / (1 + t)`` or ``sqrt(t)``.
    target_accept : float
        Acceptance rate R is tuned toward, in (0, 1).
    proposal : {"gradient", "exact"}
        How the local log-ratios ``log pi(x with site i flipped) - log pi(x)`` are
        obtained. ``"gradient"``: a first-order estimate from one gradient of a continuous
        relaxation of the model (exact for log densities multilinear in the sites, such as
        Bernoulli priors and pairwise couplings; first-order only for, e.g., a Gaussian
        likelihood of a linear function of the sites). ``"exact"``: every ratio exactly,
        from one batched call of the model's elementwise terms per draw (sites that share
        no term are flipped together, so the cost is linear in N when interactions are
        sparse). If the model cannot be relaxed, ``"gradient"`` falls back to ``"exact"``
        with a :class:`RelaxationWarning` naming the operation.
    initial_scale : float
        R at the start of tuning, between 1 and half the number of sites.
    adapt : bool
        Tune R during PyMC's tune phase. If False, R stays ``initial_scale``.
    steps_per_draw : int
        Metropolis-Hastings steps per PyMC draw (default 1). Several steps per draw
        spread PyMC's per-draw cost (trace recording, point bookkeeping) over more moves;
        the stats then summarise the draw's steps: ``accept`` is their mean acceptance
        probability, ``accepted`` the fraction accepted, ``n_proposed`` the total number
        of sites proposed, ``jump_distance`` the sites changed over the whole draw. The
        draw's steps share one R; while tuning, the tuner then takes their acceptance
        probabilities one by one.
    compiled_loop : bool
        Run the draw's steps inside one numba-compiled loop that calls the model's log
        density and gradient compiled by PyTensor in NUMBA mode, instead of a Python
        loop around a compiled function (binary blocks with ``proposal="gradient"``).
        The chain is the same as the Python loop's with that function; each step saves
        the Python work between evaluations (several times the evaluation's own cost on
        models of a few thousand sites), at the price of a numba compilation of the
        model when the step is built and of the loop in each process that samples
        (6-18 s together on the benchmark models; the loop is specialised on the model's
        function, so numba cannot cache it on disk). Best with ``steps_per_draw > 1``
        and long runs.
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        Passed by ``pm.sample`` when it builds the step itself.

    Attributes
    ----------
    scale : float
        The current R.
    proposal : str
        The proposal in use (``"exact"`` after a fallback).
    fallback_reason : str or None
        Why the gradient proposal was unavailable, if it was.
    ratios_are_exact : bool
        Whether the proposal's local log-ratios equal the exact ones at the initial point
        (checked on up to 200 sites at construction).

    Notes
    -----
    Sampler statistics per draw: ``accept`` (M-H acceptance probability), ``accepted``
    (1.0 or 0.0), ``scaling`` (R used), ``jump_distance`` (sites changed) and
    ``n_proposed`` (sites proposed).

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     g = pm.Bernoulli("g", 0.3, shape=50)
    ...     idata = pm.sample(step=pmd.ALBP([g]), draws=200, tune=200, chains=1,
    ...                       progressbar=False)  # doctest: +SKIP
    """

    name = "albp"

    def __init__(
        self,
        vars=None,
        *,
        weight: str = "barker",
        target_accept: float = 0.574,
        proposal: str = "gradient",
        initial_scale: float = 1.0,
        adapt: bool = True,
        steps_per_draw: int = 1,
        compiled_loop: bool = False,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
    ) -> None:
        self._choose_proposal(weight, proposal)
        compiled_loop = check_bool("compiled_loop", compiled_loop)
        if compiled_loop and self.proposal != "gradient":
            raise ValueError("compiled_loop=True needs proposal='gradient'")
        super().__init__(
            vars,
            target_accept=target_accept,
            initial_scale=initial_scale,
            adapt=adapt,
            steps_per_draw=steps_per_draw,
            model=model,
            initial_point=initial_point,
            rng=rng,
            blocked=blocked,
        )
        if compiled_loop and not self.is_binary:
            raise ValueError(
                "compiled_loop=True runs binary blocks only; this block has Categorical "
                f"variables ({self.var_names})"
            )
        self._compile_ratios(compile_kwargs, numba_loop=compiled_loop)
        #: whether the draw's steps run in the numba-compiled loop (False after a
        #: fallback to exact ratios)
        self.compiled_loop = compiled_loop and self.proposal == "gradient"

    def _init_state(self, x: np.ndarray):
        if self.is_binary and self.compiled_loop:
            ratios = self._logp_and_ratios
            return init_compiled_lb_state(x, ratios.target, ratios.shared_values(), self._code)
        return init_lb_state(x, self._logp_and_ratios, self._code)

    def _kernel_step(self, state, scale: float):
        return albp_step(state, scale, self.rng, self._logp_and_ratios, self._code)

    def _run_steps(self, state, scale: float, n_steps: int):
        if not self.compiled_loop:
            return super()._run_steps(state, scale, n_steps)
        ratios = self._logp_and_ratios
        loop = ratios.specialised(specialise_albp_loop)
        return albp_steps(
            state, scale, self.rng, n_steps, loop, ratios.shared_values(), self._code
        )


class ARWM(_SiteBlockStep):
    """Adaptive random-walk Metropolis for binary and categorical variables.

    Each draw changes R sites chosen uniformly without replacement, each to a uniformly
    chosen other value (a symmetric proposal), and accepts with the Metropolis ratio; R is tuned during PyMC's tune phase toward
    ``target_accept`` (0.234 is asymptotically optimal). One exact logp evaluation per
    draw; no gradient, so any model with binary or categorical variables works.

    Parameters
    ----------
    vars : list of random variables, optional
        Bernoulli and Categorical variables to sample as one block.
    target_accept : float
        Acceptance rate R is tuned toward, in (0, 1).
    initial_scale : float
        R at the start of tuning.
    adapt : bool
        Tune R during PyMC's tune phase.
    steps_per_draw : int
        Metropolis-Hastings steps per PyMC draw (default 1). Several steps per draw
        spread PyMC's per-draw cost (trace recording, point bookkeeping) over more moves;
        the stats then summarise the draw's steps: ``accept`` is their mean acceptance
        probability, ``accepted`` the fraction accepted, ``n_proposed`` the total number
        of sites proposed, ``jump_distance`` the sites changed over the whole draw.
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        Passed by ``pm.sample`` when it builds the step itself.

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     g = pm.Bernoulli("g", 0.3, shape=50)
    ...     idata = pm.sample(step=pmd.ARWM([g]), chains=1, progressbar=False)  # doctest: +SKIP
    """

    name = "arwm"
    _frozen_advice = "Uniform moves rarely find a state of higher probability: use ALBP."

    def _stuck_advice(self) -> str | None:
        return "The target is too sharp for uniform moves: use ALBP."

    def __init__(
        self,
        vars=None,
        *,
        target_accept: float = 0.234,
        initial_scale: float = 1.0,
        adapt: bool = True,
        steps_per_draw: int = 1,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
    ) -> None:
        super().__init__(
            vars,
            target_accept=target_accept,
            initial_scale=initial_scale,
            adapt=adapt,
            steps_per_draw=steps_per_draw,
            model=model,
            initial_point=initial_point,
            rng=rng,
            blocked=blocked,
        )
        self._logp = compile_exact_logp(
            self.model, self.vars, self._initial_point, self._shared_vars(), compile_kwargs
        )

    def _init_state(self, x: np.ndarray):
        return RWState(x, self._logp(x))

    def _kernel_step(self, state, scale: float):
        categories = None if self.is_binary else self.n_categories
        return arwm_step(state, scale, self.rng, self._logp, categories)

    @staticmethod
    def competence(var, has_grad=False):
        """COMPATIBLE for Bernoulli and Categorical variables (ALBP is the IDEAL choice)."""
        if isinstance(getattr(var.owner, "op", None), BernoulliRV | CategoricalRV):
            return Competence.COMPATIBLE
        return Competence.INCOMPATIBLE


class PAS(_InformedStep):
    """Path auxiliary sampler for binary and categorical variables.

    Each draw walks a path of L single-site moves, each drawn from the locally balanced
    proposal at the current point of the path (sites may repeat), and accepts or rejects
    the path's end as a whole with the path auxiliary Metropolis-Hastings ratio (Sun et
    al., Algorithm 1 and eq. 6). Composing local moves lets it cross valleys that
    single-site and without-replacement samplers cannot (e.g. the parity model). The path
    length L is uniform on {1, ..., 2X - 1}; X is tuned during PyMC's tune phase toward
    ``target_accept`` and frozen after.

    Parameters
    ----------
    vars : list of random variables, optional
        Bernoulli and Categorical variables to sample as one block (default: all free
        variables).
    weight : {"sqrt", "barker"}
        Locally balanced function ``sqrt(t)`` (the paper's choice) or ``t / (1 + t)``.
    proposal : {"gradient", "exact"}
        ``"gradient"`` (PAFS): every move of the forward path is scored with the
        first-order expansion of the relaxed log density at x, every move of the reverse
        path with the expansion at y, so a draw costs one logp+gradient call plus
        O(N + L (K + log N)). ``"exact"`` (PAS): exact local ratios at every point of the
        path, one batched evaluation of the model's terms per move (L per draw). A model
        that cannot be relaxed falls back to ``"exact"`` with a
        :class:`RelaxationWarning`.
    path_length : float, optional
        X, the mean path length, at the start of tuning (or always, with
        ``adapt=False``); between 1.5 (paths of one and of two moves must both occur,
        or the chain can be periodic) and ``max(1.5, N)``, N the number of sites.
        Default: 2.
    adapt : bool
        Tune X during PyMC's tune phase (dual averaging on log X, averaged iterate frozen
        at the end of tuning).
    steps_per_draw : int
        Metropolis-Hastings steps per PyMC draw (default 1). Several steps per draw
        spread PyMC's per-draw cost (trace recording, point bookkeeping) over more moves;
        the stats then summarise the draw's steps: ``accept`` is their mean acceptance
        probability, ``accepted`` the fraction accepted, ``n_proposed`` the total number
        of sites proposed, ``jump_distance`` the sites changed over the whole draw.
    target_accept : float
        Acceptance rate X is tuned toward, in (0, 1). The default 0.574 is the optimum
        of the locally balanced proposal that changes several sites at once (Sun et al.
        give none for paths); ``benchmarks/run_path.py`` shows the tuned X near the X of
        largest expected jump per second on the Ising model.
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        Passed by ``pm.sample`` when it builds the step itself.
    max_path_length : float, optional
        Upper bound of X for the tuner, at least 1.5. Default: N for the gradient proposal (a path
        costs O(N + L log N), so long paths are cheap) and ``min(N, 32)`` for the exact
        one (every move costs an evaluation of the model, so the acceptance rate alone
        would buy long paths at a cost that grows with them).

    Attributes
    ----------
    scale : float
        The current X.
    proposal : str
        The proposal in use (``"exact"`` after a fallback).
    fallback_reason : str or None
        Why the gradient proposal was unavailable, if it was.
    ratios_are_exact : bool
        Whether the gradient ratios equal the exact ones at the initial point.

    Notes
    -----
    Sampler statistics per draw: ``accept``, ``accepted``, ``scaling`` (X used),
    ``n_proposed`` (the path length L) and ``jump_distance`` (Hamming distance between
    the old and the new point; a path may return sites to their values).

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     x = pm.Bernoulli("x", 0.5, shape=20)
    ...     idata = pm.sample(step=pmd.PAS([x]), chains=1, progressbar=False)  # doctest: +SKIP
    """

    name = "pas"
    _scale_parameter = "path_length"
    _scale_bounds_reason = (
        "X is the mean path length: at least 1.5, so that paths of one and of two moves "
        "both occur and the chain is aperiodic, and at most the number of sites (or "
        "max_path_length; 32 for exact ratios, where every move costs an evaluation)"
    )

    def _stuck_advice(self) -> str | None:
        return (
            "On targets where only some path lengths can be accepted (e.g. the parity "
            "model, where odd paths change the parity) the acceptance rises with X and the "
            "tuner cannot find it: fix the path length, e.g. PAS(path_length=10, adapt=False)."
        )

    def __init__(
        self,
        vars=None,
        *,
        weight: str = "sqrt",
        proposal: str = "gradient",
        path_length: float | None = None,
        max_path_length: float | None = None,
        adapt: bool = True,
        steps_per_draw: int = 1,
        target_accept: float = 0.574,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
    ) -> None:
        self._choose_proposal(weight, proposal)
        self._max_path_length = max_path_length
        super().__init__(
            vars,
            target_accept=target_accept,
            initial_scale=path_length,
            adapt=adapt,
            steps_per_draw=steps_per_draw,
            model=model,
            initial_point=initial_point,
            rng=rng,
            blocked=blocked,
        )
        self._compile_ratios(compile_kwargs)
        if self.fallback_reason is not None:
            self._on_proposal_changed()
            self.adapter.start(None)

    def _on_proposal_changed(self) -> None:
        """Exact ratios now: their bound on X applies."""
        upper = self._max_scale(self.n_sites)
        self.adapter.upper = upper
        self.adapter.initial_scale = min(self.adapter.initial_scale, upper)

    def _resolve_initial_scale(self, initial_scale):
        """``path_length=None``: X = 2 (1.5 on a block of one site)."""
        if initial_scale is None:
            return min(2.0, self._max_scale(self.n_sites))
        return initial_scale

    def _min_scale(self) -> float:
        """X >= 1.5: with X = 1 every path has length 1, and a target on which every
        single move is accepted (e.g. fair coins) would see the chain alternate
        deterministically (a periodic chain)."""
        return 1.5

    def _max_scale(self, n_sites: int) -> float:
        """X may reach N (a path of random length, sites drawn with replacement, is no
        involution, so the "flip everything" periodicity that caps R at N/2 cannot
        occur), and at least 1.5; exact paths stop at 32 by default (``max_path_length``)."""
        upper = float(max(1.5, n_sites))
        if self._max_path_length is not None:
            try:
                bound = float(self._max_path_length)
            except (TypeError, ValueError):
                bound = float("nan")
            if not 1.5 <= bound:
                raise ValueError(
                    f"max_path_length must be a number >= 1.5, got {self._max_path_length!r}"
                )
            return min(upper, bound)
        return upper if self.proposal == "gradient" else min(upper, 32.0)

    def _init_state(self, x: np.ndarray):
        return init_path_state(x, self._logp_and_ratios, self._code)

    def _kernel_step(self, state, scale: float):
        step = pafs_step if self.proposal == "gradient" else pas_step
        return step(state, scale, self.rng, self._logp_and_ratios, self._code)

    @staticmethod
    def competence(var, has_grad=False):
        """COMPATIBLE for Bernoulli and Categorical variables (ALBP is the IDEAL choice)."""
        if isinstance(getattr(var.owner, "op", None), BernoulliRV | CategoricalRV):
            return Competence.COMPATIBLE
        return Competence.INCOMPATIBLE
