"""Where the summed-out route's chains start: the mode of the summed-out density that an
optimiser reaches from the model's initial point.

A summed-out model can have minor modes that NUTS, once in them, does not leave within a
run: on the iris mixture (three Gaussian components, 150 labels summed out) the modes
where two components share one cluster. PyMC's NUTS, started at the model's initial
point with its small first steps and an identity mass matrix, reached the main mode in
every chain (CollapsedNUTS: 3 of 3 seeds converged); nutpie, started at the same point,
left chains in the minor modes in 3 of 3 seeds (r-hat 1.5-2.4), with its diagonal or its
draw-based adaptation and with a tenth of its first step size alike. Started at the mode
that L-BFGS reaches from the initial point, nutpie converged in 3 of 3 seeds (r-hat
<= 1.011), measured on the 2-core VM, 4 chains x 1000 after 1000.

The optimiser follows the density NUTS samples (unconstrained values, the transforms'
Jacobians included) from the model's initial point, so it stays in the basin that
PyMC's NUTS from that point reaches. Where it does not converge to a finite point, or
the mode is no better than the start, or its gradient is not near zero there (a density
unbounded along a funnel's scale: L-BFGS stops there too), or some element of it is
exactly zero (a saddle of symmetry that L-BFGS does not leave: nutpie refuses to start
there), the chains start as PyMC starts them for an all-continuous model: jittered
around the initial point.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.optimize
from pymc.blocking import DictToArrayBijection
from pymc.pytensorf import compile as pm_compile
from pytensor.compile.mode import Mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

__all__ = ["GRADIENT_TOLERANCE", "MAX_ITERATIONS", "mode_start"]

_log = logging.getLogger("pymc.pymc_discrete")

#: L-BFGS iterations before the search is given up (the applied models' modes were
#: reached in 6-48)
MAX_ITERATIONS = 1000
#: the largest gradient element a mode may have: L-BFGS stops where the density's
#: relative change is tiny, which a density unbounded along a funnel's scale also shows
#: (its gradient there: one less than the group's size, on the log scale); measured at
#: the applied models' modes: 1e-6 to 0.011
GRADIENT_TOLERANCE = 0.1


def mode_start(model) -> dict[str, np.ndarray] | None:
    """The local mode of ``model``'s log density reached by L-BFGS from its initial point,
    as initial values of its free variables (``pm.sample(initvals=...)``: by name, on
    their own scale), or None where the search failed (module docstring).

    Parameters
    ----------
    model : pymc.Model
        An all-continuous model (the summed-out one).

    Returns
    -------
    dict or None

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as model:
    ...     sigma = pm.LogNormal("sigma", mu=1.0, sigma=0.5)
    >>> start = mode_start(model)
    >>> round(float(start["sigma"]), 4)  # exp(mu) on the log scale
    2.7183
    """
    point = model.initial_point()
    grad_vars = [var.name for var in model.continuous_value_vars]
    function = model.logp_dlogp_function(ravel_inputs=True, initial_point=point)
    start = DictToArrayBijection.map({name: point[name] for name in grad_vars})

    def negative(x: np.ndarray) -> tuple[float, np.ndarray]:
        logp, gradient = function(x)
        if not np.isfinite(logp) or not np.all(np.isfinite(gradient)):
            return np.inf, np.zeros_like(x)
        return -float(logp), -np.asarray(gradient, dtype=float)

    first = negative(start.data)[0]
    if not np.isfinite(first):
        return None
    result = scipy.optimize.minimize(negative, start.data, jac=True, method="L-BFGS-B",
                                     options={"maxiter": MAX_ITERATIONS})
    found = (result.success and np.isfinite(result.fun) and np.all(np.isfinite(result.x))
             and result.fun <= first)
    gradient = negative(result.x)[1]
    if found and np.abs(gradient).max(initial=0.0) > GRADIENT_TOLERANCE:
        found, result.message = False, "the density grows without a mode"
    elif found and np.any(gradient == 0.0):
        # a point of symmetry (a mixture's components all alike at the initial point: a
        # saddle L-BFGS does not leave) or a variable the density does not move: nutpie
        # cannot start where a gradient element is exactly zero (its mass matrix starts
        # from the gradient)
        found, result.message = False, "the gradient is exactly zero in some direction"
    if not found:
        _log.info("pymc-discrete: no mode found from the initial point (%s); chains start "
                  "as PyMC starts them", result.message)
        return None
    mode = DictToArrayBijection.rmap(start._replace(data=result.x))
    return _on_own_scale(model, {**point, **mode})


def _on_own_scale(model, point: dict) -> dict[str, np.ndarray]:
    """The free variables' values at ``point`` (value variables) on their own scale,
    by name, computed by PyMC's untransformed expressions without graph rewrites."""
    free = {rv.name for rv in model.free_RVs}
    outputs = [var for var in model.unobserved_value_vars if var.name in free]
    inputs = list(model.value_vars)
    function = pm_compile(inputs, outputs, on_unused_input="ignore",
                          mode=Mode(linker="py", optimizer=RewriteDatabaseQuery(include=[])))
    values = function(*[point[var.name] for var in inputs])
    return {var.name: np.asarray(value) for var, value in zip(outputs, values, strict=True)}
