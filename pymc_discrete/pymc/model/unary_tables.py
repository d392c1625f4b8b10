"""Pieces of the log density that are a fixed function of one site, read from a table.

A discrete variable's own log density with fixed parameters (``pm.Categorical("z", p)``,
``pm.Bernoulli("x", 0.5)``) is, element by element, a function of one site that no
other variable changes: its value at every site and value can be computed once. The
exact-ratio machinery evaluates the block's terms at several states per colour and per
draw, and PyTensor's code for such a term can cost more than the couplings it sits
beside (a Categorical's ``log(p[z])`` is a batched advanced index). Replaced by a lookup
in a table computed at set-up, the piece costs one gather, and its terms keep their
values (computed by the piece's own graph) and their dependencies (each on its one site).

A piece is tabulated only when its graph proves it: it reads none of the model's other
variables, every element depends on at most one site (the graph's dependency superset,
:func:`~pymc_discrete.pymc.model.dependencies.dependency_superset`, which is sound), and no
parameter check of it reads the block's sites. And only where it pays, by what the
graph does rather than by timing it: the piece gathers by the sites' values (an
advanced index whose indices read the block, which PyTensor evaluates as a loop over
the batch of states), and a site has at most :data:`MAX_COMPARED_VALUES` values, so
the table is read by comparisons fused into one elementwise loop. A piece that is
elementwise already (``Bernoulli(0.5)``, ``alpha * s``) is one fused loop as it is. A
value outside a site's support reads -inf, as the piece itself gives there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.mode import Mode
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import toposort, variable_depends_on
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.subtensor import AdvancedSubtensor

from pymc_discrete.pymc.model import dependencies
from pymc_discrete.pymc.model.terms import without_checks

__all__ = ["gathers_by_sites", "tabulate_unary_pieces", "unary_table"]

#: most table entries (terms x values) of one piece: beyond it the piece is left as it is
MAX_TABLE_ENTRIES = 10_000_000
#: most values a site may have for its table to be read by comparisons (one fused
#: elementwise loop, K comparisons an element)
MAX_COMPARED_VALUES = 8


def gathers_by_sites(piece: Variable, joined: Variable) -> bool:
    """Whether ``piece`` indexes an array by the sites' values (an advanced index whose
    indices read ``joined``): what a table read by comparisons saves."""
    for node in toposort([piece]):
        op = node.op.core_op if isinstance(node.op, Blockwise) else node.op
        if isinstance(op, AdvancedSubtensor) and any(
                variable_depends_on(i, [joined]) for i in node.inputs[1:]):
            return True
    return False


def unary_table(piece: Variable, joined: Variable, values: np.ndarray,
                site_values: np.ndarray, offsets: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """The table of a piece whose every element is a fixed function of one site.

    Parameters
    ----------
    piece : Variable
        A vector of terms, a graph of ``joined`` (and of no other variable).
    joined : Variable
        The block's sites as one vector, in the graph's own values.
    values : ndarray
        A value of ``joined`` (shapes and fixed indices are read at it).
    site_values : ndarray of int64, shape (N,)
        Number of values of every site.
    offsets : ndarray of int64 or None
        Smallest value of every site (site value v stands for offset + v).

    Returns
    -------
    (table, site) or None
        ``table[t, v]`` the term t with its site at v (-inf for v outside the site's
        values), ``site[t]`` the site term t depends on (0 for a term that depends on
        none: its row is one value); None when the piece is not such a function (an
        element depends on two sites, a check reads the sites), does not gather by the
        sites' values, has sites of more than :data:`MAX_COMPARED_VALUES` values, or
        cannot be evaluated.
    """
    k = int(site_values.max()) if site_values.size else 0
    if k > MAX_COMPARED_VALUES or not gathers_by_sites(piece, joined):
        return None
    unchecked, held = without_checks(piece, joined)
    if variable_depends_on(held, [joined]):
        return None
    try:
        superset = dependencies.dependency_superset(unchecked, joined, values)
    except dependencies.Unanalysable:
        return None
    counts = np.diff(superset.term_ptr)
    n_terms = counts.size
    if n_terms == 0 or (counts > 1).any() or n_terms * k > MAX_TABLE_ENTRIES:
        return None
    site = np.zeros(n_terms, np.int64)
    has_site = counts == 1
    site[has_site] = superset.term_sites[superset.term_ptr[:-1][has_site]]
    table = np.full((n_terms, k), -np.inf)
    shift = 0 if offsets is None else offsets
    try:
        # evaluated once per value, without compiling to machine code
        fn = pytensor.function([joined], [unchecked, held],
                               mode=Mode(linker="py", optimizer=None),
                               on_unused_input="ignore")
        for v in range(k):
            state = (np.minimum(v, site_values - 1) + shift).astype(joined.type.dtype)
            terms, ok = fn(state)
            terms = np.asarray(terms, dtype=np.float64).ravel()
            if terms.shape != (n_terms,):
                return None
            column = terms if bool(ok) else np.full(n_terms, -np.inf)
            valid = v < site_values[site]
            table[valid, v] = column[valid]
    except Exception:  # noqa: BLE001 - a check that raises, an op without Python code
        return None
    # a term of no site has its value at v = 0 in every column
    table[~has_site] = table[~has_site, :1]
    return table, site


def _lookup(table: np.ndarray, site: np.ndarray, joined: Variable,
            offsets: np.ndarray | None) -> Variable:
    """The graph reading term t at ``table[t, value of site[t]]``, -inf outside the
    site's values."""
    k = table.shape[1]
    value = joined[pt.as_tensor(site)]
    if offsets is not None:
        value = value - pt.as_tensor(offsets[site])
    # nested switches on constant columns: PyTensor fuses them into one elementwise loop
    out = pt.as_tensor(np.float64(-np.inf))
    for v in range(k - 1, -1, -1):
        out = pt.switch(pt.eq(value, v), pt.as_tensor(table[:, v]), out)
    return out


def tabulate_unary_pieces(pieces: Sequence[Variable], reads_others: Sequence[bool],
                          joined: Variable, values: np.ndarray, site_values: np.ndarray,
                          offsets: np.ndarray | None) -> tuple[list[Variable], int]:
    """Every piece that is a fixed function of one site per element replaced by a
    lookup in its table (:func:`unary_table`); the others as they are.

    Parameters
    ----------
    pieces : sequence of Variable
        The block's pieces (raveled vectors), graphs of ``joined``.
    reads_others : sequence of bool
        Per piece, whether it reads the model's other variables (then it is kept).
    joined, values, site_values, offsets
        As for :func:`unary_table`.

    Returns
    -------
    pieces : list of Variable
    n_tabulated : int
        How many pieces were replaced.
    """
    out, n = [], 0
    for piece, reads in zip(pieces, reads_others, strict=True):
        found = None if reads else unary_table(piece, joined, values, site_values, offsets)
        if found is None:
            out.append(piece)
            continue
        out.append(_lookup(*found, joined, offsets))
        n += 1
    return out, n
