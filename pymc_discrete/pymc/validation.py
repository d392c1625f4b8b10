"""Checks of what a user hands to a step method, with errors that name the problem."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pytensor.graph.basic import Variable
from pytensor.tensor.random.basic import BernoulliRV, CategoricalRV

__all__ = ["check_binary_block", "check_initial_point", "check_choice", "check_unit_interval"]


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise a ValueError naming both."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"Unknown {name} {value!r}: choose one of {list(choices)}")
    return value


def check_unit_interval(name: str, value: float) -> float:
    """Return ``value`` as a float if it lies strictly inside (0, 1), else raise ValueError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must lie strictly inside (0, 1), got {value!r}")
    return v


def check_binary_block(model, value_vars: Sequence[Variable], step_name: str) -> None:
    """Raise a clear error unless every value variable belongs to a Bernoulli variable.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
    step_name : str
        Name of the step method, for the message.

    Raises
    ------
    TypeError
        For a continuous, categorical or other unsupported variable.
    """
    for value in value_vars:
        rv = model.values_to_rvs[value]
        op = getattr(rv.owner, "op", None)
        if isinstance(op, BernoulliRV):
            continue
        kind = type(op).__name__ if op is not None else "unknown"
        if not value.dtype.startswith(("int", "uint", "bool")):
            raise TypeError(
                f"{step_name} samples binary variables, but {rv.name!r} is continuous "
                f"({kind}, dtype {value.dtype}); let pm.sample assign NUTS to it"
            )
        if isinstance(op, CategoricalRV):
            raise TypeError(
                f"{step_name} does not support categorical variables yet: {rv.name!r} "
                "is Categorical; use pm.CategoricalGibbsMetropolis for it"
            )
        raise TypeError(
            f"{step_name} samples Bernoulli variables, but {rv.name!r} is a {kind}"
        )


def check_initial_point(
    model, point: dict[str, np.ndarray], value_vars: Sequence[Variable]
) -> float:
    """Raise ValueError if the block's values are not 0/1 or the model's logp is not finite.

    Parameters
    ----------
    model : pymc.Model
    point : dict
        The initial point.
    value_vars : sequence of Variable
        The block.

    Returns
    -------
    float
        The model's log density at the point (the sum of its terms).
    """
    for value in value_vars:
        values = np.asarray(point[value.name])
        if not np.isin(values, (0, 1)).all():
            raise ValueError(
                f"initial point of {value.name!r} has values outside {{0, 1}}: "
                f"{np.unique(values[~np.isin(values, (0, 1))])[:5]}"
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
