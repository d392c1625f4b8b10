"""A model's plain initial point computed variable by variable, alike variables sharing
one small graph: linear in the number of variables.

PyMC's initial point is one expression of every free variable
(``make_initial_point_expression``): each variable's support point (or given initial
value), transformed and back, with the variables it reads replaced by their own initial
values. On a model written one variable per site, building that expression is a function
graph of every variable, cloned and rewritten in place (0.7 s at 1,000 scalar variables,
measured, before anything evaluates it).

Evaluated, the expression computes the variables in order, each from its parents'
values. :func:`templated_initial_point` computes them so directly: every variable's
support point is derived on a copy of its own node, cut at the free variables it reads
(:func:`~pymc_discrete.pymc.model.graph_shape.graph_shape`); variables whose graphs have
the same shape up to their leaves (one ``pm.Categorical`` per step, each reading the
previous one) share that derivation, evaluated by each node's Python implementation as
:func:`~pymc_discrete.pymc.model.graph_evaluation.graph_evaluator` evaluates PyMC's
expression, with the member's leaves and its parents' values put in. The ops and their
inputs are those of PyMC's expression, so the values are its own, to the bit (tested on
the models of ``tests/pymc/test_initial_points.py``).

Where the expression is more than this (a random or symbolic initial value, a variable
valued jointly with another, an inner graph, a graph PyTensor's evaluation would change),
None: the caller builds PyMC's expression.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import support_point
from pymc.util import get_transformed_name
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable

from pymc_discrete.pymc.model.graph_evaluation import graph_evaluator
from pymc_discrete.pymc.model.graph_shape import graph_shape, same_leaves
from pymc_discrete.pymc.model.local_terms import copy_replacing

__all__ = ["templated_initial_point"]


class _Template:
    """The initial value of alike variables as one graph of placeholders: ``evaluate(
    *inputs) -> [transformed value, value]``, and for every placeholder its leaf's
    position among the members' leaves."""

    def __init__(self, evaluate: Callable, positions: list[int]) -> None:
        self.evaluate = evaluate
        self.positions = positions


def _template(model, rv: Variable, leaves: list[Variable], inputs_at: list[int],
              given) -> _Template | None:
    """The template of ``rv``'s kind: placeholders for the leaves at ``inputs_at``, its
    initial value ``given`` (None: its support point), transformed as PyMC transforms
    it, cast, and transformed back."""
    placeholders = {leaves[k]: leaves[k].type() for k in inputs_at}
    local = copy_replacing(rv, placeholders)
    dtype = local.type.dtype
    try:
        value = (support_point(local) if given is None
                 else pt.as_tensor(given, dtype).astype(dtype))
    except NotImplementedError:  # PyMC draws from the prior: random, left to PyMC
        return None
    # PyMC's steps, in its order: transformed, cast, transformed back
    transform = model.rvs_to_transforms.get(rv)
    params = local.owner.inputs
    if transform is not None:
        value = transform.forward(value, *params)
    value = value.astype(dtype)
    back = value if transform is None else transform.backward(value, *params)
    evaluate = graph_evaluator([value, back], list(placeholders.values()))
    return None if evaluate is None else _Template(evaluate, list(inputs_at))


def templated_initial_point(model) -> dict[str, np.ndarray] | None:
    """The model's plain initial point (PyMC's ``model.initial_point()``: no overrides, no
    jitter; transformed values by value-variable name), computed variable by variable
    from shared templates (module docstring); None where that is not PyMC's expression.

    Parameters
    ----------
    model : pymc.Model

    Returns
    -------
    dict or None
    """
    free = list(model.free_RVs)
    is_free = set(free).__contains__
    if any(sum(is_free(out) for out in rv.owner.outputs) > 1 for rv in free):
        return None  # valued jointly: PyMC's expression relates them
    strategies = model.rvs_to_initial_values
    shapes = []
    for rv in free:
        found = graph_shape(rv, is_free, lambda leaf, k: ("leaf", k, leaf.type))
        if found is None:
            return None
        shapes.append(found)
    kinds: dict[tuple, list[int]] = {}
    for i, (rv, (_, signature)) in enumerate(zip(free, shapes, strict=True)):
        given = strategies.get(rv)
        if given is None or (isinstance(given, str) and given == "support_point"):
            key = (signature, id(model.rvs_to_transforms.get(rv)))
        elif isinstance(given, str | Variable):
            return None  # drawn from the prior, or a graph: PyMC's expression
        else:
            key = ("given", i)  # its own value
        kinds.setdefault(key, []).append(i)
    templates: dict[int, _Template] = {}
    for key, members in kinds.items():
        columns = list(zip(*(shapes[m][0] for m in members), strict=True))
        first = shapes[members[0]][0]
        # placeholders: parents, leaves that differ between members, data
        inputs_at = [k for k, column in enumerate(columns)
                     if is_free(first[k]) or isinstance(first[k], SharedVariable)
                     or not same_leaves(list(column))]
        given = None if key[0] != "given" else strategies[free[members[0]]]
        template = _template(model, free[members[0]], first, inputs_at, given)
        if template is None:
            return None
        templates.update((m, template) for m in members)
    values: dict[Variable, np.ndarray] = {}
    point = {}
    for i, rv in enumerate(free):
        template = templates[i]
        leaves = shapes[i][0]
        args = []
        for k in template.positions:
            leaf = leaves[k]
            if is_free(leaf):
                if leaf not in values:
                    return None  # a parent after its child: not the order PyMC evaluates
                args.append(values[leaf])
            elif isinstance(leaf, SharedVariable):
                args.append(leaf.get_value(borrow=True))
            elif isinstance(leaf, Constant):
                args.append(leaf.data)
            else:
                return None
        transformed, value = template.evaluate(*args)
        values[rv] = value
        transform = model.rvs_to_transforms.get(rv)
        name = rv.name if transform is None else get_transformed_name(rv.name, transform)
        point[name] = transformed
    return point
