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

That one function is the package's own
(:func:`~pymc_discrete.pymc.model.plain_initial_point.plain_initial_point_function`):
PyMC's points, to the bit, without compiling a graph of every variable.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

from pymc.model import core

from pymc_discrete.pymc.model.plain_initial_point import plain_initial_point_function

__all__ = ["one_initial_point_function"]


def _plain(overrides, jitter_rvs, default_strategy, return_transformed) -> bool:
    """Whether a request is for the model's own initial point: no overrides, no jitter,
    PyMC's default strategy, transformed values (what both callers ask for)."""
    return (not overrides and not jitter_rvs and default_strategy == "support_point"
            and return_transformed)


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
