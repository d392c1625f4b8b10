"""A block of latent counts summed out for NUTS over a window of values, and drawn exactly.

The counts' sites share no term (an abundance per site of an N-mixture model), so given
the continuous variables theta the block factorises and sums out site by site over the
window of :class:`~pymc_discrete.pymc.model.counts.CountWindow`:

``log p(theta) ~= rest(theta) + sum_i logsumexp_{v = lower_i}^{lower_i + W - 1} s_i(theta, v)``

exact up to the conditional mass beyond the window, which is kept below the window's
tolerance: every draw of the block computes each site's conditional over the window and
bounds the mass beyond it (:func:`~pymc_discrete.kernels.counts.tail_mass_bound`); where
the bound exceeds the tolerance, the window is widened by as many values as the bound
says are missing (:func:`~pymc_discrete.kernels.counts.window_extension`) before the
block is drawn. Tuning explores values the posterior rarely visits, so at its end the
width is set to 1.25 times the largest width the second half of tuning needed
(:func:`~pymc_discrete.kernels.counts.needed_width`), narrower or wider than the window
then. A widening after tuning changes the density NUTS samples from then on, so it is
reported as a sampler warning naming the chain, the variables and the draw. Each chain
starts from the window read at set-up, so chains do not depend on the ones run before
them.

The values of a window are constants of the compiled graphs: PyTensor then folds every
function of the counts alone (``log N!``, binomial coefficients) into constants, which
makes a gradient about three times cheaper than with a symbolic width (measured on the
N-mixture benchmark model: 0.15 against 0.47 ms). A change of width compiles the sum and
the draw's table again; widths are rounded up to a coarse grid (:func:`grid_width`),
every width's functions are kept, and a width the chain used before is reused where it
has at most half as many values again as needed, so a run compiles a handful.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.blocking import RaveledVars
from pymc.stats.convergence import SamplerWarning, WarningType
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.hmc.integration import CpuLeapfrogIntegrator
from pytensor.graph.basic import Variable
from pytensor.graph.replace import clone_replace

from pymc_discrete.kernels.counts import (
    MAX_COUNT,
    needed_width,
    tail_mass_bound,
    window_extension,
)
from pymc_discrete.kernels.log_weight_draws import draw_from_log_weights
from pymc_discrete.pymc.model.counts import CountWindow, colour_sums
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.model.terms import block_pieces
from pymc_discrete.pymc.steps.stall import chain_index

__all__ = ["CountDraw", "CountSum", "WIDTH_MARGIN", "grid_width"]

#: the width after tuning, as a multiple of the largest the second half of tuning needed
WIDTH_MARGIN = 1.25


def grid_width(width: int) -> int:
    """``width`` rounded up to the grid of compiled widths: multiples of a quarter of the
    largest power of two not above it (at most a quarter more values; few distinct
    widths as a window grows).

    Examples
    --------
    >>> [grid_width(w) for w in (3, 8, 9, 34, 45, 70, 129)]
    [4, 8, 10, 40, 48, 80, 160]
    """
    width = max(int(width), 2)
    step = max(2, (1 << (width.bit_length() - 1)) // 4)
    return -(-width // step) * step


class CountSum:
    """A block of counts summed over a window, compiled per width: the marginal log
    density with its gradient (for NUTS) and every site's conditional table (for the
    draw).

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The counts.
    point : dict
        The initial point.
    exact : ExactRatios
        Their structure (one colour).
    window : CountWindow
        The window read at set-up.
    continuous : list of Variable
        The value variables NUTS samples.
    compile_kwargs : dict, optional
    """

    def __init__(self, model, value_vars, point: dict, exact: ExactRatios,
                 window: CountWindow, continuous: list, compile_kwargs: dict | None = None
                 ) -> None:
        self.window = window
        self._model = model
        self._value_vars = list(value_vars)
        self._point = point
        self._exact = exact
        self._continuous = list(continuous)
        self._compile_kwargs = compile_kwargs or {}
        self._compiled: dict[int, tuple] = {}

    @property
    def start_width(self) -> int:
        """The width every chain starts at: the window read at set-up, on the grid."""
        return grid_width(self.window.width)

    @staticmethod
    def choose_width(width: int, used, slack: float = 1.5) -> int:
        """The width to use for at least ``width`` values: the narrowest of ``used`` (the
        widths a chain has used so far, compiled) that has at most ``slack`` times as
        many, else ``grid_width(width)``: a compile costs more than a few extra values a
        gradient. Only the chain's own widths count, so that a chain does not depend on
        the chains run before it in the same process."""
        fits = [w for w in used if width <= w <= slack * max(width, 2)]
        return min(fits) if fits else grid_width(width)

    def graphs(self, width: int) -> tuple[Variable, Variable]:
        """The marginal (scalar) and the table (N, W) at ``width``, as graphs."""
        from pymc_discrete.pymc.summing.marginal import site_sums_graph, summed_out

        values = np.arange(width, dtype=np.int64)[:, None] + self.window.lower[None, :]
        _, rest = block_pieces(self._model, self._value_vars)
        per_site, loose_total, held = site_sums_graph(self._model, self._value_vars,
                                                      self._point, self._exact, values)
        return (summed_out(rest + loose_total, per_site, held),
                pt.switch(held, per_site, -np.inf))

    def below_graphs(self) -> tuple[Variable, Variable]:
        """Every site's terms at the value just below its window (its lowest value where
        the window starts at the distribution's), and whether the checks held there."""
        from pymc_discrete.pymc.summing.marginal import site_sums_graph

        below = np.maximum(self.window.lower - 1, self.window.start)[None, :]
        per_site, _, held = site_sums_graph(self._model, self._value_vars, self._point,
                                            self._exact, below)
        return per_site[:, 0], held

    def functions(self, width: int) -> tuple:
        """``(logp_dlogp, table)`` compiled at ``grid_width(width)`` (kept for later);
        ``table()`` returns the (N, W) table, the terms just below the window (N,) and
        whether the checks held there."""
        from pymc_discrete.pymc.summing.marginal import marginal_logp_dlogp

        width = grid_width(width)
        if width not in self._compiled:
            marginal, table = self.graphs(width)
            below, below_held = self.below_graphs()
            logp_dlogp = marginal_logp_dlogp(self._model, marginal, self._continuous,
                                             self._point, self._compile_kwargs)
            table_fn = compile_function([], clone_replace([table, below, below_held],
                                                    self._exact.shared),
                                  **self._compile_kwargs)
            table_fn.trust_input = True
            self._compiled[width] = (logp_dlogp, table_fn)
        return self._compiled[width]


def use_density(nuts, logp_dlogp) -> None:
    """Make a NUTS step sample another density of the same variables (its tuning, mass
    matrix and step size kept)."""
    if nuts._logp_dlogp_func is logp_dlogp:
        return
    nuts._logp_dlogp_func = logp_dlogp
    nuts.shared = {v.name: s for v, s in logp_dlogp._extra_vars_shared.items()}
    nuts.integrator = CpuLeapfrogIntegrator(nuts.potential, logp_dlogp)


class CountDraw(ArrayStepShared):
    """Every count of a one-colour block drawn afresh from its conditional over the
    window, after widening the window until it leaves at most its tolerance beyond; a
    change of width is handed to the NUTS step that samples the sum."""

    name = "collapsed_draw"
    stats_dtypes_shapes = {"accept": (np.float64, []), "jump_distance": (np.int64, []),
                           "count_window": (np.int64, []),
                           "warning": (SamplerWarning, None)}

    def __init__(self, vars, *, exact: ExactRatios, sums: CountSum, nuts,
                 blocked: bool = True, rng=None) -> None:
        super().__init__(vars, exact.shared, blocked, rng=rng)
        self._names = list(exact.var_names)
        self._exact = exact
        self._sums = sums
        self._nuts = nuts
        self.tune = True
        self._used: set[int] = set()
        self._set_width(sums.start_width)
        self._chain = None
        self._draw = 0
        self._n_tune = None
        self._tune_draws = 0
        self._needed: list[int] = []

    def _set_width(self, width: int) -> None:
        """Sum and draw over at least ``width`` values from now on
        (:meth:`CountSum.choose_width`)."""
        width = self._sums.choose_width(width, self._used)
        logp_dlogp, self._table = self._sums.functions(width)
        self.width = width
        self._used.add(width)
        use_density(self._nuts, logp_dlogp)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain at the window read at set-up."""
        super().setup_chain(rng, tune, draws)
        self._used = set()
        self._set_width(self._sums.start_width)
        self._chain = chain_index(self.rng)
        self.tune = tune > 0
        self._draw = 0
        self._n_tune = int(tune)
        self._tune_draws = 0
        self._needed = []

    def stop_tuning(self) -> None:
        """Fit the width to what the second half of tuning needed (module docstring)."""
        if self.tune and self._needed:
            self._set_width(int(np.ceil(WIDTH_MARGIN * max(self._needed))))
        self._needed = []
        super().stop_tuning()

    def _widened_draw(self, current: np.ndarray, uniforms: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The conditional table, every site's draw from it (value indices) and its row
        sums (log-sum-exp), after checking the window's lower end and widening the window
        while its tail bound is above the tolerance. One uniform a site, whatever the
        width: a widened window is drawn with the same uniforms. A uniform of 0 draws the
        window's first value, possible at every site (checked)."""
        tail = self._sums.window.tail
        checked = False
        while True:
            table, below, below_held = self._table()
            if not checked:
                self._check_lower_end(current, below, bool(below_held))
                checked = True
            # the draw's row sums serve the tail bound; a row holding a NaN sums to NaN
            index, log_mass = draw_from_log_weights(table, uniforms)
            if np.isnan(log_mass).any() or not np.isfinite(table[:, 0]).all():
                from pymc_discrete.pymc.summing.collapsible import NotCollapsible

                raise NotCollapsible(
                    f"CollapsedNUTS: at the current continuous values some count of "
                    f"{', '.join(self._names)} cannot take its lowest value read at set-up "
                    "(or a parameter check fails): their support depends on the continuous "
                    "variables")
            if tail_mass_bound(table, log_mass).max() <= tail:
                return table, index, log_mass
            wider = self.width + window_extension(table, tail)
            if wider + int(self._sums.window.lower.max()) > MAX_COUNT:
                from pymc_discrete.pymc.summing.collapsible import NotCollapsible

                raise NotCollapsible(
                    f"CollapsedNUTS: the conditional of some count of "
                    f"{', '.join(self._names)} has not fallen below {tail:g} of its mass "
                    f"within {MAX_COUNT} values at the current continuous values; sample "
                    "the counts with pmd.CountLBP instead")
            self._set_width(wider)

    def _check_lower_end(self, current: np.ndarray, terms: np.ndarray, held: bool) -> None:
        """Raise if a value just below a site's window has become possible: the sum
        would leave it out (the counts' support moves with the continuous variables).
        ``terms`` are every site's terms there, from the table's call; where a check
        failed (any site's), the sites are read one by one (:func:`colour_sums`)."""
        window = self._sums.window
        below = window.lower - 1
        sites = np.flatnonzero(below >= window.start)
        if not sites.size:
            return
        if held:
            sums = np.asarray(terms)[sites]
        else:
            sums = colour_sums(self._exact, current, sites, below[sites][None, :])[:, 0]
        if np.any(sums > -np.inf):
            from pymc_discrete.pymc.summing.collapsible import NotCollapsible

            site = int(sites[np.argmax(sums > -np.inf)])
            raise NotCollapsible(
                f"CollapsedNUTS: at the current continuous values site {site} of "
                f"{', '.join(self._names)} can take the value {int(below[site])}, below the "
                "lowest value read at set-up: the counts' support depends on the continuous "
                "variables. Sample them with pmd.CountLBP instead.")

    def astep(self, q0: RaveledVars):
        before = self.width
        old = np.asarray(q0.data, dtype=np.int64)
        table, index, log_mass = self._widened_draw(old, self.rng.random(old.size))
        width = table.shape[1]
        values = self._sums.window.lower + index
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
                needed = needed_width(table, self._sums.window.tail, log_mass)
                self._needed.append(width if needed is None else needed)
        stats = {"accept": 1.0, "jump_distance": int(np.count_nonzero(values != old)),
                 "count_window": width, "warning": warning}
        return RaveledVars(values.astype(q0.data.dtype), q0.point_map_info), [stats]


CountDraw.__name__ = "CollapsedNUTS (exact draw of counts)"
