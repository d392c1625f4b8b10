"""Checks of what a user hands to a step method, with errors that name the problem."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pytensor.graph.basic import Variable
from pytensor.tensor.random.basic import BernoulliRV, CategoricalRV

__all__ = [
    "block_value_vars",
    "check_bool",
    "check_choice",
    "check_discrete_block",
    "check_initial_point",
    "check_positive_int",
    "check_unit_interval",
]


def check_bool(name: str, value: object) -> bool:
    """Return ``value`` if it is a bool (or numpy bool), else raise a ValueError."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise a ValueError naming both."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"Unknown {name} {value!r}: choose one of {list(choices)}")
    return value


def check_positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int if it is a whole number >= 1, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def check_unit_interval(name: str, value: float) -> float:
    """Return ``value`` as a float if it lies strictly inside (0, 1), else raise ValueError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must lie strictly inside (0, 1), got {value!r}")
    return v


def block_value_vars(model, vars, step_name: str, competence: Callable) -> list[Variable]:
    """The value variables of the block a step samples.

    Parameters
    ----------
    model : pymc.Model
    vars : random variable, sequence of them, or None
        What the user passed; None takes every free variable of the model that the step
        supports (``competence(rv)`` above INCOMPATIBLE), as PyMC's own steps do.
    step_name : str
        Name of the step method, for messages.
    competence : callable
        The step's ``competence(var, has_grad)``.

    Raises
    ------
    ValueError
        If ``vars`` is None and the model has no supported free variable, or a variable
        belongs to another model or is not a free variable of this one.
    """
    from pymc.step_methods.compound import Competence
    from pymc.util import get_value_vars_from_user_vars

    if vars is None:
        supported = [
            rv for rv in model.free_RVs if competence(rv, False) > Competence.INCOMPATIBLE
        ]
        if not supported:
            raise ValueError(
                f"{step_name}() was given no variables and the model has no free Bernoulli "
                "or Categorical variable to sample"
            )
        return [model.rvs_to_values[rv] for rv in supported]
    user_vars = list(vars) if isinstance(vars, list | tuple) else [vars]
    known = set(model.free_RVs) | set(model.value_vars)
    for var in user_vars:
        if var in known:
            continue
        name = getattr(var, "name", None)
        if name is not None and name in model.named_vars:
            raise ValueError(
                f"{step_name}: the variable {name!r} belongs to another model than the one "
                "the step is built for (build the step inside that model's context, or "
                "pass model=...)"
            )
        if var in set(model.observed_RVs) or var in set(model.deterministics):
            raise ValueError(f"{step_name}: {name!r} is not a free random variable of the model")
        raise ValueError(
            f"{step_name}: {var!r} is not a variable of this model (build the step inside "
            "the model's context, or pass model=...)"
        )
    return get_value_vars_from_user_vars(user_vars, model)


def check_discrete_block(
    model, value_vars: Sequence[Variable], step_name: str, point: dict[str, np.ndarray]
) -> list[int]:
    """Raise a clear error unless every variable is Bernoulli or Categorical; return the
    number of values of each variable (2 for Bernoulli, K for Categorical).

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
    step_name : str
        Name of the step method, for the message.
    point : dict
        The initial point (K may depend on other variables' values).

    Raises
    ------
    TypeError
        For a continuous or unsupported variable.
    ValueError
        For a categorical variable with a single category.
    """
    counts = []
    for value in value_vars:
        rv = model.values_to_rvs[value]
        op = getattr(rv.owner, "op", None)
        if isinstance(op, BernoulliRV):
            counts.append(2)
            continue
        kind = type(op).__name__ if op is not None else "unknown"
        if not value.dtype.startswith(("int", "uint", "bool")):
            raise TypeError(
                f"{step_name} samples binary and categorical variables, but {rv.name!r} is "
                f"continuous ({kind}, dtype {value.dtype}); let pm.sample assign NUTS to it"
            )
        if not isinstance(op, CategoricalRV):
            raise TypeError(
                f"{step_name} samples Bernoulli and Categorical variables, but {rv.name!r} "
                f"is a {kind}"
            )
        (p,) = op.dist_params(rv.owner)
        (k,) = model.replace_rvs_by_values([p.shape[-1]])
        k = int(model.compile_fn(k, inputs=model.value_vars, on_unused_input="ignore")(point))
        if k < 2:
            raise ValueError(
                f"{rv.name!r} has {k} category: there is nothing to sample, make it a constant"
            )
        counts.append(k)
    return counts


def check_initial_point(
    model,
    point: dict[str, np.ndarray],
    value_vars: Sequence[Variable],
    counts: Sequence[int],
    strict: bool = True,
) -> float:
    """Raise ValueError if a value is outside ``0 .. K - 1`` or (with ``strict``) the
    model's logp is not finite.

    Parameters
    ----------
    model : pymc.Model
    point : dict
        The initial point.
    value_vars : sequence of Variable
        The block.
    counts : sequence of int
        Number of values of each variable.
    strict : bool
        Refuse a point of zero probability. Without it such a point returns NaN: a step
        built before ``pm.sample(initvals=...)`` chooses its start checks that start at
        its first draw instead.

    Returns
    -------
    float
        The model's log density at the point (the sum of its terms), or NaN.
    """
    for value, k in zip(value_vars, counts):
        values = np.asarray(point[value.name])
        bad_values = values[(values < 0) | (values >= k)]
        if bad_values.size:
            raise ValueError(
                f"initial point of {value.name!r} has values outside {{0, ..., {k - 1}}}: "
                f"{np.unique(bad_values)[:5]}"
            )
    point_logps = model.point_logps(point, round_vals=12)
    bad = [name for name, lp in point_logps.items() if not np.isfinite(lp)]
    if bad and not strict:
        return float("nan")
    if bad:
        raise ValueError(
            "the initial point has a log density of -inf or NaN (terms: "
            + ", ".join(f"{name}={point_logps[name]}" for name in bad)
            + "); choose initvals where the model has positive probability"
        )
    return float(sum(point_logps.values()))
