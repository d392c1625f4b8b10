"""One compiled initial-point function per ``pm.sample`` call, shared by PyMC and the
package.

``pm.sample`` with step methods other than NUTS alone computes its chains' initial points
with ``make_initial_point_fn`` (no overrides, no jitter: ``jitter_rvs=set()``), and the
package's reading of the model, during PyMC's step assignment, calls
``model.initial_point()``, which compiles the same function again. On a model written
one variable per site that function is a graph of every variable (a 300-step chain in a
loop: 1.0 s to compile, measured), so the second compilation doubles a cost that is
PyMC's. While a registered ``pm.sample`` runs, :func:`one_initial_point_function` keeps
the first function compiled for the model without overrides and jitter, and hands it to
every later request for the same function: the same graph, so the same points (it is
seeded at every call, as PyMC's is). Everything else (overrides, jitter, another model)
compiles as PyMC compiles it.

That one function is also compiled with less work than PyMC's: the same expression
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
(:func:`~pymc_discrete.pymc.choosing.initial_point_templates.templated_initial_point`;
0.7 s of PyMC's expression-building at 1,000 scalar variables).

Where the expression holds nothing that a compilation changes, it is not compiled at all:
:func:`~pymc_discrete.pymc.choosing.graph_evaluation.graph_evaluator` calls each node's
Python implementation in order, the thunks the Python linker would build, without the
function graph, the clone and the storage that compiling a graph of every variable builds
(1.1 s of the 2.3 s the function cost on a 30 x 30 lattice of scalar sites, measured).
What a compilation changes is listed in
:func:`~pymc_discrete.pymc.choosing.graph_evaluation.changed_by_compiling`; a graph
holding any of it is compiled as above.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

from pymc.initial_point import make_initial_point_expression
from pymc.model import core
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import find_rng_nodes, replace_rng_nodes, reseed_rngs
from pymc.util import get_transformed_name
from pytensor.compile.mode import Mode
from pytensor.configdefaults import config
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

from pymc_discrete.pymc.choosing.graph_evaluation import graph_evaluator
from pymc_discrete.pymc.choosing.initial_point_templates import templated_initial_point

__all__ = ["one_initial_point_function", "plain_initial_point_function"]


def _plain(overrides, jitter_rvs, default_strategy, return_transformed) -> bool:
    """Whether a request is for the model's own initial point: no overrides, no jitter,
    PyMC's default strategy, transformed values (what both callers ask for)."""
    return (not overrides and not jitter_rvs and default_strategy == "support_point"
            and return_transformed)


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
    with config.change_flags(traceback__limit=0):
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


@contextlib.contextmanager
def one_initial_point_function(model) -> Iterator[None]:
    """Within the block, PyMC's ``make_initial_point_fn`` compiles ``model``'s plain
    initial-point function once (module docstring).

    Parameters
    ----------
    model : pymc.Model
        The model ``pm.sample`` runs on.
    """
    make = core.make_initial_point_fn
    kept: list = []

    @functools.wraps(make)
    def shared(*, model=None, overrides=None, jitter_rvs=None,
               default_strategy="support_point", return_transformed=True, **kwargs):
        plain = (model is owner and not kwargs
                 and _plain(overrides, jitter_rvs, default_strategy, return_transformed))
        if plain and kept:
            return kept[0]
        if plain:
            try:
                kept.append(plain_initial_point_function(model))
            except Exception:  # noqa: BLE001 - an op that needs a rewrite: PyMC's own
                kept.append(make(model=model, return_transformed=True))
            return kept[0]
        return make(model=model, overrides=overrides, jitter_rvs=jitter_rvs,
                    default_strategy=default_strategy, return_transformed=return_transformed,
                    **kwargs)

    owner = model
    core.make_initial_point_fn = shared
    try:
        yield
    finally:
        core.make_initial_point_fn = make
