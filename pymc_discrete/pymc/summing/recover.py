"""Exact draws of summed-out discrete variables, added to an InferenceData.

Given posterior draws of the continuous variables theta of a model whose discrete block
was summed out (:func:`~pymc_discrete.marginalize`), the block's conditional
``p(z | theta)`` factorises over its sites (that is what let it sum out), so one draw of
every site from its conditional at every posterior draw gives exact draws of
``(theta, z)`` from the joint posterior; a chain is drawn whole by forward filtering,
backward sampling. The conditional tables of all draws come from
one compiled graph vectorised over draws (in chunks), and the sites are drawn from one
seeded generator: a site of two values by one uniform against its probability, others by
one uniform against their cumulative weights.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np
import pytensor.tensor as pt
import xarray as xr
from pymc.sampling.deterministic import compute_deterministics
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import graph_inputs, variable_depends_on

from pymc_discrete.kernels.chain import ffbs
from pymc_discrete.kernels.counts import tail_mass_bound
from pymc_discrete.kernels.log_weight_draws import draw_from_log_weights
from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.summing.count_sum import grid_width
from pymc_discrete.pymc.summing.summed_block import SummedBlock, cached_summed_block

__all__ = ["CountWindowTooNarrow", "compile_conditional_tables", "recover_discrete"]

#: table entries (draws x sites x values) computed and drawn from in one call, so that a
#: call's arrays stay in the processor's cache: the N-mixture model's 4,000 draws of 150
#: sites over 80 values were drawn back in 0.72 s at 256 draws a call (3.1 million
#: entries), 0.46 s at 2**17 to 2**19 entries, 0.65 s at 2**20
ENTRIES_PER_CALL = 2**18

#: the block's model copy -> its compiled tables (compiled once per block)
_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _conditional_tables(block: SummedBlock):
    """:func:`compile_conditional_tables`, compiled once per block."""
    cached = _TABLES.get(block.plain)
    if cached is None:
        cached = _TABLES[block.plain] = compile_conditional_tables(block)
    return cached


def compile_conditional_tables(block: SummedBlock) -> tuple[Callable, list[str]]:
    """The block's conditional tables as a compiled function of continuous draws: what
    :func:`recover_discrete` compiles once per block before it draws (the step a long run
    does not repeat; the benchmarks time it apart from the drawing).

    Parameters
    ----------
    block : SummedBlock
        The block summed out (:func:`~pymc_discrete.pymc.summing.summed_block.cached_summed_block`).

    Returns
    -------
    function : callable
        ``function(*draws)``, each an (S, ...) array of the variables ``names``, returns
        the tables at every draw: (S, N, K) log-weights of every site's values, or a
        chain's unary (S, T, K) and pair (S, T - 1, K, K) tables.
    names : list of str
        The continuous variables the function takes, in order.
    """
    plain = block.plain
    free = set(plain.free_RVs)
    values = {v: rv.name for rv, v in plain.rvs_to_values.items() if rv in free}
    graphs = [block.per_site] if block.layout is None else list(block.tables)
    inputs = [v for v in graph_inputs(graphs) if v in values]
    batched = [pt.tensor(dtype=v.type.dtype, shape=(None, *v.type.shape),
                         name=f"{v.name}_draws") for v in inputs]
    tables = vectorize_graph(graphs, replace=dict(zip(inputs, batched)))
    n = batched[0].shape[0] if batched else 1
    # a table that reads no continuous variable is the same at every draw
    tables = [t if t.type.ndim == g.type.ndim + 1 else pt.broadcast_to(t, (n, *t.shape))
              for t, g in zip(tables, graphs)]
    function = compile_function(batched, tables)
    _first_call(function, batched)
    return function, [values[v] for v in inputs]


def _first_call(function: Callable, batched: list) -> None:
    """Call ``function`` once on one made-up draw: numba links a compiled function's code
    at its first call (20 ms on the occupancy model's tables), which belongs to the
    compilation, not to the first drawing. The values are discarded, and so is an error
    they raise (a made-up draw may be outside a parameter's support): the real draws
    raise it again where it is real."""
    try:
        dummies = [np.full(tuple(1 if d is None else d for d in v.type.shape), 0.5,
                           dtype=v.type.dtype) for v in batched]
        function(*dummies)
    except Exception:  # noqa: BLE001, S110 - the warm-up's outcome is never used
        pass


class CountWindowTooNarrow(ValueError):
    """The conditional of a summed-out count leaves more mass beyond the window the
    summed-out model sums over than its tolerance: the model's density was truncated."""

    def __init__(self, message: str, width: int) -> None:
        super().__init__(message)
        #: the window's width
        self.width = width


def _check_window(block: SummedBlock, table: np.ndarray, log_mass: np.ndarray,
                  first_draw: int) -> None:
    """Raise :class:`CountWindowTooNarrow` where a draw's conditional runs past the
    counts' window; ``table`` (S, N, W), ``log_mass`` its rows' log-sum-exp (S, N)."""
    window = block.count_window
    draws, sites, width = table.shape
    bounds = tail_mass_bound(table.reshape(-1, width), log_mass=log_mass.reshape(-1))
    worst = bounds.reshape(draws, sites).max(axis=1, initial=0.0)
    if (worst > window.tail).any():
        s = int(np.argmax(worst > window.tail))
        raise CountWindowTooNarrow(
            f"at draw {first_draw + s}, the conditional of {', '.join(block.names)} "
            f"leaves {worst[s]:.2g} of its mass beyond the {window.width} values the "
            f"summed-out model sums over (tolerance {window.tail:.0e}): its density was "
            f"truncated there. Sum over more values: pmd.marginalize(model, "
            f"count_width={grid_width(2 * window.width)})", window.width)


def _draw_binary(table: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(S, N) draws of sites of two values from their (S, N, 2) log-weights: the second
    value where a uniform falls below its probability ``1 / (1 + exp(w0 - w1))``: one
    uniform and one exponential a site, no cumulative sum. A value of weight -inf is never
    drawn; a site whose two weights are -inf (no possible value) draws the first."""
    with np.errstate(invalid="ignore", over="ignore"):
        # u < p as u / p < 1, with 1 / p = 1 + exp(w0 - w1), in place in one array
        scaled = np.subtract(table[..., 0], table[..., 1])
        np.exp(scaled, out=scaled)
        scaled += 1.0
        scaled *= rng.random(scaled.shape)
        return (scaled < 1.0).astype(np.int64)


def _draw_by_cdf(table: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(S, N) draws of sites of K values from their (S, N, K) log-weights, one uniform a
    site (:func:`~pymc_discrete.kernels.log_weight_draws.draw_from_log_weights`, one
    compiled pass a row), and the rows' log-sum-exp (S, N), which the counts' tail
    check reads. The uniform lies in (0, 1], so a value of weight -inf is never drawn; a
    site whose weights are all -inf (no possible value) draws the first."""
    return draw_from_log_weights(table, 1.0 - rng.random(table.shape[:-1]))


def _draw(block: SummedBlock, tables: list, rng: np.random.Generator,
          first_draw: int, check_window: bool) -> np.ndarray:
    """(S, N) draws of the block's sites (value indices) from their tables, after the
    counts' tail check where asked (draws ``first_draw ..``)."""
    if block.layout is None:
        table = tables[0]
        if not block.possible.all():
            table = np.where(block.possible[None], table, -np.inf)
        if table.shape[-1] == 2 and block.count_window is None:
            return _draw_binary(table, rng)
        drawn, log_mass = _draw_by_cdf(table, rng)
        if block.count_window is not None and check_window:
            _check_window(block, table, log_mass, first_draw)
        return drawn
    unary, pair = tables
    drawn = np.empty(unary.shape[:2], dtype=np.int64)
    order = block.layout.order
    for s in range(unary.shape[0]):
        chain, _ = ffbs(unary[s], pair[s], rng)
        drawn[s, order] = chain
    return drawn


def recover_discrete(idata, model, *, random_seed=None, group: str = "posterior",
                     check_window: bool = True):
    """Add exact draws of a model's summed-out discrete variables, and the Deterministics
    that read them, to an InferenceData.

    Every site is drawn from its exact conditional given the continuous variables at
    each draw of ``idata[group]``; with draws of the continuous variables from their
    marginal posterior (sampled on :func:`~pymc_discrete.marginalize`'s model), the
    result holds draws from the joint posterior of the original model.

    Parameters
    ----------
    idata : InferenceData or DataTree
        Draws of the continuous variables (``pm.sample`` on the summed-out model).
    model : pymc.Model
        The original model, with its discrete variables.
    random_seed : int or numpy Generator, optional
        Seed of the draws (the same seed gives the same draws).
    group : str, default "posterior"
        The group to read the continuous draws from and add the discrete ones to.
    check_window : bool, default True
        Latent counts: check that no draw's conditional runs past the window the
        summed-out model sums over (off for warm-up draws, which may wander).

    Returns
    -------
    The same object, with the discrete variables and the Deterministics reading them
    added to ``group``.

    Raises
    ------
    NotCollapsible
        If the model's discrete variables cannot be summed out (see
        :func:`~pymc_discrete.marginalize`).
    CountWindowTooNarrow
        Latent counts: where at some draw their conditional leaves more than the
        tolerated mass beyond the window the summed-out model sums over (the draws of
        the continuous variables then come from a truncated density: sample again with
        a wider ``count_width``).

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu")
    ...     z = pm.Bernoulli("z", 0.4, shape=3)
    ...     y = pm.Normal("y", mu * z, 1.0, observed=[1.9, 0.6, -0.3])
    >>> with pmd.marginalize(model):
    ...     idata = pm.sample(draws=20, tune=20, chains=1, nuts_sampler="pymc",
    ...                       progressbar=False)  # doctest: +SKIP
    >>> pmd.recover_discrete(idata, model, random_seed=1)  # doctest: +SKIP
    """
    block = cached_summed_block(model)
    dataset = idata[group]
    function, names = _conditional_tables(block)
    sizes = dataset.sizes
    chains, draws = int(sizes["chain"]), int(sizes["draw"])
    n_draws = chains * draws
    arrays = [np.asarray(dataset[name].values).reshape(n_draws, *dataset[name].shape[2:])
              for name in names]
    rng = np.random.default_rng(random_seed)
    drawn = np.empty((n_draws, block.exact.n_sites), dtype=np.int64)
    per_call, lo = 1, 0  # one draw first, to learn the size of a draw's tables
    while lo < n_draws:
        hi = min(lo + per_call, n_draws)
        tables = function(*[a[lo:hi] for a in arrays])
        if lo == 0:
            entries = sum(int(np.prod(t.shape[1:], dtype=np.int64)) for t in tables)
            per_call = max(1, ENTRIES_PER_CALL // max(entries, 1))
        tables = [np.broadcast_to(t, (hi - lo, *t.shape[1:])) for t in tables]
        drawn[lo:hi] = _draw(block, tables, rng, lo, check_window)
        lo = hi
    if block.offsets.any():
        drawn += block.offsets[None, :]
    shapes = dict(zip(block.exact.var_names, block.exact.shapes, strict=True))
    lo = 0
    for name in block.names:
        shape = shapes[name]
        size = int(np.prod(shape, dtype=np.int64))
        rv = model.named_vars[name]
        values = drawn[:, lo:lo + size].reshape(chains, draws, *shape).astype(
            rv.type.dtype, copy=False)
        lo += size
        dims = model.named_vars_to_dims.get(name) or tuple(
            f"{name}_dim_{i}" for i in range(len(shape)))
        coords = {d: model.coords[d] for d in dims if model.coords.get(d) is not None}
        dataset[name] = xr.DataArray(values, dims=("chain", "draw", *dims),
                                     coords={"chain": dataset["chain"].values,
                                             "draw": dataset["draw"].values, **coords})
    discrete = [model.named_vars[name] for name in block.names]
    reading = [d.name for d in model.deterministics if variable_depends_on(d, discrete)]
    if reading:
        computed = compute_deterministics(dataset.to_dataset() if hasattr(dataset, "to_dataset")
                                          else dataset, var_names=reading, model=model,
                                          progressbar=False)
        for name in reading:
            dataset[name] = computed[name]
    return idata
