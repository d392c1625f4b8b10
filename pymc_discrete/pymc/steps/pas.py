"""PAS (and its linearised form PAFS) as a PyMC step method."""

from __future__ import annotations

import functools
import math

import numpy as np
from pymc.step_methods.compound import Competence

from pymc_discrete.adaptation.scale import PathLengthAdapter, ScaleAdapter
from pymc_discrete.kernels.pas import (
    init_path_state,
    pafs_step,
    pas_step,
    path_length_contrast,
)
from pymc_discrete.kernels.pas_loop import (
    PathStepsInfo,
    first_class_pas_loop,
    init_compiled_path_state,
    pas_steps,
)
from pymc_discrete.pymc.model.validation import check_auto_or_bool
from pymc_discrete.pymc.steps.auto_proposal import jump_per_cost
from pymc_discrete.pymc.steps.informed_step import InformedStep
from pymc_discrete.pymc.steps.step_kernel import StepKernel, loop_run, python_run

__all__ = ["PAS"]


class PAS(InformedStep):
    """Path auxiliary sampler for binary and categorical variables.

    Each draw walks a path of L single-site moves, each drawn from the locally balanced
    proposal at the current point of the path (sites may repeat), and accepts or rejects
    the path's end as a whole with the path auxiliary Metropolis-Hastings ratio (Sun et
    al., Algorithm 1 and eq. 6). Composing local moves lets it cross valleys that
    single-site and without-replacement samplers cannot (e.g. the parity model). The path
    length L is uniform on {1, ..., 2X - 1}; X is tuned during PyMC's tune phase and
    frozen after: toward the largest expected jump per unit of cost (by default), or
    toward an acceptance rate ``target_accept``.

    Parameters
    ----------
    vars : list of random variables, optional
        Bernoulli and Categorical variables to sample as one block (default: all free
        variables).
    weight : {"sqrt", "barker"}
        Locally balanced function ``sqrt(t)`` (the paper's choice) or ``t / (1 + t)``.
    proposal : {"auto", "gradient", "exact"}
        ``"auto"`` (default): a short trial of both proposals at X = 4 decides, by the
        expected jump (acceptance probability x sites changed) per counted evaluation of
        the model: the gradient's linearisation at x can be exact for single moves and
        still wrong along a path (on the parity model it sends even paths back to x).
        Where the gradient's single-site ratios are exact for the model (checked against
        single-site moves at construction), the exact proposal evaluates that same
        gradient at every point of the path, which is then exact and cheaper than the
        model's batched terms.
        Before any trial, exact ratios are chosen whenever the gradient's proposal would
        practically never offer a move the target allows (the check of
        :class:`~pymc_discrete.pymc.steps.albp.ALBP`, with these weights; it depends on the
        model alone, and ``proposal_reason`` names the sites).
        ``proposal_reason`` says what was measured. Nothing is timed: the trials are
        seeded and their cost is counted in evaluations of the model
        (:mod:`~pymc_discrete.pymc.model.step_cost`), so the same model gives the same choice,
        and the same seed the same draws, in any process and under any load.
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
        Tune X during PyMC's tune phase (windowed dual averaging on log X, the criterion
        below; the value frozen at the end of tuning comes from the last window).
    steps_per_draw : int or "auto"
        Metropolis-Hastings steps per PyMC draw. Default ``"auto"``: one per tuning draw,
        then, on a block of at least 1,000 sites, as many (up to 8) as keep a draw's
        steps changing at most a quarter of the sites on average, judged from what the
        steps changed in the second half of tuning
        (:func:`~pymc_discrete.adaptation.steps_per_draw.auto_steps_per_draw`): PyMC's
        per-draw cost is then shared by several steps while consecutive draws lose
        little precision per step; smaller blocks keep one step. The choice depends on
        the seed, not on timings. The ``steps_per_draw`` stat records it. Several steps per draw
        spread PyMC's per-draw cost (trace recording, point bookkeeping) over more moves;
        the stats then summarise the draw's steps: ``accept`` is their mean acceptance
        probability, ``accepted`` the fraction accepted, ``n_proposed`` the total number
        of sites proposed, ``jump_distance`` the sites changed over the whole draw.
    target_accept : float, optional
        Default None: X is tuned toward the largest expected jump per unit of cost
        (:class:`~pymc_discrete.adaptation.scale.PathLengthAdapter`): every X mixes
        shorter and longer paths, and X grows while the longer ones jump further per
        evaluation of the model than the shorter ones. No acceptance rate is known to
        be optimal for paths (Sun et al. give none), and the acceptance need not fall as
        X grows: on the parity model it rises (odd paths change the parity and are
        rejected), and tuning toward a rate would drive X to the single-site sampler. A
        number in (0, 1) tunes X toward that acceptance rate instead (0.574, the optimum of
        the locally balanced proposal that changes several sites at once, was the
        previous default).
    compiled_loop : bool or "auto"
        Run a draw's steps (when it makes more than one) inside one numba-compiled loop that
        calls the model's log
        density and local ratios compiled by PyTensor in NUMBA mode (the relaxation's
        gradient, or the model's batched elementwise terms for exact ratios), instead of
        a Python loop around a compiled function: PAFS and PAS, binary and categorical
        blocks, every proposal (``"auto"`` keeps its choice). The chain is the same, bit
        for bit, as the Python loop's with that function: the loop draws from the step's
        generator the numbers the Python steps would. Each step saves the Python work
        between evaluations of the model (one per step for PAFS, one per move of the
        path for PAS), at the price of a numba compilation of the model when the step is
        built (PyTensor caches it on disk) and of the loop (it calls the model's function
        through a pointer, so numba caches it on disk: about 10 s once per machine and
        set of argument types). A draw of one step runs the Python kernel on the same
        compiled function. Default ``"auto"``: on for a block of at least 1,000 sites
        whose log density compiles in PyTensor's NUMBA mode, off otherwise
        (:attr:`loop_reason` says why).
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        Passed by ``pm.sample`` when it builds the step itself.
    max_path_length : float, optional
        Upper bound of X for the tuner, at least 1.5. Default: N for the gradient proposal (a path
        costs O(N + L log N), so long paths are cheap) and ``min(N, 32)`` for the exact
        one (every move costs an evaluation of the model).

    Attributes
    ----------
    scale : float
        The current X.
    proposal : str
        The proposal in use, ``"gradient"`` or ``"exact"`` (after the automatic choice
        or a fallback).
    proposal_reason : str
        Why that proposal is in use (one line).
    fallback_reason : str or None
        Why the gradient proposal was unavailable, if it was.
    ratios_are_exact : bool
        Whether the gradient ratios equal the exact ones at the initial point.
    compiled_loop : bool
        Whether draws of several steps run in the compiled loop.
    loop_reason : str
        Why the compiled loop is on or off (one line).

    Notes
    -----
    Sampler statistics per draw: ``accept``, ``accepted``, ``scaling`` (X used),
    ``n_proposed`` (the path length L) and ``jump_distance`` (Hamming distance between
    the old and the new point; a path may return sites to their values), ``steps_per_draw``
    (M-H steps in the draw);
    ``target_accept`` is NaN unless X is tuned toward an acceptance rate. For PyMC's
    progress bar every step also reports ``mean_accept`` and ``mean_jump`` (running means
    over the draws of the phase, tuning then sampling) and ``stalled`` (consecutive draws
    that left the block unchanged; the bar turns red at 100).

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     x = pm.Bernoulli("x", 0.5, shape=20)
    ...     idata = pm.sample(step=pmd.PAS([x]), chains=1, progressbar=False)  # doctest: +SKIP
    """

    name = "pas"
    _competence_level = Competence.COMPATIBLE  # ALBP is the IDEAL choice
    _scale_parameter = "path_length"
    _scale_bounds_reason = (
        "X is the mean path length: at least 1.5, so that paths of one and of two moves "
        "both occur and the chain is aperiodic, and at most the number of sites (or "
        "max_path_length; 32 for exact ratios, where every move costs an evaluation)"
    )

    def _stuck_advice(self) -> str | None:
        return (
            "On targets where only some path lengths can be accepted (e.g. the parity "
            "model, where odd paths change the parity) the acceptance rises with X and "
            "no X reaches the target: leave target_accept at None (X tuned for the jump "
            "per unit of cost), or fix the path length, e.g. "
            "PAS(path_length=10, adapt=False)."
        )

    def __init__(
        self,
        vars=None,
        *,
        weight: str = "sqrt",
        proposal: str = "auto",
        path_length: float | None = None,
        max_path_length: float | None = None,
        adapt: bool = True,
        steps_per_draw: int | str = "auto",
        target_accept: float | None = None,
        compiled_loop: bool | str = "auto",
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
    ) -> None:
        self._choose_proposal(weight, proposal)
        #: whether draws of several steps run in the numba-compiled loop
        self.compiled_loop = check_auto_or_bool("compiled_loop", compiled_loop)
        self._max_path_length = max_path_length
        #: whether X is tuned for the jump per cost (else toward ``target_accept``)
        self.tunes_for_jumps = target_accept is None
        #: whether the exact proposal evaluates the relaxation's gradient (exact for
        #: this model) rather than the model's batched terms
        self._exact_from_gradient = False
        super().__init__(
            vars,
            # the jump criterion's signal is tuned toward 1/2 (PathLengthAdapter)
            target_accept=0.5 if target_accept is None else target_accept,
            initial_scale=path_length,
            adapt=adapt,
            steps_per_draw=steps_per_draw,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
        )

    def _build_proposal(self, compile_kwargs: dict | None) -> None:
        self._compile_ratios_and_loop(compile_kwargs)

    def _build_adapter(self, initial_scale, adapt: bool) -> ScaleAdapter:
        """The bounds of :class:`SiteBlockStep`; a :class:`PathLengthAdapter` unless an
        acceptance rate was asked for."""
        adapter = super()._build_adapter(initial_scale, adapt)
        if not self.tunes_for_jumps:
            return adapter
        return PathLengthAdapter(adapter.initial_scale, adapter.lower, adapter.upper,
                                 adapt=adapter.adapt)

    @property
    def _target_stat(self) -> float:
        """The ``target_accept`` stat: NaN when X is tuned for the jump per cost (no
        acceptance rate is aimed at) or fixed."""
        if self.tunes_for_jumps or not self.adapter.adapt:
            return float("nan")
        return self.target_accept

    def _path_cost(self, length: int) -> float:
        """Cost of a step with a path of ``length`` moves, in evaluations of the model:
        one for the step's own overhead (PyMC's bookkeeping of a draw is of that order),
        plus one evaluation per move with exact ratios, or one logp+gradient call and a
        walk of O(L (K + log N)) operations beside the O(N) of the call with the
        gradient."""
        if self.proposal == "exact":
            return 1.0 + length
        return 2.0 + length * self._move_cost

    @functools.cached_property
    def _move_cost(self) -> float:
        """(K + log2 N) / N: a linearised move beside an O(N) evaluation."""
        n = max(self.n_sites, 1)
        return (float(np.max(self.n_categories, initial=2)) + math.log2(n + 1)) / n

    def _make_kernel(self, source=None, proposal: str | None = None) -> StepKernel:
        """Path steps driven by ``source`` (the step's ratio source by default): PAFS
        (linearised paths) for the gradient, PAS (exact ratios at every point of the
        path) otherwise, in a compiled loop when the step has one. A draw's info has the
        steps' Hamming distances too (:class:`~pymc_discrete.kernels.pas_loop.PathStepsInfo`),
        which the tuner of X reads (:meth:`_observe_draw`)."""
        source = self._logp_and_ratios if source is None else source
        proposal = self.proposal if proposal is None else proposal
        code = self._code
        linearised = proposal == "gradient"
        kernel_step = pafs_step if linearised else pas_step

        def step(state, scale, rng):
            return kernel_step(state, scale, rng, source, code)

        if not self.compiled_loop:
            def init(x):
                return init_path_state(x, source, code)

            return StepKernel(proposal, source, init, step, python_run(step, PathStepsInfo.from_steps))

        # the other variables' current values are read at every call (PyMC replaces them)
        def init(x):
            return init_compiled_path_state(x, source.target, source.shared_values(), code,
                                            source=source)

        def loop(state, scale, n_steps, rng):
            extra = source.shared_values()
            # the loop calls the model's function through a pointer: cached on disk
            compiled = source.specialised(first_class_pas_loop, state.x, extra)
            return pas_steps(state, scale, rng, n_steps, compiled, extra, code,
                             linearised=linearised)

        return StepKernel(proposal, source, init, step,
                          loop_run(step, loop, PathStepsInfo.from_steps))

    def _observe_draw(self, state, info, scale: float) -> None:
        """While X is tuned for the jump per cost, each step's expected jump, cost and
        side of X go to the tuner, in order, before the draw's acceptance does (the
        tuner only accumulates them until its update after the draw)."""
        if not (self.tunes_for_jumps and self.adapter.tuning):
            return
        for prob, distance, length in zip(info.accept_prob.tolist(), info.distance.tolist(),
                                          info.n_proposed.tolist()):
            self.adapter.observe(prob * distance, self._path_cost(length),
                                 path_length_contrast(scale, length))

    _auto_criterion = staticmethod(jump_per_cost)
    _trial_exact_gradient = True

    def _check_start(self, x: np.ndarray, logp: float) -> None:
        """The relaxation check, deferred to the first point of positive probability,
        also where the exact proposal evaluates the relaxation."""
        super()._check_start(x, logp)
        if self.proposal == "exact" and self._exact_from_gradient:
            self._check_relaxation(self._current_point(x), None)

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

    def _max_scale(self, n_sites: int, proposal: str | None = None) -> float:
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
        proposal = self.proposal if proposal is None else proposal
        return upper if proposal == "gradient" else min(upper, 32.0)
