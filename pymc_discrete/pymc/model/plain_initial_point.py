"""A model's plain initial point (PyMC's ``model.initial_point()``: no overrides, no
jitter), PyMC's values to the bit, without compiling a graph of every variable.

PyMC compiles one function of every free variable for it (``make_initial_point_fn``): on
a model written one variable per site that is seconds (2.4 s of a 6.2 s
``pmd.marginalize`` of a 300-site occupancy model written in a loop, which reads the
point of the model and of its copy without value transforms, measured).

The function is compiled with less work than PyMC's: the same expression
(PyMC's ``make_initial_point_expression``, its RNGs replaced and reseeded at every call as
PyMC's are), compiled by PyMC's ``compile`` without PyTensor's graph rewrites (PyMC's
uses FAST_COMPILE, whose rewrites of a graph of every variable are most of its cost:
0.97 s against 0.24 s on a 300-step chain written in a loop, measured). The rewrites
change how a graph is computed, not what: the tests compare the points with PyMC's own
on every model they build. Where this compilation or its first evaluation fails, PyMC's
own function is used.

Where every variable's initial value is its support point or a given value, the
expression is not built at all: the point is computed variable by variable, alike
variables sharing one small graph
(:func:`~pymc_discrete.pymc.model.initial_point_templates.templated_initial_point`;
0.7 s of PyMC's expression-building at 1,000 scalar variables).

Where the expression holds nothing that a compilation changes, it is not compiled at all:
:func:`~pymc_discrete.pymc.model.graph_evaluation.graph_evaluator` calls each node's
Python implementation in order, the thunks the Python linker would build, without the
function graph, the clone and the storage that compiling a graph of every variable builds
(1.1 s of the 2.3 s the function cost on a 30 x 30 lattice of scalar sites, measured).
What a compilation changes is listed in
:func:`~pymc_discrete.pymc.model.graph_evaluation.changed_by_compiling`; a graph
holding any of it is compiled as above.
"""

from __future__ import annotations

from collections.abc import Callable

from pymc.initial_point import make_initial_point_expression
from pymc.model.core import Point
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import find_rng_nodes, replace_rng_nodes, reseed_rngs
from pymc.util import get_transformed_name
from pytensor.compile.mode import Mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

from pymc_discrete.pymc.model.creation_traces import without_creation_traces
from pymc_discrete.pymc.model.graph_evaluation import graph_evaluator
from pymc_discrete.pymc.model.initial_point_templates import templated_initial_point

__all__ = ["initial_point", "plain_initial_point_function"]


def plain_initial_point_function(model) -> Callable:
    """The model's plain initial-point function (PyMC's ``make_initial_point_fn`` with
    no overrides and no jitter), its graph evaluated as written or compiled without
    rewrites (module docstring): ``seed -> {value variable name: initial value}``."""
    point = templated_initial_point(model)
    if point is not None:  # every variable from its own small graph: no expression
        def copied(seed, *args, **kwargs):
            return {name: value.copy() for name, value in point.items()}

        return copied
    # the expression's nodes record no traceback: extracting one for every new node is a
    # large part of building a graph of every variable (profiled), and a failure falls
    # back to PyMC's own function, which records them
    with without_creation_traces():
        expressions = make_initial_point_expression(
            free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
            initval_strategies=dict(model.rvs_to_initial_values), jitter_rvs=None,
            default_strategy="support_point", return_transformed=True)
    names = []
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms[rv]
        names.append(rv.name if transform is None else get_transformed_name(rv.name,
                                                                              transform))
    evaluate = graph_evaluator(expressions)
    if evaluate is not None:
        def initial_point(seed, *args, **kwargs):
            return dict(zip(names, evaluate(), strict=True))
    else:
        expressions = replace_rng_nodes(expressions)
        fn = pm_compile([], expressions,
                        mode=Mode(linker="py", optimizer=RewriteDatabaseQuery(include=[])))
        rngs = find_rng_nodes(fn.maker.fgraph.outputs)

        def initial_point(seed, *args, **kwargs):
            reseed_rngs(rngs, seed)
            return dict(zip(names, fn(*args, **kwargs), strict=True))

    initial_point(None)  # what fails, fails here, before it is handed out
    return initial_point


def initial_point(model, random_seed=None) -> dict:
    """``model.initial_point(random_seed)``, computed by
    :func:`plain_initial_point_function`, or by PyMC where that fails (an op whose value
    needs one of PyTensor's rewrites).

    Parameters
    ----------
    model : pymc.Model
    random_seed : int, optional
        Seeds the initial values that are random, as PyMC's ``random_seed`` does.

    Returns
    -------
    dict
        ``{value variable name: initial value}``, as ``model.initial_point()`` returns it.
    """
    try:
        function = plain_initial_point_function(model)
    except Exception:  # noqa: BLE001 - PyMC's own function then
        return model.initial_point(random_seed=random_seed)
    return Point(function(random_seed), model=model)
