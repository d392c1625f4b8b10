"""CountLBP: locally balanced moves of latent counts, for counts that are not summed out.

Each site of a colour (sites of one colour share no term) moves by up to ``s_i`` values,
proposed in proportion to ``sqrt(pi(y) / pi(x))`` and accepted on its own
(:func:`~pymc_discrete.kernels.counts.count_lbp_step`); one batched evaluation of the
block's terms at ``4 S + 1`` shifted states gives every site of a colour its conditional
at ``x - 2S .. x + 2S``, which is all the proposal and its reverse need. The step sizes
are tuned per site toward acceptance 0.574 during tuning and fixed after, so the chain
after tuning is a fixed reversible kernel. No truncation is involved: a count can reach
any value of its support.

:func:`~pymc_discrete.register` uses it for latent counts it cannot sum out for NUTS:
in models without continuous variables, beside finite discrete variables, when the counts
share terms, or when the sum would cost more than
:data:`~pymc_discrete.pymc.summing.collapsible.MAX_SUMMED_TERMS` evaluations a gradient.
"""

from __future__ import annotations

import numpy as np
from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.stats.convergence import SamplerWarning
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence

from pymc_discrete.kernels.counts import (
    COUNT_TARGET_ACCEPT,
    count_lbp_step,
    count_sizes,
    tune_count_sizes,
)
from pymc_discrete.pymc.model.counts import colour_sums, count_start, is_count
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.validation import block_value_vars
from pymc_discrete.pymc.steps.scalar_point import ScalarSitesMapping
from pymc_discrete.pymc.steps.stall import StallWatch

__all__ = ["CountLBP"]


class CountLBP(ScalarSitesMapping, ArrayStepShared):
    """Locally balanced moves of latent counts (Poisson, NegativeBinomial, Geometric).

    Every draw moves each count by up to its step size ``s_i``, a move to ``y`` proposed
    with weight ``sqrt(pi(y) / pi(x))`` and accepted with the Metropolis-Hastings
    probability; counts that share no term move together, in one batched evaluation of
    the model's terms per colour. The step sizes are tuned per count toward acceptance
    0.574 during tuning (up to 32) and kept after.

    Parameters
    ----------
    vars : list of random variables, optional
        The counts (default: all of the model's).
    model : pymc.Model, optional
    initial_point, compile_kwargs
        As for PyMC's steps (passed by ``pm.sample`` when it builds the step).
    exact_ratios : ExactRatios, optional
        The block's structure, already read (by :func:`~pymc_discrete.register`).
    blocked : bool
    rng : optional
        As for PyMC's steps.

    Notes
    -----
    Sampler statistics: ``accept`` (mean acceptance probability over the counts),
    ``jump_distance`` (counts changed), ``count_step`` (mean step size), ``warning``
    (a chain that left every count unchanged for 100 draws after tuning).

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     n = pm.Poisson("n", 20.0, shape=3, initval=[10, 10, 10])
    ...     y = pm.Binomial("y", n=n, p=0.3, observed=[5, 7, 4])
    ...     idata = pm.sample(step=pmd.CountLBP(), chains=1,
    ...                       progressbar=False)  # doctest: +SKIP
    """

    name = "count_lbp"
    stats_dtypes_shapes = {"accept": (np.float64, []), "jump_distance": (np.int64, []),
                           "count_step": (np.float64, []),
                           "warning": (SamplerWarning, None)}

    def __init__(self, vars=None, *, model=None, initial_point=None,
                 compile_kwargs: dict | None = None,
                 exact_ratios: ExactRatios | None = None, blocked: bool = True,
                 rng=None) -> None:
        from pymc_discrete.pymc.model.counts import count_exact_ratios

        model = modelcontext(model)
        block = block_value_vars(model, vars, "CountLBP", self.competence)
        if initial_point is None:
            initial_point = model.initial_point()
        names = tuple(v.name for v in block)
        if exact_ratios is not None and exact_ratios.var_names != names:
            raise ValueError(f"exact_ratios were read for {exact_ratios.var_names}, not for "
                             f"{names}")
        exact = exact_ratios or count_exact_ratios(model, block, initial_point,
                                                   compile_kwargs)
        super().__init__(block, exact.shared, blocked, rng=rng)
        #: the block's structure: which counts share terms (colours)
        self.exact_ratios = exact
        self._start = np.concatenate([
            np.full(int(np.size(initial_point[v.name])), count_start(model.values_to_rvs[v]))
            for v in block]).astype(np.int64)
        self._colours = exact.colour_sites()
        self._stall_watch = StallWatch(
            "CountLBP", list(names),
            "Start the counts nearer their posterior, or tune longer.")
        self._reset_tuning()
        self.tune = True

    @staticmethod
    def competence(var, has_grad=False) -> Competence:
        """COMPATIBLE for latent counts (:func:`register` chooses it where it applies),
        INCOMPATIBLE otherwise."""
        return Competence.COMPATIBLE if is_count(var) else Competence.INCOMPATIBLE

    def _reset_tuning(self) -> None:
        self._log_sizes = np.zeros(self.exact_ratios.n_sites)
        self._tune_steps = 0

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain: step sizes from 1, tuned for ``tune`` draws."""
        super().setup_chain(rng, tune, draws)
        self._reset_tuning()
        self._stall_watch.start_chain(self.rng, draws)
        self.tune = tune > 0

    def _colour_table(self, x: np.ndarray, sites: np.ndarray, big: int) -> np.ndarray:
        """Log conditional of every site of a colour at ``x - 2 big .. x + 2 big``."""
        shifts = np.arange(-2 * big, 2 * big + 1)
        moved = x[sites][None, :] + shifts[:, None]
        # a value below the support is evaluated at the lowest value and marked impossible
        # (a row whose checks fail for one count is re-read count by count: colour_sums)
        rows = np.maximum(moved, self._start[sites][None, :])
        sums = colour_sums(self.exact_ratios, x, sites, rows)
        return np.where((moved < self._start[sites][None, :]).T, -np.inf, sums)

    def astep(self, q0: RaveledVars):
        x = np.asarray(q0.data, dtype=np.int64).copy()
        old = x.copy()
        sizes = count_sizes(self._log_sizes)
        accept = np.zeros(x.size)
        for sites in self._colours:
            big = int(sizes[sites].max())
            table = self._colour_table(x, sites, big)
            moves, accept[sites] = count_lbp_step(table, sizes[sites],
                                                  self.rng.random((sites.size, 2)))
            x[sites] += moves
        if self.tune:
            self._log_sizes = tune_count_sizes(self._log_sizes, accept, self._tune_steps,
                                               COUNT_TARGET_ACCEPT)
            self._tune_steps += 1
        changed = int(np.count_nonzero(x != old))
        stats = {"accept": float(accept.mean()) if accept.size else 1.0,
                 "jump_distance": changed, "count_step": float(sizes.mean()),
                 "warning": self._stall_watch.record(changed > 0, self.tune)}
        return RaveledVars(x.astype(q0.data.dtype), q0.point_map_info), [stats]
