"""A chain-structured block summed out for NUTS by the forward algorithm.

When a block's sites form a chain (:func:`~pymc_discrete.pymc.chain.chain_layout`: a
hidden Markov chain, however its transitions are written), its log density given the
other variables theta is ``l(z) = sum_p phi_p(z_p) + sum_p psi_p(z_p, z_{p+1})``, and the
block sums out by the forward algorithm,

``log p(theta) = rest(theta) + logsumexp_b alpha_{T-1}(b)``,
``alpha_p(b) = phi_p(b) + logsumexp_a (alpha_{p-1}(a) + psi_{p-1}(a, b))``,

in log space (stable for chains of thousands of steps). The tables are graphs of theta:
the block's terms evaluated at the 2 K^2 states of
:func:`~pymc_discrete.kernels.chain.pair_states` (one vectorised graph) and added into
the tables as :func:`~pymc_discrete.kernels.chain.chain_tables` adds them, so NUTS gets
the marginal's gradient. :class:`~pymc_discrete.CollapsedNUTS` samples theta from it and
then draws the chain exactly with :class:`~pymc_discrete.ChainGibbs` (forward filtering,
backward sampling given the new theta).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.graph.replace import vectorize_graph

from pymc_discrete.kernels.chain import ChainLayout, pair_states, table_terms
from pymc_discrete.pymc.exact import ExactRatios
from pymc_discrete.pymc.terms import block_pieces, without_checks

__all__ = ["chain_marginal_log_density", "forward_log_normaliser"]


def forward_log_normaliser(unary: Variable, pair: Variable) -> Variable:
    """``logsumexp_z l(z)`` of a chain, by the forward algorithm in log space.

    Parameters
    ----------
    unary : Variable
        (T, K) ``phi_p(a)`` (-inf at values a site does not have).
    pair : Variable
        (T - 1, K, K) ``psi_p(a, b)`` (zero between unlinked positions).

    Returns
    -------
    Variable
        Scalar. The chain must have at least two positions.
    """
    def step(phi, psi, alpha):
        return phi + pt.logsumexp(alpha[:, None] + psi, axis=0)

    alphas = pytensor.scan(step, sequences=[unary[1:], pair], outputs_info=[unary[0]],
                           return_updates=False)
    return pt.logsumexp(alphas[-1])


def _tables(terms: Variable, layout: ChainLayout, k: int,
            n_values: np.ndarray) -> tuple[Variable, Variable]:
    """The unary and pair tables as graphs of the terms at the pair states (rows, M),
    term for term as :func:`~pymc_discrete.kernels.chain.chain_tables` adds them (the
    same :func:`~pymc_discrete.kernels.chain.table_terms`)."""
    n = layout.order.size
    k2 = k * k
    position = layout.term_position
    unary = pt.zeros((n, k), dtype="float64")
    pair = pt.zeros((max(n - 1, 1), k, k), dtype="float64")
    b_is_0 = np.flatnonzero(np.arange(k2) % k == 0)  # rows listing a, with b = 0
    a_is_0 = np.flatnonzero(np.arange(k2) < k)  # rows listing b, with a = 0
    for parity, (pairs, first, last) in enumerate(table_terms(layout)):
        rows = terms[parity * k2:(parity + 1) * k2]
        if pairs.size:
            pair = pt.inc_subtensor(pair[position[pairs]],
                                    rows[:, pairs].T.reshape((pairs.size, k, k)))
        if first.size:
            unary = pt.inc_subtensor(unary[position[first]], rows[b_is_0][:, first].T)
        if last.size:
            unary = pt.inc_subtensor(unary[position[last]], rows[a_is_0][:, last].T)
    missing = np.arange(k)[None, :] >= n_values[layout.order][:, None]
    if missing.any():
        unary = pt.switch(missing, -np.inf, unary)
    return unary, pair[: max(n - 1, 0)]


def chain_marginal_log_density(model, value_vars, point: dict, exact: ExactRatios,
                               layout: ChainLayout) -> Variable:
    """The model's log density with a chain-structured block summed out by the forward
    algorithm (module docstring): a graph of the model's other value variables.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The block.
    point : dict
        A point of the model (the block's shapes).
    exact : ExactRatios
        The block's structure, read off the graph.
    layout : ChainLayout
        Its chain order (:func:`~pymc_discrete.pymc.chain.chain_layout`).
    """
    pieces, rest = block_pieces(model, value_vars)
    n_values = (np.full(exact.n_sites, 2, np.int64) if exact.n_categories is None
                else exact.n_categories)
    k = int(n_values.max())
    states = pair_states(np.zeros(exact.n_sites, np.int64), layout, n_values)
    if exact.offsets is not None:
        states = states + exact.offsets[None, :]
    rows = states.shape[0]
    unchecked, helds = zip(*[without_checks(piece, list(value_vars)) for piece in pieces])
    replace, lo = {}, 0
    for var in value_vars:
        shape = tuple(int(d) for d in np.shape(point[var.name]))
        size = int(np.prod(shape, dtype=np.int64))
        replace[var] = pt.constant(
            states[:, lo:lo + size].reshape((rows, *shape)).astype(var.type.dtype))
        lo += size
    batched = vectorize_graph([*unchecked, *helds], replace=replace)
    terms = pt.concatenate([pt.broadcast_to(b, (rows, b.shape[-1])) if b.ndim == 2
                            else b.reshape((rows, -1)) for b in batched[:len(pieces)]],
                           axis=1)
    held = pt.all(pt.stack([pt.all(h) for h in batched[len(pieces):]]))
    unary, pair = _tables(terms, layout, k, n_values)
    if layout.order.size == 1:
        total = pt.logsumexp(unary[0])
    else:
        total = forward_log_normaliser(unary, pair)
    return pt.switch(held, rest + total, -np.inf)
