"""PyMC's assignment of step methods, with the package's step first, in time linear in the
number of variables.

PyMC's ``assign_step_methods`` asks every step method in its registry for its competence on
every variable, and first builds the model's whole log density to see which variables
have a gradient. On a model written one variable per site both grow with the square of
the number of variables: PyMC's own ``CategoricalGibbsMetropolis`` evaluates each
Categorical's probabilities, compiling the graph back to the first site every time
(8 minutes for a 100-step hidden Markov chain written in a loop, measured), and
``model.logp()`` builds every term in one graph (31 s at 300 variables).

While :func:`~pymc_discrete.register` is in effect, the assignment is made the same way
with less work: a discrete variable for which
:class:`~pymc_discrete.pymc.choosing.auto_step.AutoStep` (first in the registry) is IDEAL
goes to it without asking the others (none can rank higher, and PyMC takes the first of
the highest), and whether a variable has a gradient is read off the log density built one
variable at a time (:func:`~pymc_discrete.pymc.model.terms.model_terms`, the same terms).
Every other variable is assigned as PyMC assigns it. The result is PyMC's, variable for
variable.
"""

from __future__ import annotations

import functools

import pytensor.gradient as tg
import pytensor.tensor as pt
from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import BlockedStep, Competence, CompoundStep
from pymc.vartypes import discrete_types

from pymc_discrete.pymc.choosing.auto_step import AutoStep
from pymc_discrete.pymc.choosing.stacked_nuts import stacked_logp
from pymc_discrete.pymc.model.terms import model_terms
from pymc_discrete.pymc.steps.albp import ALBP

__all__ = ["wrap_assign_step_methods"]


def _provided(model, step) -> tuple[list, set]:
    """The steps the user built and the variables they take, checked as PyMC checks
    them (its own function raises the same errors for anything else)."""
    if step is None:
        return [], set()
    steps = [step] if isinstance(step, BlockedStep | CompoundStep) else list(step)
    assigned = set()
    for s in steps:
        assigned |= set(s.vars)
    return steps, assigned


def _total_logp(model):
    """The model's log density, to see which variables have a gradient: the stacked one
    of a model written one variable per site (a small graph to differentiate), else the
    sum of the terms built one variable at a time."""
    # the block AutoStep reads (Bernoulli, Categorical, finite integers), so that the
    # stacked density is the one its NUTS is built on (cached once)
    discrete = [model.rvs_to_values[rv] for rv in model.free_RVs
                if ALBP.competence(rv) != Competence.INCOMPATIBLE]
    stacked = stacked_logp(model, discrete) if discrete else None
    if stacked is not None:
        return stacked
    return pt.add(*[pt.sum(term) for term in model_terms(model)[1]])


def wrap_assign_step_methods(assign):
    """PyMC's ``assign_step_methods``, made in linear time where AutoStep leads the
    registry (module docstring); PyMC's own otherwise."""

    @functools.wraps(assign)
    def assigned(model, step=None, methods=None):
        methods_list = list(methods or STEP_METHODS)
        if not methods_list or methods_list[0] is not AutoStep:
            return assign(model, step, methods=methods)
        if step is not None and not (isinstance(step, BlockedStep | CompoundStep) or all(
                isinstance(s, BlockedStep | CompoundStep) for s in step)):
            return assign(model, step, methods=methods)  # PyMC's own error messages
        provided, taken = _provided(model, step)
        if any(var not in model.value_vars for var in taken):
            return assign(model, step, methods=methods)
        total = None
        selected: dict = {}
        for var in model.value_vars:
            if var in taken:
                continue
            rv = model.values_to_rvs[var]
            has_gradient = var.dtype not in discrete_types
            if not has_gradient and AutoStep._competence(rv, False) == [Competence.IDEAL]:
                selected.setdefault(AutoStep, []).append(var)
                continue
            if has_gradient:
                if total is None:
                    total = _total_logp(model)
                try:
                    tg.grad(total, var)
                except (NotImplementedError, tg.NullTypeGradError):
                    has_gradient = False
            best = max(methods_list, key=lambda method, rv=rv, g=has_gradient:
                       method._competence(rv, g))
            selected.setdefault(best, []).append(var)
        return provided, selected

    assigned.__wrapped_by_pymc_discrete__ = True
    return assigned
