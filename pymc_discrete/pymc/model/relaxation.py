"""Continuous relaxation of a PyMC model's log density in its binary variables.

PyMC's Bernoulli logp is a ``switch`` on the value, and ``pytensor.grad`` with respect to
an integer value is silently zero. To get a useful gradient we rebuild the joint logp as
a function of float inputs:

* each sampled variable's own term becomes ``x log p + (1 - x) log1p(-p)``, multilinear
  in x and equal to the Bernoulli logp at x in {0, 1};
* a categorical variable becomes a one-hot float tensor X (an extra trailing axis of its
  K values) and its own term ``sum(X log p)``; in the rest of the graph a label is
  followed through indexing and dimshuffles, ``z_a == z_b`` becomes ``sum(X_a X_b)``,
  ``base[z]`` a contraction of X with ``base``, ``table[i, z]`` ``sum(X table[i])``, and
  any other use of a label its value ``sum(X * arange(K))``;
* every other term (likelihoods, priors of other variables, potentials) is rebuilt node
  by node with the float input in place of the integer value: integer casts are dropped,
  integer-accumulating sums and products are rebuilt in float, and any operation that
  cuts the gradient (a comparison, ``switch`` on the value, ``mod``, rounding, indexing
  with the value) raises :class:`RelaxationError` naming it;
* a ``switch`` whose condition does not depend on the relaxed values (PyMC's Bernoulli
  likelihood ``switch(y, log(q), log1p(-q))`` on observed y) evaluates each branch only
  where it is taken (:func:`_switch_on_data`): the untaken branch, e.g. ``log(z * p)`` at
  ``z = 0`` where ``y = 0``, would otherwise put ``0 * inf = nan`` into the gradient.

Values of probability zero stay finite in the gradient's bookkeeping: the own terms use
``xlogy`` (``0 log 0 = 0``), so a site whose other value is impossible (``p`` exactly 0
or 1, a category of probability zero) gets the local ratio ``-inf`` and is never
proposed.

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
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Prod, Sum
from pytensor.tensor.random.basic import BernoulliRV, CategoricalRV
from pytensor.tensor.shape import Shape, Shape_i
from pytensor.tensor.special import xlog1py, xlogy
from pytensor.tensor.subtensor import AdvancedSubtensor, Subtensor

from pymc_discrete.pymc.exceptions import RelaxationError

__all__ = ["relaxed_logp"]

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


def _one_hot_of(var: Variable, k: int) -> Variable:
    """One-hot float encoding of an integer tensor that is not a label (trailing axis K)."""
    return pt.cast(pt.eq(pt.shape_padright(var), pt.arange(k)), "float64")


def _label_value(one_hot: Variable, k: int) -> Variable:
    """The label's value as a float: ``sum(X * arange(K))`` (exact at one-hot points)."""
    return (one_hot * pt.arange(k, dtype="float64")).sum(axis=-1)


def _relax_label_node(node: Apply, new_inputs, labels: dict, memo: dict) -> bool:
    """Rebuild a node that consumes labels with a rule that keeps the relaxation
    multilinear; return False if no rule applies."""
    op = node.op
    out = node.outputs[0]
    label_at = [i for i, inp in enumerate(node.inputs) if inp in labels]
    if label_at == [0] and isinstance(op, Subtensor | AdvancedSubtensor):
        one_hot, k = labels[node.inputs[0]]
        labels[out] = (op.make_node(one_hot, *new_inputs[1:]).outputs[0], k)
        return True
    if label_at == [0] and isinstance(op, DimShuffle):
        one_hot, k = labels[node.inputs[0]]
        labels[out] = (one_hot.dimshuffle(*(list(op.new_order) + [op.input_ndim])), k)
        return True
    if (label_at == [0] and isinstance(op, Elemwise) and isinstance(op.scalar_op, ps.Cast)
            and _is_discrete(out)):
        labels[out] = labels[node.inputs[0]]
        return True
    if isinstance(op, Elemwise) and isinstance(op.scalar_op, ps.EQ | ps.NEQ):
        k = labels[node.inputs[label_at[0]]][1]
        encoded = [
            labels[inp][0] if inp in labels else _one_hot_of(new, k)
            for inp, new in zip(node.inputs, new_inputs)
        ]
        equal = (encoded[0] * encoded[1]).sum(axis=-1)
        memo[out] = equal if isinstance(op.scalar_op, ps.EQ) else 1.0 - equal
        return True
    if isinstance(op, AdvancedSubtensor) and 0 not in label_at:
        base = pt.cast(new_inputs[0], "float64")
        n_index = len(node.inputs) - 1
        idx = tuple(op.idx_list)
        full = all(e == slice(None) for e in idx[1:])
        if n_index == 1 and label_at == [1] and idx[0] == 0 and full:  # base[z] or base[z, :]
            one_hot, k = labels[node.inputs[1]]  # labels are < k: only base[:k] is reachable
            memo[out] = pt.tensordot(one_hot, base[:k], axes=[[one_hot.ndim - 1], [0]])
            return True
        if n_index == 2 and label_at == [2] and base.ndim == 2 and idx == (0, 1):  # table[i, z]
            one_hot, k = labels[node.inputs[2]]
            memo[out] = (one_hot * base[new_inputs[1]][..., :k]).sum(axis=-1)
            return True
    return False


def _switch_on_data(node: Apply, new_inputs: list[Variable], on_path: set) -> Variable:
    """``switch(c, a, b)``, with c independent of the relaxed values, rebuilt so that each
    branch's elementwise graph is evaluated only at the elements where it is taken.

    The values are those of the switch; the gradient differs where the untaken branch has
    an infinite derivative (``log(z p)`` at ``z = 0``): there the plain switch passes
    ``0 * inf = nan`` back to the relaxed value, while the subset evaluation passes nothing.
    """
    cond, left, right = new_inputs
    out = node.outputs[0]
    whole = node.clone_with_new_inputs(new_inputs, strict=False).outputs[0]
    shape = whole.shape
    taken = pt.broadcast_to(cond, shape).astype("bool")
    result = pt.zeros(shape, dtype=out.dtype)
    for mask, branch in ((taken, left), (~taken, right)):
        where = mask.nonzero()
        memo: dict[Variable, Variable] = {}

        def subset(var: Variable) -> Variable:
            if var in memo:
                return memo[var]
            owner = var.owner
            if owner is not None and isinstance(owner.op, Elemwise) and var in on_path:
                inputs = [subset(i) for i in owner.inputs]
                new = owner.op.make_node(*inputs).outputs[owner.outputs.index(var)]
            elif var.type.ndim == 0:
                new = var  # broadcasts as it is
            else:
                new = pt.broadcast_to(var, shape)[where]
            memo[var] = new
            return new

        result = pt.set_subtensor(result[where], pt.cast(subset(branch), out.dtype))
    return result


def relax_graph(
    outputs: Sequence[Variable],
    replacements: dict[Variable, Variable],
    labels: dict[Variable, tuple[Variable, int]] | None = None,
) -> list[Variable]:
    """Rebuild ``outputs`` with integer value variables replaced by float relaxations.

    Parameters
    ----------
    outputs : sequence of Variable
        Graphs to rebuild (their result must be float).
    replacements : dict
        Integer value variable -> float tensor of the same shape.
    labels : dict, optional
        Categorical value variable -> (one-hot float tensor with a trailing axis of K
        values, K).

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
    labels = dict(labels or {})
    # new variable -> name of the operation that made it a non-differentiable function
    # of the relaxed values
    cut: dict[Variable, str] = {}
    inputs = list(replacements) + list(labels)
    for node in io_toposort(inputs, list(outputs)):
        new_inputs = [memo.get(i, i) for i in node.inputs]
        if any(i in labels for i in node.inputs):
            if _relax_label_node(node, new_inputs, labels, memo):
                on_path.update(memo[o] for o in node.outputs if o in memo)
                continue
            for i, inp in enumerate(node.inputs):  # any other use: the label's value
                if inp in labels:
                    new_inputs[i] = _label_value(*labels[inp])
                    on_path.add(new_inputs[i])
        elif all(n is o for n, o in zip(new_inputs, node.inputs)):
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
        if (
            isinstance(node.op, Elemwise)
            and isinstance(node.op.scalar_op, ps.Switch)
            and not path_flags[0]
            and new_inputs[0] not in cut
            and any(path_flags[1:])
        ):
            new_outputs = [_switch_on_data(node, new_inputs, on_path)]
        else:
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
    result = [memo.get(o, _label_value(*labels[o]) if o in labels else o) for o in outputs]
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
        # xlogy: 0 log 0 = 0 at a value of probability zero, and the derivative in the
        # relaxed value stays log p - log1p(-p), -inf or +inf for p exactly 0 or 1: the
        # impossible flip gets the local ratio -inf (weight zero), never a NaN
        # (broadcast first: the gradient of xlogy with respect to a broadcast argument,
        # e.g. p depending on another relaxed site, does not sum over the broadcast axes)
        x, p = pt.broadcast_arrays(relaxed_value, p)
        return xlogy(x, p) + xlog1py(1.0 - x, -p)
    if isinstance(op, CategoricalRV):
        (p,) = op.dist_params(rv.owner)
        (p,) = model.replace_rvs_by_values([p])
        return xlogy(*pt.broadcast_arrays(relaxed_value, pt.cast(p, "float64")))
    raise RelaxationError(f"no relaxation of the own term of {rv.name!r} ({type(op).__name__})")


def relaxed_logp(
    model,
    value_vars: Sequence[Variable],
    shapes: Sequence[tuple[int, ...]],
    flat_input: Variable,
    n_values: Sequence[int | None] | None = None,
) -> Variable:
    """The model's joint log density with ``value_vars`` relaxed to slices of ``flat_input``.

    Parameters
    ----------
    model : pymc.Model
        The model.
    value_vars : sequence of Variable
        Value variables of the Bernoulli and Categorical variables to relax.
    flat_input : Variable
        Float64 vector holding all relaxed values, raveled and concatenated in the order of
        ``value_vars``.
    shapes : sequence of tuple of int
        Shape of each value variable (from the initial point).
    n_values : sequence of int or None, optional
        For each variable, None for a Bernoulli (one float per site) or K for a
        Categorical (K one-hot floats per site, in ``flat_input`` as ``(*shape, K)``).

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
    labels: dict[Variable, tuple[Variable, int]] = {}
    own_inputs = []
    start = 0
    for value, shape, k in zip(value_vars, shapes, n_values or [None] * len(value_vars)):
        shape = tuple(int(s) for s in shape)
        size = int(np.prod(shape, dtype=int))
        if k is None:
            relaxed = flat_input[start : start + size].reshape(shape)
            replacements[value] = relaxed
        else:  # a categorical variable: one-hot with a trailing axis of its k values
            relaxed = flat_input[start : start + size * k].reshape((*shape, k))
            labels[value] = (relaxed, k)
            size *= k
        own_inputs.append(relaxed)
        start += size

    block_rvs = [model.values_to_rvs[v] for v in value_vars]
    terms = [_own_relaxed_term(rv, x, model).sum() for rv, x in zip(block_rvs, own_inputs)]
    in_block = set(block_rvs)
    others = [rv for rv in model.free_RVs if rv not in in_block]
    others += list(model.observed_RVs) + list(model.potentials)
    if others:
        terms += [pt.as_tensor(t).sum() for t in model.logp(vars=others, sum=False)]
    total = pt.add(*terms) if len(terms) > 1 else terms[0]
    (relaxed,) = relax_graph([pt.cast(total, "float64")], replacements, labels)
    return relaxed
