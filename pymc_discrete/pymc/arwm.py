"""ARWM as a PyMC step method."""

from __future__ import annotations

import numpy as np
from pymc.step_methods.compound import Competence

from pymc_discrete.kernels.arwm import RWState, arwm_step
from pymc_discrete.pymc.block_step import SiteBlockStep
from pymc_discrete.pymc.compiled import compile_exact_logp

__all__ = ["ARWM"]


class ARWM(SiteBlockStep):
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
    _competence_level = Competence.COMPATIBLE  # ALBP is the IDEAL choice
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

    def _build_proposal(self, compile_kwargs: dict | None) -> None:
        self._logp = compile_exact_logp(
            self.model, self.vars, self._initial_point, self._shared_vars(), compile_kwargs,
            offsets=self.offsets,
        )

    def _init_state(self, x: np.ndarray):
        return RWState(x, self._logp(x))

    def _kernel_step(self, state, scale: float):
        categories = None if self.is_binary else self.n_categories
        return arwm_step(state, scale, self.rng, self._logp, categories)
