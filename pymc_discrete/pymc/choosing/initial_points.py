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
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

__all__ = ["one_initial_point_function", "plain_initial_point_function"]


def _plain(overrides, jitter_rvs, default_strategy, return_transformed) -> bool:
    """Whether a request is for the model's own initial point: no overrides, no jitter,
    PyMC's default strategy, transformed values (what both callers ask for)."""
    return (not overrides and not jitter_rvs and default_strategy == "support_point"
            and return_transformed)


def plain_initial_point_function(model) -> Callable:
    """The model's plain initial-point function (PyMC's ``make_initial_point_fn`` with
    no overrides and no jitter), its graph compiled without rewrites (module docstring):
    ``seed -> {value variable name: initial value}``."""
    expressions = replace_rng_nodes(make_initial_point_expression(
        free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies=dict(model.rvs_to_initial_values), jitter_rvs=None,
        default_strategy="support_point", return_transformed=True))
    fn = pm_compile([], expressions, mode=Mode(linker="py",
                                                optimizer=RewriteDatabaseQuery(include=[])))
    names = []
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms[rv]
        names.append(rv.name if transform is None else get_transformed_name(rv.name,
                                                                              transform))
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
