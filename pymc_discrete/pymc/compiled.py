"""Compiled PyTensor functions of a block of discrete sites: relaxed logp + local
log-ratios for the locally balanced proposals, exact logp for random-walk steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytensor
from pytensor.graph.replace import clone_replace
import pytensor.tensor as pt
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import join_nonshared_inputs
from pytensor.graph.basic import Variable

from pymc_discrete.pymc.relaxation import relaxed_logp

__all__ = ["compile_logp_and_ratios", "compile_exact_logp"]


def compile_logp_and_ratios(
    model,
    value_vars: Sequence[Variable],
    shapes: Sequence[tuple[int, ...]],
    shared: dict[Variable, Variable],
    compile_kwargs: dict | None = None,
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """Compile ``x -> (logp(x), d(x))`` for a block of binary sites.

    ``d_i = (1 - 2 x_i) * d logp / d x_i`` on the continuous relaxation: the first-order
    estimate of the change of logp when site i flips (exact when logp is multilinear in
    the sites, e.g. Bernoulli priors and pairwise couplings).

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        Binary value variables of the block.
    shapes : sequence of tuple of int
        Their shapes.
    shared : dict
        Other value variable -> shared variable holding its current value.
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile` (e.g. ``mode``).

    Returns
    -------
    callable
        Takes the block's sites as a raveled int64 vector.
    """
    n = int(sum(np.prod(s, dtype=int) for s in shapes))
    flat = pt.vector("relaxed_sites", dtype="float64", shape=(n,))
    logp = relaxed_logp(model, value_vars, shapes, flat)
    if shared:
        logp = clone_replace(logp, replace=shared)
    grad = pytensor.grad(logp, flat)
    ratios = (1.0 - 2.0 * flat) * grad
    fn = pm_compile([flat], [logp, ratios], **(compile_kwargs or {}))
    fn.trust_input = True

    def logp_and_ratios(x: np.ndarray) -> tuple[float, np.ndarray]:
        logp_value, ratio_values = fn(x.astype(np.float64))
        return float(logp_value), ratio_values

    return logp_and_ratios


def compile_exact_logp(
    model,
    value_vars: Sequence[Variable],
    point: dict[str, np.ndarray],
    shared: dict[Variable, Variable],
    compile_kwargs: dict | None = None,
) -> Callable[[np.ndarray], float]:
    """Compile the model's exact joint logp as a function of the block's raveled sites.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        Discrete value variables of the block.
    point : dict
        A point of the model (gives shapes and dtypes).
    shared : dict
        Other value variable -> shared variable holding its current value.
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile`.

    Returns
    -------
    callable
        ``x (int64 vector) -> logp``.
    """
    [logp], joined = join_nonshared_inputs(point, [model.logp()], list(value_vars), shared)
    fn = pm_compile([joined], logp, **(compile_kwargs or {}))
    fn.trust_input = True
    dtype = joined.type.dtype

    def exact_logp(x: np.ndarray) -> float:
        return float(fn(np.ascontiguousarray(x, dtype=dtype)))

    return exact_logp
