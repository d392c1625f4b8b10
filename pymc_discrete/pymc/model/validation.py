"""Checks of what a user hands to a step method, with errors that name the problem."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from pymc.distributions.discrete import DiscreteUniformRV
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import (
    BernoulliRV,
    BetaBinomialRV,
    BinomialRV,
    CategoricalRV,
    MultinomialRV,
)
from pytensor.tensor.random.op import RandomVariable

#: integer variables whose support is a fixed finite range
FINITE_INTEGER_OPS = (DiscreteUniformRV, BinomialRV, BetaBinomialRV)
#: every variable a step of this package samples
SUPPORTED_OPS = (BernoulliRV, CategoricalRV, *FINITE_INTEGER_OPS)

__all__ = [
    "BlockSupport",
    "FINITE_INTEGER_OPS",
    "MAX_VALUES",
    "SUPPORTED_OPS",
    "block_value_vars",
    "site_support_problem",
    "check_auto_or_bool",
    "check_auto_or_positive_int",
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


def check_auto_or_positive_int(name: str, value: object) -> int | str:
    """Return ``"auto"``, or ``value`` as an int if it is a whole number >= 1, else raise."""
    if value == "auto" and isinstance(value, str):
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be 'auto' or a whole number >= 1, got {value!r}")
    return int(value)


def check_auto_or_bool(name: str, value: object) -> bool | str:
    """Return ``"auto"``, or ``value`` if it is a bool (or numpy bool), else raise."""
    if value == "auto" and isinstance(value, str):
        return "auto"
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be 'auto', True or False, got {value!r}")
    return bool(value)


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
    # every variable is the model's (checked above): looked up by hash, where PyMC's
    # get_value_vars_from_user_vars searches the model's list of value variables for
    # each one (0.05 s at 900 scalar variables)
    return [model.rvs_to_values.get(var, var) for var in user_vars]


#: most values a site may have (a batched evaluation per value and colour)
MAX_VALUES = 4096


#: random variable -> why it cannot be sampled as finite discrete sites ("" when it can):
#: PyMC asks every step class's competence for every variable, so the answer is kept
_SUPPORT_PROBLEMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _fixed_value(param: Variable) -> np.ndarray | None:
    """The value of a distribution parameter that no random variable feeds (data and
    constants only), or None when one does: the set of values it bounds would change
    from draw to draw."""
    if isinstance(param, Constant):
        return np.asarray(param.data)
    if any(
        a.owner is not None and isinstance(a.owner.op, RandomVariable) for a in ancestors([param])
    ):
        return None
    return np.asarray(param.eval(mode="FAST_COMPILE"))


def _support_problem(rv: Variable) -> str:
    op = getattr(rv.owner, "op", None)
    kind = type(op).__name__.removesuffix("RV") if op is not None else "unknown"
    if isinstance(op, BernoulliRV):
        return ""
    if isinstance(op, MultinomialRV):
        return (
            "a Multinomial's elements are tied by their sum (n), which moves of single "
            "sites cannot keep: write it as n Categorical draws (then sample those), or "
            "leave it to PyMC's Metropolis"
        )
    if not str(rv.dtype).startswith(("int", "uint", "bool")):
        return f"it is continuous ({kind}, dtype {rv.dtype})"
    params = op.dist_params(rv.owner)
    if isinstance(op, CategoricalRV):
        k = params[0].type.shape[-1]
        n_values = None if k is None else np.array([k])
    elif isinstance(op, DiscreteUniformRV):
        lower, upper = (_fixed_value(p) for p in params[:2])
        if lower is None or upper is None:
            return ("a bound of this DiscreteUniform depends on a free variable, so its set "
                    "of values is not fixed")
        n_values = np.asarray(upper - lower + 1)
    elif isinstance(op, BinomialRV | BetaBinomialRV):
        n = _fixed_value(params[0])
        if n is None:
            return (f"the number of trials n of this {kind} depends on a free variable, so "
                    "its set of values is not fixed")
        n_values = np.asarray(n + 1)
    else:
        return f"a {kind} has an infinite set of values"
    if n_values is None or n_values.size == 0:
        return ""
    if int(n_values.max()) > MAX_VALUES:
        return (f"its sites have up to {int(n_values.max())} values, more than the "
                f"{MAX_VALUES} a step evaluates one by one")
    if int(n_values.min()) < 2:
        return "some of its sites have a single value: there is nothing to sample"
    return ""


def site_support_problem(rv: Variable) -> str | None:
    """Why the package's steps cannot sample ``rv`` as finite discrete sites, or None
    when they can.

    The steps sample Bernoulli and Categorical variables and the integer variables whose
    values are a fixed range (DiscreteUniform with bounds, Binomial and BetaBinomial
    with a number of trials, that no random variable feeds), of at most
    :data:`MAX_VALUES` values a site. The competence of every step asks this, so that
    ``pm.sample()`` leaves to PyMC's own steps what the package would refuse.

    Parameters
    ----------
    rv : Variable
        A random variable of a model.

    Returns
    -------
    str or None
        One sentence (for logs and errors), or None.

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model():
    ...     x = pm.Binomial("x", n=10, p=0.5)
    ...     y = pm.Binomial("y", n=10_000, p=0.5)
    ...     c = pm.Poisson("c", 3.0)
    >>> site_support_problem(x) is None
    True
    >>> site_support_problem(y)
    'its sites have up to 10001 values, more than the 4096 a step evaluates one by one'
    >>> site_support_problem(c)
    'a Poisson has an infinite set of values'
    """
    try:
        problem = _SUPPORT_PROBLEMS.get(rv)
    except TypeError:  # not weak-referenceable: not a model's variable
        problem = None
    if problem is None:
        try:
            problem = _support_problem(rv)
        except Exception as err:  # a parameter that cannot be evaluated alone
            problem = f"its set of values could not be read ({type(err).__name__}: {err})"
        try:
            _SUPPORT_PROBLEMS[rv] = problem
        except TypeError:
            pass
    return problem or None


class BlockSupport(NamedTuple):
    """The values every site of a block can take: ``offset + 0 .. offset + K - 1``.

    Attributes
    ----------
    counts : list of int
        Largest K of each variable (2 for Bernoulli, K for Categorical).
    offsets : ndarray of int64, shape (N,)
        Smallest value of every site, raveled in block order (0 but for DiscreteUniform).
    n_values : ndarray of int64, shape (N,)
        K of every site.
    categorical : list of bool
        Whether each variable is Categorical.
    finite_integer : bool
        Whether some variable is neither Bernoulli nor Categorical (DiscreteUniform,
        Binomial, BetaBinomial): such a block has no continuous relaxation.
    """

    counts: list
    offsets: np.ndarray
    n_values: np.ndarray
    categorical: list
    finite_integer: bool

    @property
    def is_binary(self) -> bool:
        """Whether every variable is Bernoulli (the kernels' binary fast path)."""
        return not any(self.categorical) and not self.finite_integer


def _constant_parameter(model, rv, param, what: str, point) -> np.ndarray:
    """The value of a distribution parameter that must not depend on a free variable."""
    from pytensor.graph.traversal import variable_depends_on

    (expr,) = model.replace_rvs_by_values([param])
    if variable_depends_on(expr, list(model.value_vars)):
        raise TypeError(
            f"the {what} of {rv.name!r} depends on a free variable: its set of values must "
            "be fixed to sample it as a finite discrete variable"
        )
    fn = model.compile_fn(expr, inputs=model.value_vars, on_unused_input="ignore")
    return np.asarray(fn(point))


def _categories(model, rv, point) -> int:
    """The number of categories of a Categorical variable: its probabilities' static
    shape where PyTensor knows it (no compilation: a model written one variable per
    site has thousands of them), else evaluated at ``point``."""
    (p,) = rv.owner.op.dist_params(rv.owner)
    static = p.type.shape[-1]
    if static is not None:
        return int(static)
    (k,) = model.replace_rvs_by_values([p.shape[-1]])
    return int(model.compile_fn(k, inputs=model.value_vars, on_unused_input="ignore")(point))


def _finite_support(model, rv, point) -> tuple[np.ndarray, np.ndarray]:
    """(lowest value, number of values) of every element of a finite integer variable."""
    op = rv.owner.op
    shape = np.shape(point[model.rvs_to_values[rv].name])
    params = op.dist_params(rv.owner)
    if isinstance(op, DiscreteUniformRV):
        lower = _constant_parameter(model, rv, params[0], "lower bound", point)
        upper = _constant_parameter(model, rv, params[1], "upper bound", point)
        return (np.broadcast_to(lower, shape).astype(np.int64),
                np.broadcast_to(upper - lower + 1, shape).astype(np.int64))
    n = _constant_parameter(model, rv, params[0], "number of trials n", point)
    return np.zeros(shape, np.int64), np.broadcast_to(n + 1, shape).astype(np.int64)


def check_discrete_block(
    model, value_vars: Sequence[Variable], step_name: str, point: dict[str, np.ndarray]
) -> BlockSupport:
    """Raise a clear error unless every variable has a small finite support; return the
    values every site can take.

    Supported: Bernoulli, Categorical, and the integer variables whose support is a
    fixed finite range (DiscreteUniform, Binomial and BetaBinomial with constant bounds
    and n), as sites with an offset and K values.

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
        For a continuous variable, an integer variable of infinite (or not fixed)
        support.
    ValueError
        For a variable with a single value, or with more than :data:`MAX_VALUES`.
    """
    counts, offsets, n_values, categorical = [], [], [], []
    finite_integer = False
    for value in value_vars:
        rv = model.values_to_rvs[value]
        op = getattr(rv.owner, "op", None)
        size = int(np.size(point[value.name]))
        kind = type(op).__name__ if op is not None else "unknown"
        categorical.append(isinstance(op, CategoricalRV))
        if isinstance(op, BernoulliRV):
            counts.append(2)
            offsets.append(np.zeros(size, np.int64))
            n_values.append(np.full(size, 2, np.int64))
            continue
        if not value.dtype.startswith(("int", "uint", "bool")):
            raise TypeError(
                f"{step_name} samples binary and categorical variables, but {rv.name!r} is "
                f"continuous ({kind}, dtype {value.dtype}); let pm.sample assign NUTS to it"
            )
        if isinstance(op, CategoricalRV):
            k = _categories(model, rv, point)
            lower, ks = np.zeros(size, np.int64), np.full(size, k, np.int64)
        elif isinstance(op, FINITE_INTEGER_OPS):
            lower, ks = (a.ravel() for a in _finite_support(model, rv, point))
            finite_integer = True
        else:
            raise TypeError(
                f"{step_name} samples variables with a finite set of values (Bernoulli, "
                f"Categorical, DiscreteUniform, Binomial, BetaBinomial), but {rv.name!r} is "
                f"not one: {site_support_problem(rv)}. Sum it out, or sample it with "
                "pm.Metropolis"
            )
        k = int(ks.max()) if ks.size else 2
        if ks.size and int(ks.min()) < 2:
            raise ValueError(
                f"{rv.name!r} has sites with a single value: there is nothing to sample, "
                "make it a constant"
            )
        if k > MAX_VALUES:
            raise ValueError(
                f"{rv.name!r} has sites with {k} values, more than the {MAX_VALUES} a step "
                "evaluates one by one; sum it out or sample it with pm.Metropolis"
            )
        counts.append(k)
        offsets.append(lower)
        n_values.append(ks)
    return BlockSupport(
        counts,
        np.concatenate(offsets) if offsets else np.zeros(0, np.int64),
        np.concatenate(n_values) if n_values else np.zeros(0, np.int64),
        categorical,
        finite_integer,
    )


def check_initial_point(
    model,
    point: dict[str, np.ndarray],
    value_vars: Sequence[Variable],
    support: BlockSupport,
    strict: bool = True,
    evaluate: bool = True,
) -> float:
    """Raise ValueError if a value is outside its site's range or (with ``strict``) the
    model's logp is not finite.

    Parameters
    ----------
    model : pymc.Model
    point : dict
        The initial point.
    value_vars : sequence of Variable
        The block.
    support : BlockSupport
        The values of every site (:func:`check_discrete_block`).
    strict : bool
        Refuse a point of zero probability. Without it such a point returns NaN: a step
        built before ``pm.sample(initvals=...)`` chooses its start checks that start at
        its first draw instead.
    evaluate : bool
        Evaluate the model's log density (a compilation of every term: tenths of a
        second); without it only the ranges are checked and NaN is returned.

    Returns
    -------
    float
        The model's log density at the point (the sum of its terms), or NaN.
    """
    start = 0
    for value in value_vars:
        values = np.ravel(point[value.name])
        lower = support.offsets[start : start + values.size]
        upper = lower + support.n_values[start : start + values.size] - 1
        start += values.size
        bad = (values < lower) | (values > upper)
        if bad.any():
            raise ValueError(
                f"initial point of {value.name!r} has values outside their range "
                f"{{{lower[bad][0]}, ..., {upper[bad][0]}}}: {np.unique(values[bad])[:5]}"
            )
    if not evaluate:
        return float("nan")
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
