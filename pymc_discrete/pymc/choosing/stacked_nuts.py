"""NUTS for the continuous variables of a model written one variable per site, on the
model's log density with its alike terms stacked.

PyMC's NUTS compiles ``model.logp()``: on a model written one discrete variable per site
that is a graph of a few nodes per variable, built in time that grows with the square of
their number and compiled node by node (70 s for a 100-step hidden Markov chain in a
loop, measured, most of it PyMC's graph rewrites). The same density with the alike terms
stacked (:func:`~pymc_discrete.pymc.model.terms.stacked_model_logp`) is the vectorised
phrasing's handful of terms. :func:`stacked_nuts` builds PyMC's NUTS on it: the same
sampler on the same density and gradient, only the graph differs (and the order in
which its terms are added, so the last bits).
"""

from __future__ import annotations

import weakref

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.traversal import variable_depends_on
from pytensor.tensor.elemwise import Elemwise

from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.model.stacking import read_from_vector
from pymc_discrete.pymc.model.terms import stacked_model_logp
from pymc_discrete.pymc.steps.scalar_point import site_reader
from pymc_discrete.pymc.summing.collapsed_nuts import MarginalNUTS
from pymc_discrete.pymc.summing.marginal import marginal_logp_dlogp

__all__ = ["StackedNUTS", "has_stacked_logp", "stacked_logp", "stacked_nuts"]

#: model -> (its named variables, its stacked log density or None)
_STACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def stacked_logp(model, discrete):
    """The model's stacked log density (cached per model), or None where nothing
    stacks."""
    names = (tuple(model.named_vars), tuple(v.name for v in discrete))
    cached = _STACKED.get(model)
    if cached is None or cached[0] != names:
        cached = (names, stacked_model_logp(model, discrete))
        _STACKED[model] = cached
    return cached[1]


def has_stacked_logp(model, discrete) -> bool:
    """Whether the model's log density has alike terms of the discrete variables to
    stack (a model written one variable per site)."""
    return stacked_logp(model, discrete) is not None


class StackedNUTS(MarginalNUTS):
    """PyMC's NUTS on the stacked log density (module docstring); built by
    :func:`stacked_nuts`. The discrete sites are read from one shared vector, set from
    the point at every step (one input instead of one per variable: numba compiles a
    function of thousands of inputs for minutes)."""

    #: the shared vector of the discrete sites, and the variables it holds, in order
    sites = None
    site_names: tuple[str, ...] = ()

    #: whether every site is a variable of its own (then read without a concatenation),
    #: and ``point -> the sites' values in order`` (:func:`site_reader`)
    scalar_sites = False
    read_sites = None

    #: the terms that read no continuous variable, summed: a shared scalar the density
    #: adds, and the function that evaluates it at the sites (None: no such terms)
    fixed_logp = None
    fixed_function = None
    _fixed_unset = True

    def step(self, point):
        names = self.site_names
        if self.scalar_sites:
            values = np.fromiter(self.read_sites(point), self.sites.dtype, len(names))
        else:
            values = np.concatenate([np.ravel(point[name]) for name in names])
        values = values.astype(self.sites.dtype, copy=False)
        # the sites-only terms are evaluated again only when the sites moved
        refresh = self.fixed_function is not None and (
            self._fixed_unset or not np.array_equal(values, self.sites.get_value(borrow=True)))
        self.sites.set_value(values, borrow=True)
        if refresh:
            self.fixed_logp.set_value(np.asarray(self.fixed_function(), dtype=np.float64))
            self._fixed_unset = False
        return super().step(point)


StackedNUTS.__name__ = "NUTS (stacked log density)"


def stacked_nuts(model, continuous, discrete, initial_point, compile_kwargs,
                 nuts_kwargs) -> StackedNUTS | None:
    """NUTS for ``continuous`` on the stacked log density, or None where nothing
    stacks."""
    logp = stacked_logp(model, discrete)
    if logp is None:
        return None
    point = initial_point if initial_point is not None else model.initial_point()
    values = np.concatenate([np.ravel(point[v.name]) for v in discrete]).astype(np.int64)
    sites = pytensor.shared(values, name="discrete_sites")
    # the stacked sites read as one gather of the shared vector
    (logp,) = read_from_vector([logp], discrete, point, sites)
    logp, fixed_logp, fixed = _hoisted(logp, model.value_vars)
    logp_dlogp = marginal_logp_dlogp(model, logp, continuous, point, compile_kwargs)
    nuts = StackedNUTS(continuous, model=model, logp_dlogp_func=logp_dlogp,
                       initial_point=point, compile_kwargs=compile_kwargs, **nuts_kwargs)
    if fixed is not None:
        nuts.fixed_logp = fixed_logp
        nuts.fixed_function = compile_function([], fixed, **(compile_kwargs or {}))
    nuts.sites, nuts.site_names = sites, tuple(v.name for v in discrete)
    nuts.scalar_sites = all(np.shape(point[v.name]) == () for v in discrete)
    nuts.read_sites = site_reader(nuts.site_names)
    return nuts


def _hoisted(logp, value_vars):
    """``logp`` (a sum of terms) with the terms that read no model variable (those of
    the discrete sites alone: a chain's transitions, the sites' priors) replaced by one
    shared scalar, their sum, and that sum's graph; ``(logp, None, None)`` where there
    are none or nothing else. NUTS evaluates the density at every leapfrog step, and
    these terms only change when the sites do: :class:`StackedNUTS` evaluates them once
    a draw. The density is the same, summed in another order (its last bits)."""
    node = logp.owner
    terms = (list(node.inputs) if node is not None and isinstance(node.op, Elemwise)
             and isinstance(node.op.scalar_op, ps.Add) else [logp])
    fixed = [t for t in terms if not variable_depends_on(t, list(value_vars))]
    if not fixed or len(fixed) == len(terms):
        return logp, None, None
    shared = pytensor.shared(np.float64(0.0), name="discrete_only_logp")
    moving = [t for t in terms if not any(t is f for f in fixed)]
    return pt.add(shared, *moving), shared, pt.add(*fixed)
