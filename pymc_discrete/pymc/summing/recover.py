"""Exact draws of summed-out discrete variables, added to an InferenceData.

Given posterior draws of the continuous variables theta of a model whose discrete block
was summed out (:func:`~pymc_discrete.marginalize`), the block's conditional
``p(z | theta)`` factorises over its sites (that is what let it sum out), so one draw of
every site from its conditional at every posterior draw gives exact draws of
``(theta, z)`` from the joint posterior. The conditional tables of all draws come from
one compiled graph vectorised over draws (in chunks), and the sites are drawn by the
Gumbel-max trick from one seeded generator.
"""

from __future__ import annotations

import weakref

import numpy as np
import pytensor.tensor as pt
import xarray as xr
from pymc.sampling.deterministic import compute_deterministics
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import graph_inputs, variable_depends_on

from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.summing.marginal_model import SummedBlock, summed_block

__all__ = ["recover_discrete", "cached_summed_block"]

#: draws whose conditional tables are computed in one call (bounds the memory a call
#: takes to DRAWS_PER_CALL x sites x values floats)
DRAWS_PER_CALL = 256

#: model -> (its named variables, its SummedBlock): the structure is read once
_BLOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cached_summed_block(model) -> SummedBlock:
    """:func:`~pymc_discrete.pymc.summing.marginal_model.summed_block`, read once per
    model (again if a variable was added since)."""
    names = tuple(model.named_vars)
    cached = _BLOCKS.get(model)
    if cached is not None and cached[0] == names:
        return cached[1]
    block = summed_block(model)
    _BLOCKS[model] = (names, block)
    return block


def _conditional_tables(block: SummedBlock):
    """A function of the continuous draws (name -> (S, ...) array) returning the
    (S, N, K) conditional log-weights of every site's values."""
    plain = block.plain
    values = {v: rv.name for rv, v in plain.rvs_to_values.items() if rv in plain.free_RVs}
    inputs = [v for v in graph_inputs([block.per_site]) if v in values]
    batched = [pt.tensor(dtype=v.type.dtype, shape=(None, *v.type.shape),
                         name=f"{v.name}_draws") for v in inputs]
    table = vectorize_graph(block.per_site, replace=dict(zip(inputs, batched)))
    if table.type.ndim == 2:  # reads no continuous variable: the same at every draw
        table = pt.broadcast_to(table, (batched[0].shape[0], *table.shape)) if batched \
            else table[None]
    function = compile_function(batched, table)
    names = [values[v] for v in inputs]
    return function, names


def recover_discrete(idata, model, *, random_seed=None, group: str = "posterior"):
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

    Returns
    -------
    The same object, with the discrete variables and the Deterministics reading them
    added to ``group``.

    Raises
    ------
    NotCollapsible
        If the model's discrete variables cannot be summed out (see
        :func:`~pymc_discrete.marginalize`).
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
    for lo in range(0, n_draws, DRAWS_PER_CALL):
        hi = min(lo + DRAWS_PER_CALL, n_draws)
        table = np.asarray(function(*[a[lo:hi] for a in arrays])) if arrays else \
            np.asarray(function())
        table = np.broadcast_to(table, (hi - lo, *table.shape[-2:]))
        table = np.where(block.possible[None], table, -np.inf)
        gumbel = -np.log(-np.log(rng.random(table.shape)))
        drawn[lo:hi] = np.argmax(table + gumbel, axis=-1)
    drawn += block.offsets[None, :]
    point = block.plain.initial_point()
    lo = 0
    for name in block.names:
        shape = np.shape(point[name])
        size = int(np.prod(shape, dtype=np.int64))
        rv = model.named_vars[name]
        values = drawn[:, lo:lo + size].reshape(chains, draws, *shape).astype(rv.type.dtype)
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
