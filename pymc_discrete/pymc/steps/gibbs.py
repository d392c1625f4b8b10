"""BlockedGibbs: exact conditional updates of whole colour classes, as a PyMC step method."""

from __future__ import annotations

from pymc.step_methods.compound import Competence

from pymc_discrete.adaptation.steps_per_draw import LARGE_BLOCK
from pymc_discrete.kernels.gibbs import HEAT_BATH_SHARE, GibbsState, blocked_gibbs_sweep
from pymc_discrete.kernels.gibbs_loop import first_class_gibbs_loop, gibbs_sweeps
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.validation import check_auto_or_bool
from pymc_discrete.pymc.steps.block_step import SiteBlockStep
from pymc_discrete.pymc.steps.step_kernel import StepKernel, loop_run, python_run

__all__ = ["BlockedGibbs"]


class BlockedGibbs(SiteBlockStep):
    """Blocked Gibbs sampler for binary and categorical variables, blocked by the model's
    structure.

    At construction the model's log density is split into elementwise terms and the sites
    are coloured so that sites of one colour share no term (the machinery of
    ``proposal="exact"``). Given everything else, the sites of one colour are then
    independent, and a draw updates each colour in turn by drawing all its sites at once
    from their exact conditionals: one batched evaluation of the terms at ``K`` states
    per colour (``1 + K`` where a parameter check reads the sites or the colouring was
    only probed), whatever the number of sites. All labels of a mixture, all
    indicators of an occupancy or capture-recapture model, or half of an Ising lattice
    are one colour.

    The colouring is read off the model's graph, which is sound: sites of one colour
    share no term at any state, and each colour's draw is an exact Gibbs update. When the
    graph cannot be analysed the colouring comes from probing the model at a few points,
    which could miss a coupling that shows at none of them; then each colour's draw is a
    proposal corrected by Metropolis-Hastings (a second batched evaluation, at the
    proposal), so a missed coupling costs acceptance and never biases the chain.

    Parameters
    ----------
    vars : list of random variables, optional
        Bernoulli and Categorical variables to sample as one block (default: all free
        variables).
    sweeps_per_draw : int or "auto"
        Sweeps over all colours per PyMC draw. Default ``"auto"``: one per tuning draw,
        then the number :func:`~pymc_discrete.adaptation.steps_per_draw.auto_steps_per_draw`
        gives from the sites the late tuning sweeps changed: one on most models (a sweep
        redraws every site and changes many), more on a block of at least 1,000 sites
        where a sweep changes few (a strongly coupled lattice). The ``steps_per_draw`` stat
        records it.
    heat_bath_share : float
        Share of each site's updates drawn afresh from its conditional (heat bath); the
        rest propose a value other than the current one (Metropolised Gibbs, which moves
        more often). Default 0.1; 1 draws every site afresh (what a collapsed sampler
        needs: :class:`~pymc_discrete.CollapsedNUTS`).
    compiled_loop : bool or "auto"
        Run a draw's sweeps (when it makes more than one) inside one numba-compiled loop that
        calls the model's
        batched terms compiled by PyTensor in NUMBA mode, instead of a Python loop over
        the colours around a compiled function. The chain is the same, draw for draw;
        each colour saves the Python work between evaluations, at the price of a numba
        compilation of the terms (once per step; PyTensor caches it on disk) and of the
        loop (it calls the terms through a pointer, so numba caches it on disk: once per
        machine and set of argument types). Default ``"auto"``: on for a block of at
        least 1,000 sites whose terms compile in PyTensor's NUMBA mode, off otherwise
        (:attr:`loop_reason` says why).
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        Passed by ``pm.sample`` when it builds the step itself.
    exact_ratios : ExactRatios, optional
        The block's structure, already read (by :func:`~pymc_discrete.recommend`): the
        step then reads the model's other variables through its shared variables.

    Attributes
    ----------
    n_colours : int
        Number of colours (batched evaluations per sweep, two each when corrected).
    proven : bool
        Whether the colouring is proven by the graph (exact Gibbs updates) rather than
        probed (Metropolis-Hastings corrected updates).
    compiled_loop : bool
        Whether the sweeps run in the compiled loop.
    loop_reason : str
        Why the compiled loop is on or off (one line).

    Notes
    -----
    Sampler statistics per draw, as for the other steps: ``accept`` (mean acceptance
    probability over the colours: 1 for exact updates), ``accepted`` (whether every
    colour's draw was accepted), ``scaling`` (the number of colours), ``n_proposed``
    (sites whose drawn value differed from the current one) and ``jump_distance``
    (sites changed by the draw), ``steps_per_draw`` (sweeps in the draw).
    Every step also reports ``target_accept`` (what the scale is tuned toward, NaN if
    nothing is tuned) and, for PyMC's progress bar, ``mean_accept`` and ``mean_jump``
    (running means over the draws of the phase, tuning then sampling) and ``stalled``
    (consecutive draws that left the block unchanged; the bar turns red at 100).

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     p = pm.Beta("p", 1, 1)
    ...     z = pm.Bernoulli("z", p, shape=100)
    ...     idata = pm.sample(step=[pmd.BlockedGibbs([z])], chains=1,
    ...                       progressbar=False)  # doctest: +SKIP
    """

    name = "blocked_gibbs"
    _competence_level = Competence.COMPATIBLE  # register() chooses it by structure
    _scale_parameter = "sweeps_per_draw"
    _steps_parameter = "sweeps_per_draw"
    _scale_bounds_reason = "the number of colours is fixed by the model"

    def __init__(
        self,
        vars=None,
        *,
        sweeps_per_draw: int | str = "auto",
        heat_bath_share: float = HEAT_BATH_SHARE,
        compiled_loop: bool | str = "auto",
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
        exact_ratios: ExactRatios | None = None,
    ) -> None:
        if not 0.0 < heat_bath_share <= 1.0:
            raise ValueError(f"heat_bath_share must be in (0, 1], got {heat_bath_share}")
        self.heat_bath_share = float(heat_bath_share)
        #: whether the draw's sweeps run in the numba-compiled loop
        self.compiled_loop = check_auto_or_bool("compiled_loop", compiled_loop)
        self._prebuilt = exact_ratios
        super().__init__(
            vars,
            target_accept=None,  # nothing is tuned: the scale is the number of colours
            initial_scale=None,
            adapt=False,
            steps_per_draw=sweeps_per_draw,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
            shared=None if exact_ratios is None else exact_ratios.shared,
        )

    def _build_proposal(self, compile_kwargs: dict | None) -> None:
        exact = self._block_exact_ratios(compile_kwargs)
        self._exact = exact
        self._colour_sites = exact.colour_sites()
        self.n_colours = len(self._colour_sites)
        self.proven = exact.proven
        self._layout = None
        self._resolve_compiled_loop(exact)

    def _resolve_compiled_loop(self, exact: ExactRatios) -> None:
        """Build the compiled loop when asked for; with ``compiled_loop="auto"``, for a
        block of at least :data:`LARGE_BLOCK` sites whose terms compile in PyTensor's
        NUMBA mode (else the sweeps run in Python, saying why in :attr:`loop_reason`)."""
        asked = self.compiled_loop
        if asked == "auto" and self.n_sites < LARGE_BLOCK:
            self.compiled_loop = False
            self.loop_reason = (f"a block of {self.n_sites} sites (fewer than {LARGE_BLOCK}):"
                                " the Python between colours is not what a draw costs")
            return
        if not asked:
            self.loop_reason = "compiled_loop=False was asked for"
            return
        try:
            # compiled with the step, not at its first draw
            terms = exact.compiled_terms()
            self._layout = exact.sweep_layout(self.heat_bath_share)
            terms.specialised(first_class_gibbs_loop, self.n_sites, self._layout.like,
                              terms.shared_values())
        except Exception as err:  # noqa: BLE001 - any failure of the NUMBA build
            if asked is True:
                raise
            self.compiled_loop, self._layout = False, None
            self.loop_reason = ("the model's terms did not compile in PyTensor's NUMBA mode "
                                f"({type(err).__name__}: {err}): the sweeps run in Python")
            return
        self.compiled_loop = True
        self.loop_reason = (f"compiled_loop={asked!r}" + (
            f": a block of {self.n_sites} sites (at least {LARGE_BLOCK}) whose terms "
            "compile in PyTensor's NUMBA mode" if asked == "auto" else " was asked for")
            + "; draws of several sweeps run in the compiled loop")

    def _resolve_initial_scale(self, initial_scale) -> float:
        return float(max(1, self.n_colours))

    def _max_scale(self, n_sites: int) -> float:
        return float(max(1, getattr(self, "n_colours", 1)))

    def _make_kernel(self) -> StepKernel:
        """Sweeps of the colours' exact conditionals, in a compiled loop when the step
        has one (a draw of one sweep runs the vectorised Python sweep, which costs no
        more; the loop saves the Python between sweeps)."""
        exact = self._exact
        colour_sites, proven, share = self._colour_sites, self.proven, self.heat_bath_share

        def init(x):
            return GibbsState(x, exact.block_logp(x))

        def step(state, scale, rng):
            return blocked_gibbs_sweep(state, rng, exact.colour_conditionals, colour_sites,
                                       proven, share)

        if not self.compiled_loop:
            return StepKernel("conditionals", exact, init, step, python_run(step))
        terms, layout = exact.compiled_terms(), self._layout

        def loop(state, scale, n_steps, rng):
            extra = terms.shared_values()  # the other variables' current values
            # the loop calls the terms through a pointer: numba caches it on disk
            compiled = terms.specialised(first_class_gibbs_loop, state.x.size, layout.like,
                                         extra)
            return gibbs_sweeps(state, rng, n_steps, compiled, extra, layout)

        return StepKernel("conditionals", exact, init, step, loop_run(step, loop))

    @property
    def exact_ratios(self) -> ExactRatios:
        """The block's exact ratios (terms, colouring, set-up report)."""
        return self._exact

    def _stuck(self) -> bool:
        # exact conditionals that never change a site say the posterior is that sharp,
        # not that the sampler failed
        return not self.proven and super()._stuck()
