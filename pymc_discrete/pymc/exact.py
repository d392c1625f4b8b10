"""Exact local log-ratios of a block of binary sites, for ``proposal="exact"``.

The model's log density is split into elementwise terms (each variable's elementwise logp,
and every potential split at its sums), the terms that depend on the block are compiled as
one function batched over a leading axis of states (``vectorize_graph``), and the sites
are coloured so that sites sharing no term are flipped together
(:mod:`pymc_discrete.kernels.structure`). One batched call per draw then gives the exact
log density and every single-flip log-ratio; its cost is (colours + 1) evaluations of the
terms, linear in N when interactions are sparse.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytensor.tensor as pt
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import join_nonshared_inputs
from pytensor.graph.basic import Variable
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import variable_depends_on
from pytensor.scalar import basic as ps
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import Sum

from pymc_discrete.kernels.structure import (
    TermStructure,
    build_structure,
    categorical_colour_ratios,
    categorical_colour_states,
    colour_ratios,
    colour_states,
    discover_structure,
)

__all__ = ["ExactRatios", "split_into_pieces"]

#: Upper bound on the number of float64 values one batched call may produce.
MAX_BATCH_VALUES = 2**22


def split_into_pieces(term: Variable, block: Sequence[Variable]) -> list[Variable]:
    """Split a log-density term into pieces whose total equals its total, as finely as the
    graph allows: a sum becomes its summand, a scalar sum of scalars its operands, and a
    scalar product with a factor that does not depend on the block is distributed.

    Parameters
    ----------
    term : Variable
        A log-density term (any shape; its elements are summed).
    block : sequence of Variable
        The block's value variables.

    Returns
    -------
    list of Variable
        Pieces (any shapes) with ``sum(p.sum() for p in pieces) == term.sum()``.
    """
    node = term.owner
    if node is None:
        return [term]
    op = node.op
    if isinstance(op, Sum):
        return split_into_pieces(node.inputs[0], block)
    if isinstance(op, Elemwise) and term.type.ndim == 0:
        scalar_op = op.scalar_op
        inputs = node.inputs
        if isinstance(scalar_op, ps.Add):
            return [p for i in inputs for p in split_into_pieces(i, block)]
        if isinstance(scalar_op, ps.Sub):
            return split_into_pieces(inputs[0], block) + [
                -p for p in split_into_pieces(inputs[1], block)
            ]
        if isinstance(scalar_op, ps.Neg):
            return [-p for p in split_into_pieces(inputs[0], block)]
        if isinstance(scalar_op, ps.Mul):
            dependent = [i for i in inputs if variable_depends_on(i, block)]
            if len(dependent) == 1:
                factor = pt.mul(*[i for i in inputs if i is not dependent[0]])
                return [factor * p for p in split_into_pieces(dependent[0], block)]
    return [term]


class ExactRatios:
    """``x -> (logp of the block's terms, exact local log-ratios)``.

    For binary sites (``n_categories`` None) the ratios are a vector of single-flip
    log-ratios; for categorical sites an (N, K) table ``d(i, v)`` with NaN at the current
    values and -inf at values a site does not have.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The block's binary value variables.
    point : dict
        A point of the model (shapes, and the probe for the structure).
    shared : dict
        Other value variable -> shared variable holding its current value.
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile`.
    seed : int
        Seed of the random probes used to discover the structure.
    n_categories : ndarray of int64, optional
        Number of values of every site; None for a binary block.

    Attributes
    ----------
    n_terms : int
        Number of elementwise terms that depend on the block.
    structure : TermStructure
        Terms of every site and the colouring.
    """

    def __init__(
        self, model, value_vars, point, shared, compile_kwargs=None, seed=0, n_categories=None
    ):
        value_vars = list(value_vars)
        self.n_categories = None if n_categories is None else np.asarray(n_categories, np.int64)
        rvs = list(model.free_RVs) + list(model.observed_RVs) + list(model.potentials)
        terms = model.logp(vars=rvs, sum=False)
        pieces = [
            p for t in terms if variable_depends_on(t, value_vars)
            for p in split_into_pieces(t, value_vars) if variable_depends_on(p, value_vars)
        ]
        vector = pt.concatenate([pt.cast(p, "float64").ravel() for p in pieces])
        [vector], joined = join_nonshared_inputs(point, [vector], value_vars, shared)
        self.n_sites = int(joined.type.shape[0]) if joined.type.shape[0] is not None else int(
            sum(np.size(point[v.name]) for v in value_vars)
        )
        batch = pt.matrix("states", dtype=joined.type.dtype, shape=(None, self.n_sites))
        batched = vectorize_graph(vector, replace={joined: batch})
        self._fn = pm_compile([batch], batched, **(compile_kwargs or {}))
        self._fn.trust_input = True
        self._dtype = joined.type.dtype
        x0 = np.concatenate([np.ravel(point[v.name]) for v in value_vars]).astype(np.int64)
        self.n_terms = int(self._fn(x0[None, :].astype(self._dtype)).shape[1])
        self._rows = max(1, MAX_BATCH_VALUES // max(1, self.n_terms))
        self.structure = self._discover(x0, shared, seed)

    def batch_terms(self, states: np.ndarray) -> np.ndarray:
        """Terms at every row of ``states`` (chunked so memory stays bounded)."""
        states = np.ascontiguousarray(states, dtype=self._dtype)
        if states.shape[0] <= self._rows:
            return self._fn(states)
        return np.concatenate(
            [self._fn(states[i : i + self._rows]) for i in range(0, states.shape[0], self._rows)]
        )

    def _discover(self, x0: np.ndarray, shared: dict, seed: int) -> TermStructure:
        """Probe at x0, all zeros, all ones and random points, with the continuous variables
        moved to random values (a parameter at exactly 0 would hide dependencies)."""
        rng = np.random.default_rng(seed)
        saved = {s: s.get_value() for s in shared.values()}
        try:
            for s, value in saved.items():
                if np.issubdtype(np.asarray(value).dtype, np.floating):
                    s.set_value(value + rng.normal(0.0, 1.0, np.shape(value)).astype(value.dtype))
            n = self.n_sites
            ks = self.n_categories
            if ks is None:
                probes = np.vstack([x0, np.zeros(n), np.ones(n), rng.integers(0, 2, (3, n))])
            else:
                extremes = [np.zeros(n), ks - 1] + [rng.integers(0, ks) for _ in range(4)]
                probes = np.vstack([x0, *extremes])
            terms_of_site = discover_structure(
                self.batch_terms, probes.astype(np.int64), self._rows, ks
            )
        finally:
            for s, value in saved.items():
                s.set_value(value)
        return build_structure(terms_of_site, self.n_terms)

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        s = self.structure
        ks = self.n_categories
        if ks is None:
            terms = self.batch_terms(colour_states(x, s))
            ratios = colour_ratios(terms, s.site_ptr, s.site_terms, s.colour)
        else:
            terms = self.batch_terms(categorical_colour_states(x, s, ks))
            ratios = categorical_colour_ratios(
                terms, s.site_ptr, s.site_terms, s.colour, x, ks, int(ks.max())
            )
        return float(terms[0].sum()), ratios
