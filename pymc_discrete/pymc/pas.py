"""PAS (and its linearised form PAFS) as a PyMC step method."""

from __future__ import annotations

import numpy as np
from pymc.step_methods.compound import Competence

from pymc_discrete.kernels.pas import init_path_state, pafs_step, pas_step
from pymc_discrete.pymc.informed_step import InformedStep

__all__ = ["PAS"]


class PAS(InformedStep):
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
    proposal : {"auto", "gradient", "exact"}
        ``"auto"`` (default): the gradient when its ratios are exact for the model
        (checked against single-site moves at construction); otherwise the gradient only
        if its single-move proposal agrees with the exact one well enough to pay for the
        exact ratios' measured extra cost (agreement x cost ratio >= 1), else exact
        ratios. ``proposal_reason`` says what was measured.
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
        The proposal in use, ``"gradient"`` or ``"exact"`` (after the automatic choice
        or a fallback).
    proposal_reason : str
        Why that proposal is in use (one line).
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
            "model, where odd paths change the parity) the acceptance rises with X and the "
            "tuner cannot find it: fix the path length, e.g. PAS(path_length=10, adapt=False)."
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
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
        )

    def _build_proposal(self, compile_kwargs: dict | None) -> None:
        self._compile_ratios(compile_kwargs)

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
