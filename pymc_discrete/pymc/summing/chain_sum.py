"""A chain-structured block summed out for NUTS by the forward algorithm.

When a block's sites form a chain (:func:`~pymc_discrete.pymc.steps.chain.chain_layout`: a
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
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, grad_not_implemented
from pytensor.graph.basic import Apply, Variable
from pytensor.graph.op import Op
from pytensor.graph.replace import vectorize_graph

from pymc_discrete.kernels.chain import (
    ChainLayout,
    _marginals,
    chain_marginals,
    pair_states,
    table_terms,
    unary_states,
)
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.model.terms import (
    all_of,
    block_pieces,
    piece_sizes,
    states_as_constants,
    without_checks,
)

__all__ = ["ChainSum", "chain_marginal_log_density", "chain_tables_graph",
           "forward_log_normaliser", "register_jax"]


class ChainSum(Op):
    """``(unary, pair) -> (log Z, gamma, xi)``: a chain summed out by the forward and
    backward passes (:func:`~pymc_discrete.kernels.chain.chain_marginals`, compiled
    with numba).

    The gradient of ``log Z`` is read off the marginals it returns beside it (``gamma``
    with respect to the unary table, ``xi`` to the pair table), so a NUTS gradient costs
    one forward and one backward pass, O(T K^2), instead of the reverse pass through a
    ``scan`` of T steps.
    """

    __props__ = ()

    def make_node(self, unary, pair) -> Apply:
        unary = pt.cast(pt.as_tensor_variable(unary), "float64")
        pair = pt.cast(pt.as_tensor_variable(pair), "float64")
        if unary.ndim != 2 or pair.ndim != 3:
            raise TypeError(f"a chain's tables are (T, K) and (T - 1, K, K): got "
                            f"{unary.ndim} and {pair.ndim} dimensions")
        return Apply(self, [unary, pair], [pt.dscalar(), unary.type(), pair.type()])

    def perform(self, node, inputs, outputs) -> None:
        log_z, gamma, xi = chain_marginals(*inputs)
        outputs[0][0] = np.asarray(log_z)
        outputs[1][0] = gamma
        outputs[2][0] = xi

    def pullback(self, inputs, outputs, cotangents) -> list:
        if any(not isinstance(g.type, DisconnectedType) for g in cotangents[1:]):
            return [grad_not_implemented(self, i, inputs[i],
                                         "second derivatives of a summed-out chain")
                    for i in range(2)]
        grad = cotangents[0]
        return [grad * outputs[1], grad * outputs[2]]


def _register_numba() -> None:
    """ChainSum inside PyTensor's numba-compiled graphs (PyTensor 3.3's default linker),
    instead of a call back into Python at every evaluation. The dispatch lives in
    PyTensor's numba backend, whose layout is not public: where it is missing, the op
    runs its ``perform`` (same values, slower)."""
    try:
        from pytensor.link.numba.dispatch.basic import (
            numba_njit,
            register_funcify_default_op_cache_key,
        )
    except ImportError:
        return
    marginals = _marginals

    @register_funcify_default_op_cache_key(ChainSum)
    def _numba_chain_sum(op, node=None, **kwargs):
        @numba_njit
        def chain_sum(unary, pair):
            log_z, gamma, xi = marginals(unary, pair)
            return np.asarray(log_z), gamma, xi

        return chain_sum, 1


_register_numba()

#: whether ChainSum has its JAX implementation registered (:func:`register_jax`)
_jax_registered = False


def register_jax() -> None:
    """ChainSum inside PyTensor's JAX-compiled graphs (NumPyro and BlackJAX): the forward
    algorithm as a ``lax.scan`` in log space, the marginals (the gradient of ``log Z``)
    by JAX's reverse pass through it. Registered on demand, so that importing the
    package does not import JAX.

    Raises
    ------
    ImportError
        If JAX is not installed.
    """
    global _jax_registered
    if _jax_registered:
        return
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp
    from pytensor.link.jax.dispatch import jax_funcify

    def log_normaliser(unary, pair):
        def forward(alpha, inputs):
            phi, psi = inputs
            alpha = logsumexp(alpha[:, None] + psi, axis=0) + phi
            return alpha, None

        alpha, _ = jax.lax.scan(forward, unary[0], (unary[1:], pair))
        return logsumexp(alpha)

    with_marginals = jax.value_and_grad(log_normaliser, argnums=(0, 1))

    @jax_funcify.register(ChainSum)
    def _jax_chain_sum(op, **kwargs):
        def chain_sum(unary, pair):
            log_z, (gamma, xi) = with_marginals(unary, pair)
            # no state of positive probability: no derivative (as the numba version)
            finite = jnp.isfinite(log_z)
            return (log_z, jnp.where(finite, gamma, 0.0), jnp.where(finite, xi, 0.0))

        return chain_sum

    _jax_registered = True


def forward_log_normaliser(unary: Variable, pair: Variable) -> Variable:
    """``logsumexp_z l(z)`` of a chain, by the forward algorithm in log space
    (:class:`ChainSum`; its gradient by the backward pass).

    Parameters
    ----------
    unary : Variable
        (T, K) ``phi_p(a)`` (-inf at values a site does not have).
    pair : Variable
        (T - 1, K, K) ``psi_p(a, b)`` (zero between unlinked positions).

    Returns
    -------
    Variable
        Scalar.
    """
    return ChainSum()(unary, pair)[0]


def _tables(pair_terms: Variable | None, pair_ids: np.ndarray, unary_terms: Variable | None,
            unary_ids: np.ndarray, layout: ChainLayout, k: int,
            n_values: np.ndarray) -> tuple[Variable, Variable]:
    """The unary and pair tables as graphs: ``pair_terms`` (2 K^2, len(pair_ids)), the
    terms ``pair_ids`` at the pair states, added term for term as
    :func:`~pymc_discrete.kernels.chain.chain_tables` adds them (the same
    :func:`~pymc_discrete.kernels.chain.table_terms`), and ``unary_terms`` (K,
    len(unary_ids)), unary terms at the unary states, added at their positions."""
    n = layout.order.size
    k2 = k * k
    position = layout.term_position
    unary = pt.zeros((n, k), dtype="float64")
    pair = pt.zeros((max(n - 1, 1), k, k), dtype="float64")
    column = np.full(position.size, -1, np.int64)
    column[pair_ids] = np.arange(pair_ids.size)
    b_is_0 = np.flatnonzero(np.arange(k2) % k == 0)  # rows listing a, with b = 0
    a_is_0 = np.flatnonzero(np.arange(k2) < k)  # rows listing b, with a = 0
    for parity, listed in enumerate(table_terms(layout)):
        pairs, first, last = (ids[column[ids] >= 0] for ids in listed)
        if pair_terms is None:
            break
        rows = pair_terms[parity * k2:(parity + 1) * k2]
        if pairs.size:
            pair = pt.inc_subtensor(pair[position[pairs]],
                                    rows[:, column[pairs]].T.reshape((pairs.size, k, k)))
        if first.size:
            unary = pt.inc_subtensor(unary[position[first]],
                                     rows[b_is_0][:, column[first]].T)
        if last.size:
            unary = pt.inc_subtensor(unary[position[last]], rows[a_is_0][:, column[last]].T)
    if unary_ids.size:
        unary = pt.inc_subtensor(unary[position[unary_ids]], unary_terms.T)
    missing = np.arange(k)[None, :] >= n_values[layout.order][:, None]
    if missing.any():
        unary = pt.switch(missing, -np.inf, unary)
    return unary, pair[: max(n - 1, 0)]


def _batched(pieces: list, value_vars, point: dict, states: np.ndarray) -> tuple:
    """The (check-free) pieces evaluated at every row of ``states`` (block order), as
    one (rows, M) graph, and whether every check held at all of them."""
    if not pieces:
        return None, pt.constant(True)
    rows = states.shape[0]
    unchecked, helds = zip(*[without_checks(piece, list(value_vars)) for piece in pieces])
    graphs = [*unchecked, *helds]
    batched = vectorize_graph(graphs, replace=states_as_constants(value_vars, point, states,
                                                                  graphs))
    terms = pt.concatenate([pt.broadcast_to(b, (rows, b.shape[-1])) if b.ndim == 2
                            else b.reshape((rows, -1)) for b in batched[:len(pieces)]],
                           axis=1)
    return terms, all_of(batched[len(pieces):])


def chain_marginal_log_density(model, value_vars, point: dict, exact: ExactRatios,
                               layout: ChainLayout) -> Variable:
    """The model's log density with a chain-structured block summed out by the forward
    algorithm (module docstring): a graph of the model's other value variables.

    A piece whose terms each touch one site (an emission likelihood) is evaluated at
    the K states that put every site at one value, the others at the 2 K^2 pair states:
    the emissions, usually most of the work, cost K evaluations a gradient, not 2 K^2.

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
        Its chain order (:func:`~pymc_discrete.pymc.steps.chain.chain_layout`).
    """
    unary, pair, held, rest = chain_tables_graph(model, value_vars, point, exact, layout)
    total = forward_log_normaliser(unary, pair)
    return pt.switch(held, rest + total, -np.inf)


def chain_tables_graph(model, value_vars, point: dict, exact: ExactRatios,
                       layout: ChainLayout) -> tuple[Variable, Variable, Variable, Variable]:
    """The chain's unary and pair tables as graphs of the model's other value variables
    (:func:`chain_marginal_log_density`), whether every parameter check held at the
    states they were evaluated at, and the rest of the log density.

    Returns
    -------
    unary : Variable
        (T, K), in chain order (-inf at values a site does not have).
    pair : Variable
        (T - 1, K, K).
    held : Variable
        Boolean scalar.
    rest : Variable
        Scalar: the terms that do not depend on the block.
    """
    pieces, rest = block_pieces(model, value_vars)
    n_values = (np.full(exact.n_sites, 2, np.int64) if exact.n_categories is None
                else exact.n_categories)
    k = int(n_values.max())
    # the terms table_terms reads as unary: each touches one site, at a position
    read_as_unary = np.zeros(layout.term_position.size, bool)
    for _, first, last in table_terms(layout):
        read_as_unary[first] = read_as_unary[last] = True
    sizes = piece_sizes(pieces, model, point)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    unary_piece = [bool(read_as_unary[lo:hi].all()) and hi > lo
                   for lo, hi in zip(bounds[:-1], bounds[1:])]
    ids = [np.arange(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
    pair_ids = np.concatenate([i for i, u in zip(ids, unary_piece) if not u] or
                              [np.zeros(0, np.int64)]).astype(np.int64)
    unary_ids = np.concatenate([i for i, u in zip(ids, unary_piece) if u] or
                               [np.zeros(0, np.int64)]).astype(np.int64)
    pair_rows = pair_states(np.zeros(exact.n_sites, np.int64), layout, n_values)
    unary_rows = unary_states(np.zeros(exact.n_sites, np.int64), n_values)
    if exact.offsets is not None:
        pair_rows = pair_rows + exact.offsets[None, :]
        unary_rows = unary_rows + exact.offsets[None, :]
    pair_terms, pair_held = _batched([p for p, u in zip(pieces, unary_piece) if not u],
                                     value_vars, point, pair_rows)
    unary_terms, unary_held = _batched([p for p, u in zip(pieces, unary_piece) if u],
                                       value_vars, point, unary_rows)
    unary, pair = _tables(pair_terms, pair_ids, unary_terms, unary_ids, layout, k, n_values)
    return unary, pair, pt.and_(pair_held, unary_held), rest
