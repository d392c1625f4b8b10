"""ALBP as a PyMC step method."""

from __future__ import annotations

from pymc_discrete.kernels.albp import binary_albp_step, categorical_albp_step, init_lb_state
from pymc_discrete.kernels.albp_loop import (
    albp_steps,
    first_class_albp_loop,
    init_compiled_lb_state,
)
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.validation import check_auto_or_bool
from pymc_discrete.pymc.steps.informed_step import InformedStep
from pymc_discrete.pymc.steps.step_kernel import StepKernel, loop_run, python_run

__all__ = ["ALBP"]


class ALBP(InformedStep):
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
    proposal : {"auto", "gradient", "exact"}
        ``"auto"`` (default): the gradient when its ratios are exact for the model
        (checked against single-site moves at construction). Otherwise exact ratios
        whenever the gradient's proposal would practically never offer a move the
        target allows: at a few states drawn from the exact conditionals, a move whose
        exact local log-ratio is at least log(1e-3) but which the gradient proposes more
        than a thousand times less often than exact ratios do (e.g. an indicator that
        enters a covariance, where the first-order estimate of turning it on is far too
        low); ``proposal_reason`` then names the sites, and this refusal depends on the
        model alone, not on timings. Else the gradient only if its single-move proposal
        agrees with the exact one well enough to pay for the exact ratios' extra cost
        (acceptance x cost ratio >= the exact proposal's acceptance), else exact ratios.
        ``proposal_reason`` says what was measured. Nothing is timed: the trials are
        seeded and their cost is counted in evaluations of the model
        (:mod:`~pymc_discrete.pymc.model.step_cost`), so the same model gives the same choice,
        and the same seed the same draws, in any process and under any load.
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
        of sites proposed, ``jump_distance`` the sites changed over the whole draw. The
        draw's steps share one R; while tuning, the tuner then takes their acceptance
        probabilities one by one.
    compiled_loop : bool or "auto"
        Run a draw's steps (when it makes more than one) inside one numba-compiled loop that
        calls the model's log
        density and gradient (or, with exact ratios, its batched elementwise terms)
        compiled by PyTensor in NUMBA mode, instead of a Python loop around a compiled
        function (binary and categorical blocks, either proposal).
        The chain is the same as the Python loop's with that function; each step saves
        the Python work between evaluations (several times the evaluation's own cost on
        models of a few thousand sites), at the price of a numba compilation of the
        model when the step is built (PyTensor caches it on disk) and of the loop: the
        loop calls the model's function through a pointer, so numba caches it on disk
        too, once per machine and set of argument types (a few seconds the first time,
        milliseconds after, in any process), and so
        is the function that builds exact ratios from the model's terms. A draw of one
        step runs the Python kernel on the same compiled function (the same step, with
        less overhead). Default ``"auto"``: on for a block of at least 1,000 sites whose
        log density compiles in PyTensor's NUMBA mode, off otherwise (PyTensor's NUMBA
        backend covers fewer operations than its C backend: a model it cannot compile
        runs in Python, and :attr:`loop_reason` says why).
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        Passed by ``pm.sample`` when it builds the step itself.
    exact_ratios : ExactRatios, optional
        Exact ratios already compiled for this block (as :func:`~pymc_discrete.recommend`
        returns them), used instead of compiling them again.

    Attributes
    ----------
    scale : float
        The current R.
    compiled_loop : bool
        Whether draws of several steps run in the compiled loop.
    loop_reason : str
        Why the compiled loop is on or off (one line).
    proposal : str
        The proposal in use, ``"gradient"`` or ``"exact"`` (after the automatic choice
        or a fallback).
    proposal_reason : str
        Why that proposal is in use (one line).
    fallback_reason : str or None
        Why the gradient proposal was unavailable, if it was.
    ratios_are_exact : bool
        Whether the proposal's local log-ratios equal the exact ones at the initial point
        (checked on up to 200 sites at construction).

    Notes
    -----
    Sampler statistics per draw: ``accept`` (M-H acceptance probability), ``accepted``
    (1.0 or 0.0), ``scaling`` (R used), ``jump_distance`` (sites changed),
    ``n_proposed`` (sites proposed) and ``steps_per_draw`` (M-H steps in the draw).
    Every step also reports ``target_accept`` (what the scale is tuned toward, NaN if
    nothing is tuned) and, for PyMC's progress bar, ``mean_accept`` and ``mean_jump``
    (running means over the draws of the phase, tuning then sampling) and ``stalled``
    (consecutive draws that left the block unchanged; the bar turns red at 100).

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
        proposal: str = "auto",
        initial_scale: float = 1.0,
        adapt: bool = True,
        steps_per_draw: int | str = "auto",
        compiled_loop: bool | str = "auto",
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
        exact_ratios: ExactRatios | None = None,
    ) -> None:
        self._choose_proposal(weight, proposal)
        self._exact_source = exact_ratios
        #: whether draws of several steps run in the numba-compiled loop
        self.compiled_loop = check_auto_or_bool("compiled_loop", compiled_loop)
        super().__init__(
            vars,
            target_accept=target_accept,
            initial_scale=initial_scale,
            adapt=adapt,
            steps_per_draw=steps_per_draw,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
            shared=None if exact_ratios is None else exact_ratios.shared,
        )

    def _build_proposal(self, compile_kwargs: dict | None) -> None:
        if self._exact_source is not None:
            self._check_prebuilt(self._exact_source)
        self._compile_ratios_and_loop(compile_kwargs)

    def _make_kernel(self, source=None, proposal: str | None = None) -> StepKernel:
        """LBP-R on the block's sites, binary or categorical, driven by ``source`` (the
        step's ratio source by default), in a compiled loop when the step has one."""
        source = self._logp_and_ratios if source is None else source
        code = self._code
        kernel_step = binary_albp_step if self.is_binary else categorical_albp_step

        def step(state, scale, rng):
            return kernel_step(state, scale, rng, source, code)

        if not self.compiled_loop:
            def init(x):
                return init_lb_state(x, source, code)

            return StepKernel(proposal or self.proposal, source, init, step, python_run(step))
        categorical = not self.is_binary

        # the other variables' current values are read at every call (PyMC replaces them)
        def init(x):
            return init_compiled_lb_state(x, source.target, source.shared_values(), code,
                                          source=source)

        def loop(state, scale, n_steps, rng):
            extra = source.shared_values()
            # the loop calls the model's function through a pointer: numba caches it on disk
            compiled = source.specialised(first_class_albp_loop, state.x, extra, categorical)
            return albp_steps(state, scale, rng, n_steps, compiled, extra, code)

        return StepKernel(proposal or self.proposal, source, init, step, loop_run(step, loop))
