"""Gathers by the block's values, batched over states as one advanced index.

The exact-ratio machinery evaluates the block's terms at a batch of states with one
function (``vectorize_graph`` of the terms over a leading axis of states). Where a term
indexes a fixed array by the sites' values (``pt.eye(K)[z]`` in a one-hot phrasing,
``mu[z]`` in a mixture, ``log_p[z[:-1], z[1:]]`` in a hidden Markov chain),
PyTensor batches the index as a ``Blockwise`` loop that calls the core gather once per
state. The array is the same in every state, so the whole batch is one NumPy advanced
index: the indices, broadcast against each other with their batch axes in front, gather
from the array in one call. :func:`flatten_batched_gathers` rewrites the batched graph
so; the values are the same to the bit (a gather copies, it computes nothing).

The rewrite applies only where it is the same gather by NumPy's rules: every index is an
integer array (no boolean masks, no new axes, no slice but whole axes after the
indices), so the indices are consecutive
from the array's first axis and the result is their broadcast shape followed by the
array's remaining axes, which is the ``Blockwise`` output's shape.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.rewriting.basic import in2out, node_rewriter
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.subtensor import (
    AdvancedSubtensor,
    Subtensor,
    advanced_subtensor,
    indices_from_subtensor,
)
from pytensor.tensor.type import integer_dtypes

__all__ = ["flatten_batched_gathers"]


@node_rewriter([Blockwise])
def _flat_gather(fgraph, node):
    """``Blockwise(AdvancedSubtensor)`` of integer indices (the array batched or not), or
    ``Blockwise(Subtensor)`` of scalar integer indices, as one advanced index (None where
    the rewrite does not apply)."""
    op = node.op
    if isinstance(op.core_op, Subtensor):
        return _flat_scalar_gather(node)
    if not isinstance(op.core_op, AdvancedSubtensor):
        return None
    entries = op.core_op.idx_list
    n_indices = sum(isinstance(entry, int) for entry in entries)
    if not all(isinstance(entry, int) for entry in entries[:n_indices]) or any(
            entry != slice(None) for entry in entries[n_indices:]):
        # a slice before an index moves the gathered axes; a bounded slice after them
        # reads inputs of its own
        return None
    array, *indices = node.inputs
    core_ndims = [len(signature) for signature in op.inputs_sig]
    batch_ndim = op.batch_ndim(node)
    array_batch = array.type.ndim - core_ndims[0]
    if any(index.type.dtype not in integer_dtypes for index in indices):
        return None
    index_core = core_ndims[1:]
    widest = max(index_core, default=0)
    found = _array_and_leading(array, array_batch, batch_ndim, batch_ndim + widest)
    if found is None:
        return None
    array, leading = found
    aligned = []
    for index, core in zip(indices, index_core, strict=True):
        # batch axes first, padded on the left to the node's; then the core axes, padded
        # on the left to the widest index, as NumPy broadcasts the core indices
        index = pt.shape_padleft(index, batch_ndim - (index.type.ndim - core))
        index = pt.expand_dims(index, tuple(range(batch_ndim, batch_ndim + widest - core)))
        aligned.append(index)
    [old] = node.outputs
    new = advanced_subtensor(array, *leading, *aligned, *entries[n_indices:])
    if new.type != old.type:
        new = old.type.filter_variable(new, allow_convert=True)
    return [new]


def _array_and_leading(array: Variable, array_batch: int, batch_ndim: int,
                       ndim: int) -> tuple[Variable, list[Variable]] | None:
    """The gathered array without its batch axes where no state changes it, or with an
    ``arange`` index (shaped to broadcast against the other indices, of ``ndim`` axes)
    for every batch axis where it differs between states (a Categorical's ``p[value]``
    with ``p = P[z_prev]`` stacked); None where it is batched on some axes only."""
    if not array_batch:
        return array, []
    if all(array.type.broadcastable[:array_batch]):
        return array.squeeze(axis=tuple(range(array_batch))), []
    if array_batch != batch_ndim:
        return None
    return array, [pt.arange(array.shape[axis]).reshape(
        tuple(-1 if a == axis else 1 for a in range(ndim))) for axis in range(batch_ndim)]


def _flat_scalar_gather(node):
    """``Blockwise(Subtensor)`` whose entries are scalar integer indices (``mu[z]``,
    ``P[z_prev]`` vectorised over stacked sites), then slices the batch does not change
    (``mu[z, 1:3]``), as one advanced index, the array batched or not
    (:func:`_array_and_leading`). (PyTensor's numba code for a ``Blockwise`` of a slice
    does not compile.)"""
    op = node.op
    entries = op.core_op.idx_list
    n_ints = next((i for i, entry in enumerate(entries) if isinstance(entry, slice)),
                  len(entries))
    if not n_ints or any(not isinstance(entry, slice) for entry in entries[n_ints:]):
        return None  # a slice before an index moves the gathered axes
    array, *indices = node.inputs
    scalars, bounds = indices[:n_ints], indices[n_ints:]
    if any(index.type.dtype not in integer_dtypes for index in scalars) or any(
            not all(bound.type.broadcastable) for bound in bounds):
        return None  # a slice whose bounds differ along the batch
    batch_ndim = op.batch_ndim(node)
    found = _array_and_leading(array, array.type.ndim - len(op.inputs_sig[0]), batch_ndim,
                               batch_ndim)
    if found is None:
        return None
    array, leading = found
    aligned = [pt.shape_padleft(index, batch_ndim - index.type.ndim) for index in scalars]
    slices = indices_from_subtensor([*scalars, *[bound.squeeze() for bound in bounds]],
                                    entries)[n_ints:]
    [old] = node.outputs
    new = array[(*leading, *aligned, *slices)]
    if new.type != old.type:
        new = old.type.filter_variable(new, allow_convert=True)
    return [new]


def flatten_batched_gathers(outputs: Sequence[Variable]) -> list[Variable]:
    """``outputs`` with every batched gather of a fixed array (``Blockwise`` of an
    advanced index whose array no state changes) written as one advanced index.

    Parameters
    ----------
    outputs : sequence of Variable
        Graphs batched over a leading axis of states (from ``vectorize_graph``).

    Returns
    -------
    list of Variable
        The same graphs, rewritten where the rule of the module applies; the inputs are
        the same variables.
    """
    fgraph = FunctionGraph(outputs=list(outputs), clone=True, copy_inputs=False)
    in2out(_flat_gather, ignore_newtrees=True).rewrite(fgraph)
    return list(fgraph.outputs)
