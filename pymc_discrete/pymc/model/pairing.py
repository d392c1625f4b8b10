"""Which continuous coefficients a 0/1 indicator switches, read off a PyMC model.

:class:`~pymc_discrete.pymc.steps.paired.PairedFlip` flips an indicator together with the
coefficients it switches on and off (``g * beta``) or scales (``beta * (tau0 + g * (tau1 -
tau0))``). The pairing is read here, from the log density's gradient at a few probe
points: :func:`switched_coefficients` and :func:`scaled_coefficients` find the partner and
check that the density is concave in it, :func:`spike_to_slab` measures how far apart
the spike and the slab are. The recommendation policy reads the same functions.

Imports: :mod:`pymc_discrete.pymc.model.validation` only.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import jacobian
from pytensor.graph.basic import Variable

from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.model.validation import check_discrete_block

__all__ = ["PROBE_POINTS", "binary_indicator", "scaled_coefficients", "spike_to_slab",
           "switched_coefficients"]

PROBE_POINTS = 4



def binary_indicator(model, value: Variable, initial_point: dict, step_name: str) -> int:
    """The number of sites of ``value``, after checking that each takes the values 0 and 1."""
    support = check_discrete_block(model, [value], step_name, initial_point)
    if not (support.is_binary and np.all(support.offsets == 0)):
        raise ValueError(f"{step_name} needs one binary variable with values 0 and 1 (e.g. a "
                         f"Bernoulli); {value.name} is not one")
    return int(support.n_values.size)


def _same_size_candidates(model, indicator, initial_point: dict):
    """``(g, n, candidates)``: the indicator's value variable, its number of sites and
    the continuous value variables with as many elements (the possible partners)."""
    g = model.rvs_to_values.get(indicator, indicator)
    n = binary_indicator(model, g, initial_point, "PairedFlip")
    candidates = [v for v in model.continuous_value_vars
                  if np.size(initial_point[v.name]) == n]
    return g, n, candidates


def _probe_point(model, g, initial_point: dict, pattern: np.ndarray,
                 rng: np.random.Generator) -> dict:
    """``initial_point`` with every continuous variable perturbed by standard normal
    noise and the indicator ``g`` at ``pattern``."""
    point = {name: np.array(value, copy=True) for name, value in initial_point.items()}
    for v in model.continuous_value_vars:
        value = initial_point[v.name]
        point[v.name] = (value + rng.normal(0.0, 1.0, np.shape(value))).astype(value.dtype)
    point[g.name] = pattern.reshape(np.shape(initial_point[g.name])).astype(g.dtype)
    return point


def _concave(model, beta, points: list[dict]) -> bool:
    """Whether the log density is strictly concave in ``beta`` at every point (its
    negative Hessian in ``beta`` positive definite, by a Cholesky factorisation).

    PairedFlip's proposal is a Gaussian fitted by Newton ascent to ``beta``'s conditional
    mode, the negative Hessian there its precision: the Laplace approximation, a proposal
    the flips accept where the conditional is log-concave (a linear, logistic or Poisson
    regression with a Gaussian prior). Where the Hessian is singular or indefinite (a
    Laplace prior, flat while the site is off; a likelihood with heavy tails) the ascent
    stops short and the fit falls back to unit precision, which the flips practically
    never accept: the indicators would not move."""
    n = int(np.size(points[0][beta.name]))
    gradient = pt.grad(model.logp(), beta).ravel()
    hessian = jacobian(gradient, beta, vectorize=True).reshape((n, n))
    fn = compile_function(model.value_vars, hessian, on_unused_input="ignore")
    for point in points:
        h = np.asarray(fn(**{v.name: point[v.name] for v in model.value_vars}), dtype=float)
        if not np.all(np.isfinite(h)):
            return False
        try:
            np.linalg.cholesky(-0.5 * (h + h.T))
        except np.linalg.LinAlgError:
            return False
    return True


def spike_to_slab(model, indicator, coefficients, initial_point: dict | None = None) -> float:
    """How narrow the spike of a scale mixture is: the smallest, over the sites, ratio of
    the width of ``coefficients``' own prior in element ``j`` with site ``j`` at 0 to its
    width with the site at 1.

    A width is ``1 / sqrt(curvature)`` of the prior's log density in the element at 0
    (the other variables at ``initial_point``), the curvature from the prior's gradient
    at +-``delta``: for ``Normal(0, switch(g, slab, spike))`` the ratio is
    ``spike / slab``. A Gibbs flip of ``g_j`` from 0, with ``beta_j`` where the spike
    holds it, is accepted with probability of the order of this ratio (times the prior
    odds), so a narrow spike leaves the indicator where it is for many draws while a wide
    one does not. A prior with no curvature at 0 (flat, or a kink) gives 0.

    Parameters
    ----------
    model : pymc.Model
    indicator, coefficients : value variables
        The 0/1 indicator and the continuous variable it scales elementwise
        (:func:`scaled_coefficients`).
    initial_point : dict, optional

    Returns
    -------
    float
    """
    if initial_point is None:
        initial_point = model.initial_point()
    own = model.values_to_rvs[coefficients]
    gradient = pt.grad(model.logp(vars=[own]), coefficients)
    fn = compile_function(model.value_vars, gradient, on_unused_input="ignore")
    shape = np.shape(initial_point[coefficients.name])
    delta = 1e-3

    def width(site_value: int) -> np.ndarray:
        point = {v.name: initial_point[v.name] for v in model.value_vars}
        point[indicator.name] = np.full(np.shape(initial_point[indicator.name]), site_value,
                                        dtype=np.asarray(initial_point[indicator.name]).dtype)
        sides = []
        for sign in (1.0, -1.0):
            point[coefficients.name] = np.full(shape, sign * delta)
            sides.append(np.ravel(np.asarray(fn(**point), dtype=float)))
        curvature = (sides[1] - sides[0]) / (2 * delta)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(curvature > 0, 1.0 / np.sqrt(curvature), np.inf)

    ratio = width(0) / width(1)
    ratio = np.where(np.isfinite(ratio), ratio, 0.0)
    return float(np.min(ratio)) if ratio.size else 0.0


#: why a pairing found is not used where the log density is not concave in it
_NOT_CONCAVE = ("the log density is not concave in {beta} at every probe point (the "
                "Gaussian fit of its conditional, PairedFlip's proposal, would not be "
                "accepted)")


def switched_coefficients(model, indicator, initial_point: dict | None = None,
                          seed: int = 0) -> tuple[Variable | None, str]:
    """The continuous variable whose element ``j`` the indicator's site ``j`` switches.

    A continuous variable ``beta`` of the indicator's size is *switched* by ``g`` when
    every term of the log density other than ``beta``'s own prior is flat in ``beta_j``
    while ``g_j = 0`` and not while ``g_j = 1`` (``g * beta`` in a regression). Checked on
    the gradient at :data:`PROBE_POINTS` points: the initial point with the continuous
    variables perturbed and random indicators (each site both on and off among them).
    Only a variable in which the log density is also strictly concave at those points is
    returned: :class:`PairedFlip`'s proposal is the Laplace approximation of its
    conditional, right for a log-concave one (a linear, logistic or Poisson regression
    with Gaussian priors), refused nearly always where the Hessian is singular or
    indefinite.

    Parameters
    ----------
    model : pymc.Model
    indicator : random or value variable
        A binary variable with values 0 and 1.
    initial_point : dict, optional
    seed : int
        Seed of the probe points.

    Returns
    -------
    coefficients : Variable or None
        The value variable of the switched continuous variable (None if there is none).
    reason : str
        What was found, or why no variable qualifies.
    """
    if initial_point is None:
        initial_point = model.initial_point()
    g, n, candidates = _same_size_candidates(model, indicator, initial_point)
    if not candidates:
        return None, f"no continuous variable has the {n} elements of {g.name}"
    rng = np.random.default_rng(seed)
    patterns = rng.integers(0, 2, (PROBE_POINTS // 2, n))
    patterns = np.concatenate([patterns, 1 - patterns])  # every site both on and off
    points = [_probe_point(model, g, initial_point, pattern, rng) for pattern in patterns]
    not_concave = None
    for beta in candidates:
        own = model.values_to_rvs[beta]
        others = [rv for rv in model.basic_RVs if rv is not own] + list(model.potentials)
        slope = pt.grad(model.logp(vars=others), beta)
        fn = compile_function(model.value_vars, slope, on_unused_input="ignore")
        switched = True
        seen_on = np.zeros(n, dtype=bool)
        for point, pattern in zip(points, patterns, strict=True):
            grad = np.ravel(fn(**{v.name: point[v.name] for v in model.value_vars}))
            if not np.all(np.isfinite(grad)) or np.any(grad[pattern == 0] != 0.0):
                switched = False
                break
            seen_on |= (pattern == 1) & (grad != 0.0)
        if switched and seen_on.all():
            if not _concave(model, beta, points):
                not_concave = beta
                continue
            return beta, (f"every element of {beta.name} enters the log density (beyond its "
                          f"prior) only while its site of {g.name} is 1")
    if not_concave is not None:
        return None, (f"{g.name} switches {not_concave.name}, but "
                      + _NOT_CONCAVE.format(beta=not_concave.name))
    return None, (f"no continuous variable of {n} elements is switched off by {g.name} "
                  "(flat in the likelihood wherever its site is 0)")


def scaled_coefficients(model, indicator, initial_point: dict | None = None,
                        seed: int = 0) -> tuple[Variable | None, str]:
    """The continuous variable whose element ``j`` alone the indicator's site ``j`` acts on.

    The scale-mixture form of spike-and-slab, ``beta ~ Normal(0, switch(g, slab, spike))``:
    flipping ``g_j`` changes the gradient of ``beta``'s own prior in ``beta_j`` and in no
    other element, and leaves the gradient of every other term in ``beta`` as it was (the
    indicator acts on the coefficient through its prior alone). Checked at
    :data:`PROBE_POINTS` // 2 points (the initial point
    with the continuous variables perturbed, random indicators), flipping every site in
    turn. Summed out, such a block leaves NUTS a mixture of a narrow and a wide
    component in every ``beta_j``, which it does not cross; flipping ``g_j`` with a fresh
    ``beta`` (:class:`PairedFlip`) does. As for :func:`switched_coefficients`, only a
    variable in which the log density is strictly concave at the probe points is
    returned.

    Parameters
    ----------
    model : pymc.Model
    indicator : random or value variable
        A binary variable with values 0 and 1.
    initial_point : dict, optional
    seed : int
        Seed of the probe points.

    Returns
    -------
    coefficients : Variable or None
        The value variable of the paired continuous variable (None if there is none).
    reason : str
        What was found, or why no variable qualifies.
    """
    if initial_point is None:
        initial_point = model.initial_point()
    g, n, candidates = _same_size_candidates(model, indicator, initial_point)
    if not candidates:
        return None, f"no continuous variable has the {n} elements of {g.name}"
    rng = np.random.default_rng(seed)
    shape = np.shape(initial_point[g.name])
    points = []
    for _ in range(max(PROBE_POINTS // 2, 1)):
        pattern = rng.integers(0, 2, n)
        points.append(_probe_point(model, g, initial_point, pattern, rng))
    not_concave = None
    for beta in candidates:
        own = model.values_to_rvs[beta]
        others = [rv for rv in model.basic_RVs if rv is not own] + list(model.potentials)
        fn = compile_function(model.value_vars, [pt.grad(model.logp(vars=[own]), beta),
                                           pt.grad(model.logp(vars=others), beta)],
                        on_unused_input="ignore")
        paired = True
        for point in points:
            base_prior, base_rest = (np.ravel(a) for a in fn(
                **{v.name: point[v.name] for v in model.value_vars}))
            for j in range(n):
                flipped = np.ravel(point[g.name]).copy()
                flipped[j] = 1 - flipped[j]
                prior, rest = (np.ravel(a) for a in fn(
                    **{v.name: point[v.name] for v in model.value_vars if v is not g},
                    **{g.name: flipped.reshape(shape)}))
                changed = prior != base_prior
                if not (np.all(np.isfinite(prior)) and changed[j] and changed.sum() == 1
                        and np.array_equal(rest, base_rest)):
                    paired = False
                    break
            if not paired:
                break
        if paired and not _concave(model, beta, points):
            not_concave = beta
            continue
        if paired:
            return beta, (f"site j of {g.name} acts on element j of {beta.name} alone (a "
                          "scale mixture: summed out, each element's density would be a "
                          "mixture NUTS does not cross)")
    if not_concave is not None:
        return None, (f"site j of {g.name} acts on element j of {not_concave.name} alone, "
                      "but " + _NOT_CONCAVE.format(beta=not_concave.name))
    return None, (f"no continuous variable of {n} elements has each element acted on by "
                  f"its site of {g.name} alone")
