"""PyMC's convergence checks after ``pm.sample``, in time linear in the number of variables.

PyMC's ``run_convergence_checks`` reads the posterior group from the InferenceData tree
once per free variable (``rv_name in idata["posterior"]``), then has ArviZ compute the
effective sample size and r-hat of every variable on the tree, and takes their extremes
variable by variable through the tree again. Each read of a tree's group makes a view of
the group that measures every one of its variables, so on a model written one variable
per site the checks grow with the square of the number of variables: 7 s of an 11 s
``pm.sample`` of a 1,000-step hidden Markov chain written in a loop (measured; 1 s for the
same chain written vectorised).

While :func:`~pymc_discrete.register` is in effect, :func:`convergence_checks` makes the
same checks on a posterior of many variables with the group read once: the same
variables, ArviZ's values to the bit, the same thresholds in the same order, so the same
warnings. A discrete variable's elements, which ArviZ diagnoses one at a time in Python
(1.4 ms an element at 4 x 1,000 draws), are diagnosed all at once
(:mod:`.rank_diagnostics`), each distinct element series once (sites that take the same
value at every draw repeat one). A posterior of few variables, none of them a discrete
variable of several elements, is checked by PyMC's own function.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xarray as xr
from pymc.stats.convergence import (
    SamplerWarning,
    WarningType,
    run_convergence_checks,
    warn_divergences,
    warn_treedepth,
)
from pymc.util import get_untransformed_name, is_transformed_name

from pymc_discrete.pymc.choosing.rank_diagnostics import bulk_ess_and_rank_rhat

__all__ = ["convergence_checks", "wrap_convergence_checks", "MANY_VARIABLES"]

#: from this many variables in the posterior the group is read once; below, PyMC's own
#: function runs (its reads cost little there)
MANY_VARIABLES = 50

#: a discrete variable larger than this is checked element by element by ArviZ: its
#: distinct series would be a copy of up to its size
REPEATS_MAX_BYTES = 2**28

#: element series read for repeats at a time (a bounded copy)
_SERIES_CHUNK = 1024

#: values (series x chains x draws) diagnosed at a time: the batched diagnostics hold
#: about 80 bytes a value (scores, padded spectra), so about 85 MB at most
_DIAGNOSED_VALUES = 2**20


def _checked_names(model, posterior: xr.Dataset) -> list[str]:
    """The free variables PyMC checks: by their untransformed name where the model has
    it, those in the posterior, in the model's order."""
    valid_name = {rv.name for rv in model.free_RVs + model.deterministics}
    names = []
    for rv in model.free_RVs:
        name = rv.name
        if is_transformed_name(name):
            untransformed = get_untransformed_name(name)
            name = untransformed if untransformed in valid_name else name
        if name in posterior:
            names.append(name)
    return names


def _diagnostics(posterior: xr.Dataset, names: list[str]) -> tuple[xr.Dataset, xr.Dataset]:
    """ArviZ's bulk ESS and rank r-hat of each variable ``names`` of ``posterior``: a
    discrete variable's on its distinct element series, all at once
    (:func:`_distinct_series`, :func:`.bulk_ess_and_rank_rhat`), the others by ArviZ
    on groups of :data:`MANY_VARIABLES` variables (taking a variable out of a dataset
    measures every other, so one call on all of them grows with their square); each
    variable's values are ArviZ's, to the bit."""
    import arviz_stats

    ess, rhat, plain, reordered = [], [], [], False
    for name in names:
        distinct = _distinct_series(posterior, name)
        if distinct is None:
            plain.append(name)
            continue
        series, expand = distinct
        step = max(1, _DIAGNOSED_VALUES // series[0].size)
        results = [bulk_ess_and_rank_rhat(series[start:start + step])
                   for start in range(0, len(series), step)]
        ess.append(expand(np.concatenate([result[0] for result in results])))
        rhat.append(expand(np.concatenate([result[1] for result in results])))
        reordered = True
    for start in range(0, len(plain), MANY_VARIABLES):
        part = posterior[plain[start:start + MANY_VARIABLES]]
        ess.append(arviz_stats.ess(part))
        rhat.append(arviz_stats.rhat(part))
    ess, rhat = xr.merge(ess, join="outer"), xr.merge(rhat, join="outer")
    if reordered:  # PyMC's order of the variables, which its warnings show
        ess, rhat = ess[names], rhat[names]
    return ess, rhat


def _discrete_elements(variable: xr.Variable) -> bool:
    """Whether ``variable`` is drawn (chain, draw) and is discrete, of several elements a
    draw: the variables whose distinct element series :func:`_distinct_series` finds."""
    return (variable.dtype.kind in "biu" and variable.ndim >= 3
            and variable.dims[:2] == ("chain", "draw"))


def _distinct_series(posterior: xr.Dataset, name: str
                     ) -> tuple[np.ndarray, Callable[[np.ndarray], xr.Dataset]] | None:
    """A discrete variable's distinct element series, (series, chain, draw), and how to
    put a result over them back at every element (a dataset of the variable alone), or
    None for a continuous variable, one of one element a draw, or one too large to copy
    (:data:`REPEATS_MAX_BYTES`).

    A result at an element is a function of that element's (chain, draw) series alone,
    and a discrete variable's elements often repeat a series (an occupancy model's
    detected sites are 1 at every draw), so each distinct series is computed once and
    its result copied to the elements that repeat it: the same values, to the bit
    (tested).
    """
    variable = posterior.variables[name]  # no DataArray: that would measure every other
    if not _discrete_elements(variable) or variable.nbytes > REPEATS_MAX_BYTES:
        return None
    array = np.asarray(variable.values)
    chains, draws = array.shape[:2]
    flat = array.reshape(chains, draws, -1)
    n = flat.shape[2]
    if n == 0:
        return None
    first: dict[bytes, int] = {}
    which = np.empty(n, dtype=np.intp)
    series = []
    for start in range(0, n, _SERIES_CHUNK):  # element series a chunk at a time
        chunk = np.ascontiguousarray(np.moveaxis(flat[:, :, start:start + _SERIES_CHUNK], 2, 0))
        for offset, element in enumerate(chunk):
            which[start + offset] = first.setdefault(element.tobytes(), len(first))
            if which[start + offset] == len(series):
                series.append(element.copy())  # not a view holding its whole chunk
    dims = variable.dims[2:]
    coords = {dim: posterior.coords[dim] for dim in dims if dim in posterior.coords}

    def expand(result: np.ndarray) -> xr.Dataset:
        per_element = np.asarray(result)[which].reshape(variable.shape[2:])
        return xr.Dataset({name: (dims, per_element)}, coords=coords)

    return np.stack(series), expand


def _extreme(results: xr.Dataset, name: str, pick: np.ufunc) -> float:
    """The largest (``np.fmax``) or smallest (``np.fmin``) of a variable's values, NaNs
    skipped (NaN where all are NaN)."""
    values = np.asarray(results.variables[name].values, dtype=float).ravel()
    return float(pick.reduce(values)) if values.size else float("nan")


def convergence_checks(idata, model, pymc_checks: Callable = run_convergence_checks
                       ) -> list[SamplerWarning]:
    """PyMC's convergence checks of ``idata``'s posterior, the posterior read once.

    Parameters
    ----------
    idata : xarray.DataTree
        What ``pm.sample`` returns, before the warning statistic is dropped.
    model : pymc.Model
        The model sampled.
    pymc_checks : callable, optional
        PyMC's own ``run_convergence_checks``, used for a posterior of fewer than
        :data:`MANY_VARIABLES` variables none of which is a discrete variable of several
        elements (and where there is no posterior).

    Returns
    -------
    list of SamplerWarning
        The warnings PyMC's function gives: divergences, tree depth, too few draws or
        chains, r-hat above 1.01, fewer than 100 effective draws per chain.

    Examples
    --------
    >>> import arviz_base as azb, numpy as np, pymc as pm
    >>> with pm.Model() as model:
    ...     x = pm.Normal("x")
    >>> idata = azb.from_dict({"posterior": {"x": np.random.default_rng(0).normal(size=(4, 200))}})
    >>> [w.message for w in convergence_checks(idata, model)]
    []
    """
    group = idata.get("posterior") if hasattr(idata, "posterior") else None
    if group is None or (len(group.data_vars) < MANY_VARIABLES
                         and not any(_discrete_elements(v) for v in group.variables.values())):
        return pymc_checks(idata, model)
    posterior = group.to_dataset()
    warnings = [*warn_divergences(idata), *warn_treedepth(idata)]
    if posterior.sizes["draw"] < 100:
        msg = "The number of samples is too small to check convergence reliably."
        return [*warnings, SamplerWarning(WarningType.BAD_PARAMS, msg, "info", None, None, None)]
    if posterior.sizes["chain"] == 1:
        msg = "Only one chain was sampled, this makes it impossible to run some convergence checks"
        return [*warnings, SamplerWarning(WarningType.BAD_PARAMS, msg, "info")]
    if posterior.sizes["chain"] < 4:
        msg = ("We recommend running at least 4 chains for robust computation of "
               "convergence diagnostics")
        warnings.append(SamplerWarning(WarningType.BAD_PARAMS, msg, "info"))

    names = _checked_names(model, posterior)
    ess, rhat = _diagnostics(posterior, names)
    # PyMC's order and comparisons: each variable's largest r-hat (NaNs skipped, as
    # xarray's ``max`` skips them), the largest of those as Python's ``max`` takes it
    rhat_max = max(_extreme(rhat, name, np.fmax) for name in names)
    if rhat_max > 1.01:
        msg = ("The rhat statistic is larger than 1.01 for some "
               "parameters. This indicates problems during sampling. "
               "See https://arxiv.org/abs/1903.08008 for details")
        warnings.append(SamplerWarning(WarningType.CONVERGENCE, msg, "info",
                                       extra=xr.DataTree(rhat, name="posterior")))
    eff_min = min(_extreme(ess, name, np.fmin) for name in names)
    if eff_min / posterior.sizes["chain"] < 100:
        msg = ("The effective sample size per chain is smaller than 100 for some parameters. "
               " A higher number is needed for reliable rhat and ess computation. "
               "See https://arxiv.org/abs/1903.08008 for details")
        warnings.append(SamplerWarning(WarningType.CONVERGENCE, msg, "error",
                                       extra=xr.DataTree(ess, name="posterior")))
    return warnings


def wrap_convergence_checks(pymc_checks: Callable) -> Callable:
    """``pymc_checks`` (PyMC's ``run_convergence_checks``) made by
    :func:`convergence_checks`: PyMC's own below :data:`MANY_VARIABLES` variables where
    none is a discrete variable of several elements."""

    def checks(idata, model) -> list[SamplerWarning]:
        return convergence_checks(idata, model, pymc_checks)

    checks.__wrapped__ = pymc_checks
    checks.__wrapped_by_pymc_discrete__ = True
    return checks
