"""Continuous relaxation of a PyMC model's log density in its binary variables.

PyMC's Bernoulli logp is a ``switch`` on the value, and ``pytensor.grad`` with respect to
an integer value is silently zero. To get a useful gradient we rebuild the joint logp as
a function of float inputs:

* each sampled variable's own term becomes ``x log p + (1 - x) log1p(-p)``, multilinear
  in x and equal to the Bernoulli logp at x in {0, 1};
* every other term (likelihoods, priors of other variables, potentials) is rebuilt node
  by node with the float input in place of the integer value: integer casts are dropped,
  integer-accumulating sums and products are rebuilt in float, and any operation that
  cuts the gradient (a comparison, ``switch`` on the value, ``mod``, rounding, indexing
  with the value) raises :class:`RelaxationError` naming it.

At integer points the relaxed logp equals the exact logp (checked by the step at
construction), so one compiled logp+gradient call per draw serves both the proposal and
the Metropolis-Hastings test.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply, Variable
from pytensor.graph.traversal import io_toposort
from pytensor.raise_op import CheckAndRaise
from pytensor.scalar import basic as ps
from pytensor.tensor.elemwise import CAReduce, Elemwise
from pytensor.tensor.math import Prod, Sum
from pytensor.tensor.random.basic import BernoulliRV
from pytensor.tensor.shape import Shape, Shape_i

__all__ = ["RelaxationError", "relaxed_logp"]

# Scalar ops whose output does not vary smoothly with a relaxed value: their gradient
# with respect to it is zero or undefined, so a relaxation through them is useless.
_GRADIENT_CUTTING_SCALAR_OPS = (
    ps.Floor,
    ps.Ceil,
    ps.Trunc,
    ps.RoundHalfToEven,
    ps.RoundHalfAwayFromZero,
    ps.Sign,
    ps.Mod,
    ps.IntDiv,
)


class RelaxationError(ValueError):
    """The model's log density cannot be relaxed to a differentiable function of its
    discrete values (the message names the operation)."""


def _op_name(node: Apply) -> str:
    op = node.op
    if isinstance(op, Elemwise):
        return type(op.scalar_op).__name__.lower()
    return type(op).__name__


def _is_discrete(var: Variable) -> bool:
    return getattr(var.type, "dtype", "float64") not in ("float64", "float32", "float16")


def _guard_inputs(node: Apply) -> set[int]:
    """Input positions that only guard the value (parameter checks), never feed it."""
    if isinstance(node.op, CheckAndRaise):
        return set(range(1, len(node.inputs)))
    return set()


def _rebuild_node(node: Apply, new_inputs: list[Variable], on_path: list[bool]) -> list[Variable]:
    """Rebuild ``node`` on relaxed inputs, special-casing integer casts and reductions."""
    op = node.op
    if isinstance(op, Elemwise) and isinstance(op.scalar_op, ps.Cast) and on_path[0]:
        if op.scalar_op.o_type.dtype not in ("float64", "float32"):
            # an integer cast of an integer-valued quantity: the identity at integer points
            return [new_inputs[0]]
        return [pt.cast(new_inputs[0], "float64")]
    if isinstance(op, Sum | Prod) and on_path[0] and _is_discrete(node.outputs[0]):
        reduce = pt.sum if isinstance(op, Sum) else pt.prod
        return [reduce(new_inputs[0], axis=op.axis)]
    try:
        return node.clone_with_new_inputs(new_inputs, strict=False).outputs
    except Exception as exc:  # the op refuses a float where it had an integer
        raise RelaxationError(
            f"operation {_op_name(node)!r} cannot take the relaxed (float) value of a "
            f"discrete variable ({type(exc).__name__}: {exc}); "
            "such a model has no continuous relaxation"
        ) from exc


def relax_graph(
    outputs: Sequence[Variable], replacements: dict[Variable, Variable]
) -> list[Variable]:
    """Rebuild ``outputs`` with integer value variables replaced by float relaxations.

    Parameters
    ----------
    outputs : sequence of Variable
        Graphs to rebuild (their result must be float).
    replacements : dict
        Integer value variable -> float tensor of the same shape.

    Returns
    -------
    list of Variable
        The rebuilt outputs.

    Raises
    ------
    RelaxationError
        If an operation on the way from a replaced variable to an output cuts the
        gradient, or cannot take a float input.
    """
    memo: dict[Variable, Variable] = dict(replacements)
    on_path: set[Variable] = set(replacements.values())
    # new variable -> name of the operation that made it a non-differentiable function
    # of the relaxed values
    cut: dict[Variable, str] = {}
    inputs = [v for v in replacements]
    for node in io_toposort(inputs, list(outputs)):
        new_inputs = [memo.get(i, i) for i in node.inputs]
        if all(n is o for n, o in zip(new_inputs, node.inputs)):
            continue
        guards = _guard_inputs(node)
        path_flags = [i not in guards and ni in on_path for i, ni in enumerate(new_inputs)]
        for i, ni in enumerate(new_inputs):
            if i not in guards and ni in cut and not all(_is_discrete(o) for o in node.outputs):
                raise RelaxationError(
                    f"operation {cut[ni]!r} makes the log density a non-differentiable "
                    "function of a discrete variable, so it has no continuous relaxation "
                    "(its gradient would be zero); use proposal='exact' or ARWM"
                )
        new_outputs = _rebuild_node(node, new_inputs, path_flags)
        for old, new in zip(node.outputs, new_outputs):
            memo[old] = new
        if isinstance(node.op, Shape | Shape_i):
            continue  # shapes do not depend on values
        inherited = [cut[ni] for i, ni in enumerate(new_inputs) if i not in guards and ni in cut]
        if not any(path_flags) and not inherited:
            continue
        reason = None
        if inherited:
            reason = inherited[0]
        elif isinstance(node.op, Elemwise) and (
            isinstance(node.op.scalar_op, _GRADIENT_CUTTING_SCALAR_OPS)
            or (isinstance(node.op.scalar_op, ps.Switch) and path_flags[0])
        ):
            reason = _op_name(node)
        for new in new_outputs:
            if reason is not None or _is_discrete(new):
                cut[new] = reason or _op_name(node)
            else:
                on_path.add(new)
    result = [memo.get(o, o) for o in outputs]
    for out in result:
        if out in cut:
            raise RelaxationError(
                f"operation {cut[out]!r} makes the log density a non-differentiable "
                "function of a discrete variable, so it has no continuous relaxation"
            )
    return result


def _own_relaxed_term(rv: Variable, relaxed_value: Variable, model) -> Variable:
    """The variable's own log-probability term, written multilinear in its relaxed value."""
    op = rv.owner.op
    if isinstance(op, BernoulliRV):
        (p,) = op.dist_params(rv.owner)
        (p,) = model.replace_rvs_by_values([p])
        # PyTensor stores a constant like 0.5 as float32; compute in float64
        p = pt.cast(p, "float64")
        return relaxed_value * pt.log(p) + (1.0 - relaxed_value) * pt.log1p(-p)
    raise RelaxationError(f"no relaxation of the own term of {rv.name!r} ({type(op).__name__})")


def relaxed_logp(
    model,
    value_vars: Sequence[Variable],
    shapes: Sequence[tuple[int, ...]],
    flat_input: Variable,
) -> Variable:
    """The model's joint log density with ``value_vars`` relaxed to slices of ``flat_input``.

    Parameters
    ----------
    model : pymc.Model
        The model.
    value_vars : sequence of Variable
        Value variables of the binary variables to relax (their random variables must be
        Bernoulli).
    flat_input : Variable
        Float64 vector holding all relaxed values, raveled and concatenated in the order of
        ``value_vars``.
    shapes : sequence of tuple of int
        Shape of each value variable (from the initial point).

    Returns
    -------
    Variable
        Scalar float64 graph of the joint log density (every term of the model, with
        Jacobians of transformed variables, as ``model.logp()``); the other value variables
        remain free inputs.

    Raises
    ------
    RelaxationError
        If some term cannot be relaxed.
    """
    replacements: dict[Variable, Variable] = {}
    start = 0
    for value, shape in zip(value_vars, shapes):
        shape = tuple(int(s) for s in shape)
        size = int(np.prod(shape, dtype=int))
        replacements[value] = flat_input[start : start + size].reshape(shape)
        start += size

    block_rvs = [model.values_to_rvs[v] for v in value_vars]
    terms = [
        _own_relaxed_term(rv, replacements[v], model).sum() for rv, v in zip(block_rvs, value_vars)
    ]
    others = [rv for rv in model.free_RVs if rv not in block_rvs]
    others += list(model.observed_RVs) + list(model.potentials)
    if others:
        terms += [pt.as_tensor(t).sum() for t in model.logp(vars=others, sum=False)]
    total = pt.add(*terms) if len(terms) > 1 else terms[0]
    (relaxed,) = relax_graph([pt.cast(total, "float64")], replacements)
    return relaxed
