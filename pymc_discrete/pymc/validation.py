"""Checks of what a user hands to a step method, with errors that name the problem."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pytensor.graph.basic import Variable
from pytensor.tensor.random.basic import BernoulliRV, CategoricalRV

__all__ = [
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
    model, point: dict[str, np.ndarray], value_vars: Sequence[Variable], counts: Sequence[int]
) -> float:
    """Raise ValueError if a value is outside ``0 .. K - 1`` or the model's logp is not finite.

    Parameters
    ----------
    model : pymc.Model
    point : dict
        The initial point.
    value_vars : sequence of Variable
        The block.
    counts : sequence of int
        Number of values of each variable.

    Returns
    -------
    float
        The model's log density at the point (the sum of its terms).
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
    if bad:
        raise ValueError(
            "the initial point has a log density of -inf or NaN (terms: "
            + ", ".join(f"{name}={point_logps[name]}" for name in bad)
            + "); choose initvals where the model has positive probability"
        )
    return float(sum(point_logps.values()))
