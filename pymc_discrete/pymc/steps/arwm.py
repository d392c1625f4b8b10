"""ARWM as a PyMC step method."""

from __future__ import annotations

import numpy as np
from pymc.step_methods.compound import Competence
from pymc.step_methods.state import dataclass_state

from pymc_discrete.adaptation import ScaleAdapter
from pymc_discrete.kernels.arwm import RWState, arwm_step
from pymc_discrete.pymc.model.compiled import compile_exact_logp
from pymc_discrete.pymc.steps.block_step import SiteBlockStep, SiteBlockStepState
from pymc_discrete.pymc.steps.step_kernel import StepKernel, python_run

__all__ = ["ARWM", "ARWMState"]

#: an ordinal variable's step width, in standard deviations s of its sites' values over a
#: tuning window. Steps uniform on 1 .. 3s have a standard deviation of about 1.7 s: a
#: little under the 2.4 s at which a random walk moving one site at a time mixes best (a
#: variable alone in its block: R is then 1), because the spread of a window is an
#: underestimate while the chain is still slow, and because where many sites move at
#: once R is tuned along with the widths (smaller steps, more sites per proposal)
WIDTH_SPREADS = 3.0

#: fewest draws a window needs for its spread to set the widths
_MIN_WIDTH_WINDOW = 10


@dataclass_state
class ARWMState(SiteBlockStepState):
    """:class:`~pymc_discrete.pymc.steps.block_step.SiteBlockStepState` and the step widths of
    the ordinal sites: those in use and the window of tuning draws they are learnt from.

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     n = pm.Binomial("n", n=30, p=0.4)
    ...     state = pmd.ARWM([n]).sampling_state
    >>> state._widths is None  # log-uniform distances until tuning learns a width
    True
    """

    _widths: np.ndarray | None
    _width_ends: list
    _width_draws: int
    _window_draws: int
    _window_sum: np.ndarray | None
    _window_sumsq: np.ndarray | None


class ARWM(SiteBlockStep):
    """Adaptive random-walk Metropolis for binary, categorical and finite integer
    variables.

    Each draw proposes to change R sites chosen uniformly without replacement and accepts
    with the Metropolis ratio; R is tuned during PyMC's tune phase toward
    ``target_accept`` (0.234 is asymptotically optimal). What a chosen site is proposed
    depends on its variable:

    - Bernoulli (and any site of two values): the other value.
    - Categorical: a uniformly chosen other category (categories have no order).
    - Binomial, BetaBinomial, DiscreteUniform (ordinal integers): a random-walk step to a
      near value, up or down, reflected back into the range at either end
      (:mod:`~pymc_discrete.kernels.arwm`). Its distance is uniform on 1 .. w, with a
      width w per variable learnt while tuning: at the ends of the first eighth, quarter
      and half of tuning (where the tuning of R restarts, so R follows each new width),
      ``WIDTH_SPREADS`` standard deviations of the variable's values over the window just
      ended, at least 1. Until the first width, and throughout without tuning
      (``adapt=False`` or ``tune=0`` without :meth:`resume`), the distance is
      log-uniform on 1 .. K-1 (K values), which needs no width: near values are the
      most likely, far ones still proposed. The widths are frozen with R when tuning
      ends (:attr:`widths`).

    Every proposal is symmetric, so the acceptance probability is the ratio of the model's
    densities. One exact logp evaluation per draw; no gradient, so any model with such
    variables works.

    Parameters
    ----------
    vars : list of random variables, optional
        Bernoulli, Categorical and finite integer variables (DiscreteUniform, Binomial,
        BetaBinomial with fixed bounds) to sample as one block.
    target_accept : float
        Acceptance rate R is tuned toward, in (0, 1).
    initial_scale : float
        R at the start of tuning.
    adapt : bool
        Tune R (and learn the widths of ordinal sites) during PyMC's tune phase.
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
    _state_class = ARWMState
    _competence_level = Competence.COMPATIBLE  # ALBP is the IDEAL choice
    _frozen_advice = ("Moves blind to the target rarely find a state of higher probability: "
                      "use ALBP.")

    def _stuck_advice(self) -> str | None:
        return "The target is too sharp for moves blind to it: use ALBP."

    def __init__(
        self,
        vars=None,
        *,
        target_accept: float = 0.234,
        initial_scale: float = 1.0,
        adapt: bool = True,
        steps_per_draw: int | str = "auto",
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
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
        )
        sizes = [int(np.prod(shape, dtype=np.int64)) for shape in self.shapes]
        # the variable every site belongs to, for the widths pooled by variable
        self._site_var = np.repeat(np.arange(len(sizes)), sizes)
        self._widths = None
        self._reset_widths()

    @property
    def widths(self) -> np.ndarray | None:
        """Step width of every site in use (read at ordinal sites; None: log-uniform
        distances)."""
        return self._widths

    # ---- the widths of ordinal sites -------------------------------------------------
    def _learns_widths(self) -> bool:
        return self.ordinal is not None and self.adapter.adapt and bool(self._n_tune)

    def _reset_widths(self) -> None:
        """Start a chain's widths: learnt anew while it tunes; a chain without tuning
        keeps those of the state it resumed (:meth:`resume`, which also gave it its
        scale), else log-uniform distances."""
        n_tune = self._n_tune
        if not (n_tune == 0 and self._resumed_scale is not None):
            self._widths = None
        self._width_draws = 0  # tuning draws of the chain so far
        ends, previous = [], 0
        if self._learns_widths():
            # where the tuner of R restarts its dual averaging (ScaleAdapter.RESTARTS), so
            # that R is tuned again for every new width
            for fraction in ScaleAdapter.RESTARTS:
                end = int(n_tune * fraction)
                if (end - previous >= _MIN_WIDTH_WINDOW
                        and n_tune - end >= _MIN_WIDTH_WINDOW):
                    ends.append(end)
                    previous = end
        self._width_ends = ends
        self._reset_window()

    def _reset_window(self) -> None:
        self._window_draws = 0
        self._window_sum = self._window_sumsq = None

    def _observe(self, x: np.ndarray) -> None:
        """Record a tuning draw; at a window's end, set the widths from its spread."""
        self._width_draws += 1
        if not self._width_ends:
            return
        values = x.astype(np.float64)
        if self._window_sum is None:
            self._window_sum = np.zeros(x.size)
            self._window_sumsq = np.zeros(x.size)
        # values are below 4,096 and windows short: sums of squares lose nothing
        self._window_sum += values
        self._window_sumsq += values * values
        self._window_draws += 1
        if self._width_draws == self._width_ends[0]:
            del self._width_ends[0]
            self._widths = self._window_widths()
            self._reset_window()

    def _window_widths(self) -> np.ndarray:
        """``WIDTH_SPREADS`` pooled standard deviations of every ordinal variable's
        values over the window, rounded, in 1 .. K-1 of every site."""
        n = self._window_draws
        mean = self._window_sum / n
        variance = np.maximum(self._window_sumsq / n - mean * mean, 0.0)
        ordinal = self.ordinal
        pooled = np.bincount(self._site_var[ordinal], variance[ordinal],
                             minlength=len(self.shapes))
        counts = np.bincount(self._site_var[ordinal], minlength=len(self.shapes))
        spread = np.sqrt(pooled / np.maximum(counts, 1))[self._site_var]
        widths = np.rint(WIDTH_SPREADS * spread).astype(np.int64)
        return np.clip(widths, 1, self.n_categories - 1)

    def _start_tuner(self) -> None:
        # a new chain (setup_chain) or PyMC's restart of tuning (reset_tuning)
        super()._start_tuner()
        self._reset_widths()

    def _observe_draw(self, state, info, scale: float) -> None:
        if self._learns_widths():
            self._observe(state.x)

    def _build_proposal(self, compile_kwargs: dict | None) -> None:
        sizes = [int(np.prod(shape, dtype=np.int64)) for shape in self.shapes]
        categorical = np.repeat(np.asarray(self._categorical, dtype=bool), sizes)
        # sites of two values are flipped either way: a walk would fold half its steps
        # back onto the value it left
        ordinal = ~categorical & (self.n_categories > 2)
        #: which sites take random-walk steps (ordinal integers; None: none does)
        self.ordinal = ordinal if ordinal.any() else None
        self._logp = compile_exact_logp(
            self.model, self.vars, self._initial_point, self._shared_vars(), compile_kwargs,
            offsets=self.offsets,
        )

    def _make_kernel(self) -> StepKernel:
        """Random-walk moves of R uniformly chosen sites (ordinal sites by steps of the
        widths learnt in tuning), one log density evaluation a step."""
        logp = self._logp
        categories = None if self.is_binary else self.n_categories
        ordinal = self.ordinal

        def init(x):
            return RWState(x, logp(x))

        def step(state, scale, rng):
            # the widths change while tuning: read at every step
            return arwm_step(state, scale, rng, logp, categories, ordinal, self._widths)

        return StepKernel("random walk", logp, init, step, python_run(step))
