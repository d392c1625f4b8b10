"""A block of latent counts summed out for NUTS over a window of values, and drawn exactly.

The counts' sites share no term (an abundance per site of an N-mixture model), so given
the continuous variables theta the block factorises and sums out site by site over the
window of :class:`~pymc_discrete.pymc.counts.CountWindow`:

``log p(theta) ~= rest(theta) + sum_i logsumexp_{v = lower_i}^{lower_i + W - 1} s_i(theta, v)``

exact up to the conditional mass beyond the window, which is kept below the window's
tolerance: every draw of the block computes each site's conditional over the window and
bounds the mass beyond it (:func:`~pymc_discrete.kernels.counts.tail_mass_bound`); where
the bound exceeds the tolerance, the window is widened by as many values as the bound
says are missing (:func:`~pymc_discrete.kernels.counts.window_extension`; one shared
width, read by the sum NUTS differentiates and by the draw, so nothing is recompiled)
before the block is drawn. Tuning explores values the posterior rarely visits, so at its
end the width is set to 1.25 times the largest width the second half of tuning needed
(:func:`~pymc_discrete.kernels.counts.needed_width`), narrower or wider than the window
then. A widening after tuning changes the density NUTS samples from then on, so it is
reported as a sampler warning naming the chain, the variables and the draw. Each chain
starts from the window read at set-up, so chains do not depend on the ones run before
them.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.pytensorf import compile as pm_compile
from pymc.stats.convergence import SamplerWarning, WarningType
from pymc.step_methods.arraystep import ArrayStepShared
from pytensor.graph.basic import Variable
from pytensor.graph.replace import clone_replace

from pymc_discrete.kernels.counts import (
    MAX_COUNT,
    needed_width,
    tail_mass_bound,
    window_extension,
)
from pymc_discrete.pymc.counts import CountWindow
from pymc_discrete.pymc.exact import ExactRatios
from pymc_discrete.pymc.stall import chain_index
from pymc_discrete.pymc.terms import block_pieces

__all__ = ["CountDraw", "CountSum", "WIDTH_MARGIN", "count_sum"]

#: the width after tuning, as a multiple of the largest the second half of tuning needed
WIDTH_MARGIN = 1.25


class CountSum:
    """The window of a block of counts as graphs: the (W, N) values, the width as a shared
    scalar (changing it widens every graph built on it) and the marginal log density.

    Attributes
    ----------
    window : CountWindow
    width : SharedVariable
        Current number of values of every site.
    values : Variable
        (W, N) integer matrix: ``lower[i] + v`` at row v, column i.
    """

    def __init__(self, window: CountWindow) -> None:
        self.window = window
        self.width = pytensor.shared(np.int64(window.width), name="count_window_width")
        rows = pt.arange(self.width, dtype="int64")
        self.values = rows[:, None] + pt.constant(window.lower)[None, :]

    def reset(self) -> None:
        """Back to the width read at set-up (every chain starts there)."""
        self.width.set_value(np.int64(self.window.width))


def count_sum(model, value_vars, point: dict, exact: ExactRatios,
              window: CountWindow) -> tuple[CountSum, Variable, Variable]:
    """The block summed over its window, and every site's conditional at every value.

    Returns
    -------
    sums : CountSum
    marginal : Variable
        Scalar: the model's log density with the block summed out over the window (a
        graph of the other value variables).
    table : Variable
        (N, W) every site's terms at each value of its window (-inf everywhere when a
        parameter check fails).
    """
    from pymc_discrete.pymc.collapse import site_sums_graph

    sums = CountSum(window)
    _, rest = block_pieces(model, value_vars)
    per_site, loose_total, held = site_sums_graph(model, value_vars, point, exact, sums.values)
    top = pt.max(per_site, axis=1)
    total = rest + loose_total + (pt.log(pt.exp(per_site - top[:, None]).sum(axis=1))
                                  + top).sum()
    marginal = pt.switch(held, total, -np.inf)
    table = pt.switch(held, per_site, -np.inf)
    return sums, marginal, table


class CountDraw(ArrayStepShared):
    """Every count of a one-colour block drawn afresh from its conditional over the
    window, after widening the window until it leaves at most its tolerance beyond."""

    name = "collapsed_draw"
    stats_dtypes_shapes = {"accept": (np.float64, []), "jump_distance": (np.int64, []),
                           "count_window": (np.int64, []),
                           "warning": (SamplerWarning, None)}

    def __init__(self, vars, *, exact: ExactRatios, sums: CountSum, table: Variable,
                 model=None, compile_kwargs: dict | None = None, blocked: bool = True,
                 rng=None) -> None:
        modelcontext(model)
        super().__init__(vars, exact.shared, blocked, rng=rng)
        self._names = list(exact.var_names)
        self._sums = sums
        self._table = pm_compile([], clone_replace(table, exact.shared),
                                 **(compile_kwargs or {}))
        self._table.trust_input = True
        self.tune = True
        self._chain = None
        self._draw = 0
        self._n_tune = None
        self._tune_draws = 0
        self._needed: list[int] = []

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain at the window read at set-up."""
        super().setup_chain(rng, tune, draws)
        self._sums.reset()
        self._chain = chain_index(self.rng)
        self.tune = tune > 0
        self._draw = 0
        self._n_tune = int(tune)
        self._tune_draws = 0
        self._needed = []

    def stop_tuning(self) -> None:
        """Fit the width to what the second half of tuning needed (module docstring)."""
        if self.tune and self._needed:
            needed = int(np.ceil(WIDTH_MARGIN * max(self._needed)))
            self._sums.width.set_value(np.int64(max(needed, 2)))
        self._needed = []
        super().stop_tuning()

    def _widened_table(self) -> tuple[np.ndarray, int]:
        """The conditional table, after doubling the window while its tail bound is above
        the tolerance; and the width before."""
        before = int(self._sums.width.get_value())
        while True:
            table = self._table()
            if np.isnan(table).any() or not np.isfinite(table[:, 0]).all():
                from pymc_discrete.pymc.collapse import NotCollapsible

                raise NotCollapsible(
                    f"CollapsedNUTS: at the current continuous values some count of "
                    f"{', '.join(self._names)} cannot take its lowest value read at set-up "
                    "(or a parameter check fails): their support depends on the continuous "
                    "variables")
            width = table.shape[1]
            tail = self._sums.window.tail
            if tail_mass_bound(table).max() <= tail:
                return table, before
            wider = width + window_extension(table, tail)
            if wider + int(self._sums.window.lower.max()) > MAX_COUNT:
                return table, before  # the bound stays above tolerance
            self._sums.width.set_value(np.int64(wider))

    def astep(self, q0: RaveledVars):
        table, before = self._widened_table()
        width = table.shape[1]
        top = table.max(axis=1, keepdims=True)
        cdf = np.cumsum(np.exp(table - top), axis=1)
        u = self.rng.random(cdf.shape[0]) * cdf[:, -1]
        index = np.minimum((cdf < u[:, None]).sum(axis=1), width - 1)
        values = self._sums.window.lower + index
        old = np.asarray(q0.data, dtype=np.int64)
        warning = None
        if width != before and not self.tune:
            chain = "a chain" if self._chain is None else f"chain {self._chain}"
            warning = SamplerWarning(
                WarningType.BAD_PARAMS,
                f"CollapsedNUTS: {chain} widened the window of the counts "
                f"{self._names} from {before} to {width} values after tuning (draw "
                f"{self._draw}): their conditional mass beyond the window exceeded "
                f"{self._sums.window.tail:g}, so the density NUTS samples changed during the "
                "draws. Tune longer, or start from values nearer the posterior.",
                "warn", step=self._draw, extra={"chain": self._chain, "width": width})
        if not self.tune:
            self._draw += 1
        else:
            self._tune_draws += 1
            if self._n_tune is None or self._tune_draws > self._n_tune // 2:
                needed = needed_width(table, self._sums.window.tail)
                self._needed.append(width if needed is None else needed)
        stats = {"accept": 1.0, "jump_distance": int(np.count_nonzero(values != old)),
                 "count_window": width, "warning": warning}
        return RaveledVars(values.astype(q0.data.dtype), q0.point_map_info), [stats]


CountDraw.__name__ = "CollapsedNUTS (exact draw of counts)"
