"""A small graph evaluated as PyTensor's Python linker evaluates it, without compiling.

Compiling a graph builds a function graph, clones it and its storage, and applies
rewrites: for a graph evaluated once (a model's initial point) that is most of its cost.
:func:`graph_evaluator` calls each node's Python implementation in order, the thunks the
Python linker would build, where nothing in the graph is something compiling changes
(:func:`changed_by_compiling`).
"""

from __future__ import annotations

from collections.abc import Callable

from pymc.logprob.utils import CheckParameterValue
from pytensor.graph.basic import Constant
from pytensor.graph.op import HasInnerGraph
from pytensor.graph.traversal import graph_inputs, io_toposort
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.random.op import RandomVariable

__all__ = ["changed_by_compiling", "graph_evaluator"]


def changed_by_compiling(node) -> bool:
    """Whether compiling ``node`` without rewrites computes something other than its
    ``perform``: PyMC's ``compile`` makes random variables draw in place (two draws from
    one generator then differ) and turns parameter checks into switches; the Python
    linker rewrites inner graphs (Scan, OpFromGraph, scalar loops) and lowers xtensor
    operations; an operation that destroys an input needs the function's copies; a lazy
    operation needs its virtual machine."""
    op = node.op
    scalar_op = op.scalar_op if isinstance(op, Elemwise) else None
    return (isinstance(op, RandomVariable | CheckParameterValue | HasInnerGraph)
            or isinstance(scalar_op, HasInnerGraph)
            or bool(getattr(op, "destroy_map", None))
            or type(op).__module__.startswith("pytensor.xtensor"))


def graph_evaluator(outputs, inputs=()) -> Callable[..., list] | None:
    """``(*values of inputs) -> [value of each output]``, computed by calling each node's
    Python implementation in order, as the Python linker's thunks compute it; None where
    the graph holds something a compilation would change (:func:`changed_by_compiling`)
    or reads a variable that is neither one of ``inputs`` nor a constant.

    The outputs are copies, as a compiled function's are: a constant's value is never
    handed out to be changed. The inputs' values are NumPy arrays of their types.
    """
    given = list(inputs)
    given_set = set(given)
    roots = [var for var in graph_inputs(outputs, blockers=given) if var not in given_set]
    if not all(isinstance(var, Constant) for var in roots):
        return None
    order = io_toposort(given + roots, outputs)
    if any(changed_by_compiling(node) for node in order):
        return None
    storage = {var: [var.data] for var in roots}
    storage.update((var, [None]) for var in given)
    for node in order:
        storage.update((var, [None]) for var in node.outputs)
    computed = {var: [var.owner is None or var in given_set] for var in storage}
    thunks = [node.op.make_thunk(node, storage, computed, [], "py") for node in order]
    if any(getattr(thunk, "lazy", False) for thunk in thunks):
        return None
    given_cells = [storage[var] for var in given]
    cells = [storage[var] for var in outputs]

    def evaluate(*values) -> list:
        for cell, value in zip(given_cells, values, strict=True):
            cell[0] = value
        for thunk in thunks:
            thunk()
        return [cell[0].copy() for cell in cells]

    return evaluate
