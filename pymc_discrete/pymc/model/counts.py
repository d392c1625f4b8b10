"""Latent counts: which variables are counts, and the window of values their sum runs over.

A latent count is an integer variable of infinite support whose lower end is fixed: a
Poisson, NegativeBinomial or Geometric free variable (the abundance of an N-mixture
model, a count thinned by a Binomial, an imputed missing count). The finite-value steps
refuse them; :class:`~pymc_discrete.CollapsedNUTS` sums them out over a window of values
(:mod:`pymc_discrete.kernels.counts`) read here from the model at the initial point and
at perturbed values of the continuous variables, and checked at every draw.
"""

from __future__ import annotations

import numpy as np
from pymc.pytensorf import make_shared_replacements
from pytensor.graph.basic import Variable
from pytensor.tensor.random.basic import GeometricRV, NegBinomialRV, PoissonRV

from pymc_discrete.kernels.counts import TAIL_MASS, count_window
from pymc_discrete.pymc.model.exact import ExactRatios

__all__ = ["COUNT_OPS", "CountWindow", "colour_sums", "count_start", "is_count",
           "read_count_window", "site_sums"]

#: integer variables of infinite support the package sums out as latent counts
COUNT_OPS = (PoissonRV, NegBinomialRV, GeometricRV)

#: continuous values at which the window is read, besides the initial point
WINDOW_PROBES = 4


def is_count(rv: Variable) -> bool:
    """Whether ``rv`` is a latent count (Poisson, NegativeBinomial, Geometric).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model():
    ...     n = pm.Poisson("n", 3.0)
    ...     z = pm.Bernoulli("z", 0.5)
    >>> is_count(n), is_count(z)
    (True, False)
    """
    op = getattr(getattr(rv, "owner", None), "op", None)
    return isinstance(op, COUNT_OPS) and str(rv.dtype).startswith(("int", "uint"))


def count_start(rv: Variable) -> int:
    """The smallest value of a count variable's distribution (1 for a Geometric)."""
    return 1 if isinstance(rv.owner.op, GeometricRV) else 0


class CountWindow:
    """The values a block of counts is summed over: site ``i`` takes
    ``lower[i] .. lower[i] + width - 1``.

    Attributes
    ----------
    start : int
        The distribution's smallest value.
    lower : ndarray of int64, shape (N,)
        Every site's smallest possible value (from the data: a count below the largest
        count it produced is impossible), the same at every probe point.
    width : int
        Number of values of every site: enough at every probe point to leave at most
        ``tail`` of each site's conditional mass beyond the window.
    tail : float
        The tolerated mass beyond the window.
    """

    def __init__(self, lower: np.ndarray, width: int, tail: float = TAIL_MASS,
                 start: int = 0) -> None:
        self.start = int(start)
        self.lower = np.asarray(lower, dtype=np.int64)
        self.width = int(width)
        self.tail = float(tail)

    def __repr__(self) -> str:
        return (f"CountWindow({self.lower.size} sites from {int(self.lower.min())} .. "
                f"{int(self.lower.max())}, width {self.width})")


def site_sums(terms: np.ndarray, exact: ExactRatios) -> np.ndarray:
    """(N, R) sums of every site's terms at each row of ``terms`` (R, M), from the CSR
    lists of the structure (0 for a site without terms)."""
    s = exact.structure
    counts = np.diff(s.site_ptr)
    out = np.zeros((exact.n_sites, terms.shape[0]))
    has = counts > 0
    if s.site_terms.size:
        out[has] = np.add.reduceat(terms[:, s.site_terms], s.site_ptr[:-1][has], axis=1).T
    return out


#: sites evaluated at once when a row whose parameter checks failed is re-read site by site
SINGLES_CHUNK = 256


def colour_sums(exact: ExactRatios, base: np.ndarray, sites: np.ndarray,
                rows: np.ndarray) -> np.ndarray:
    """Every site of ``sites`` (sites sharing no term) summed over its terms, with those
    sites set to each row of ``rows`` and the others at ``base``.

    A parameter check that fails makes a whole row -inf (the batched terms cannot tell
    which site failed it), which would hide the other sites' values in that row: such a
    row is evaluated again one site at a time, each moved alone from ``base``.

    Parameters
    ----------
    exact : ExactRatios
    base : ndarray of int64, shape (N,)
        Values of every site (a state of positive probability).
    sites : ndarray of int64, shape (n,)
    rows : ndarray of int64, shape (R, n)
        Values of ``sites`` at each row.

    Returns
    -------
    ndarray, shape (n, R)
    """
    offsets = np.zeros(exact.n_sites, np.int64) if exact.offsets is None else exact.offsets
    base = np.asarray(base, dtype=np.int64)
    sites = np.asarray(sites, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    states = np.repeat(base[None, :], rows.shape[0], axis=0)
    states[:, sites] = rows
    terms = exact.batch_terms(states - offsets[None, :])
    out = site_sums(terms, exact)[sites]
    if exact.checks_held:
        return out
    for r in np.flatnonzero(np.isneginf(terms).all(axis=1)):
        for lo in range(0, sites.size, SINGLES_CHUNK):
            part = sites[lo:lo + SINGLES_CHUNK]
            singles = np.repeat(base[None, :], part.size, axis=0)
            singles[np.arange(part.size), part] = rows[r, lo:lo + part.size]
            alone = site_sums(exact.batch_terms(singles - offsets[None, :]), exact)
            out[lo:lo + part.size, r] = alone[part, np.arange(part.size)]
    return out


def _site_logp(exact: ExactRatios):
    """``values (V,) -> (N, V)``: every site's terms summed with every site at each value
    (the sites share no term, so each row gives every site's own conditional); a row
    whose checks failed is read site by site from the initial values
    (:func:`colour_sums`)."""
    base = np.zeros(exact.n_sites, np.int64) if exact.offsets is None else exact.offsets
    sites = np.arange(exact.n_sites)

    def site_logp(values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, np.int64)
        return colour_sums(exact, base, sites, np.repeat(values[:, None], sites.size, 1))

    return site_logp


def read_count_window(exact: ExactRatios, point: dict, start: int, tail: float = TAIL_MASS,
                      probes: int = WINDOW_PROBES, seed: int = 0) -> CountWindow:
    """The window of values of a one-colour block of counts (:class:`CountWindow`).

    Read with the other variables at ``point`` and at ``probes`` points where every
    continuous value is moved by a standard normal draw (on PyMC's unconstrained scale: a
    rate moves by a factor of about e). The same point gives the same window, whatever
    values a step built on ``exact`` left in its shared variables.

    Parameters
    ----------
    exact : ExactRatios
        The block's structure (one colour: its sites share no term).
    point : dict
        Values of the other variables (the initial point).
    start : int
        The distribution's smallest value.
    tail : float
    probes : int
    seed : int

    Raises
    ------
    ValueError
        If a site has no possible value, its conditional has not fallen off within
        :data:`~pymc_discrete.kernels.counts.MAX_COUNT`, or its lowest possible value
        differs between probe points (it depends on the continuous variables).
    """
    rng = np.random.default_rng(seed)
    kept = {s: s.get_value() for s in exact.shared.values()}
    saved = {s: np.asarray(point[name.name if hasattr(name, "name") else name],
                           dtype=s.get_value().dtype) for name, s in exact.shared.items()}
    site_logp = _site_logp(exact)
    lower, width = None, 0
    try:
        for probe in range(1 + probes):
            for s, value in saved.items():
                s.set_value(value)
            if probe:
                for s, value in saved.items():
                    if np.issubdtype(np.asarray(value).dtype, np.floating):
                        s.set_value(value + rng.normal(0.0, 1.0, np.shape(value)).astype(
                            np.asarray(value).dtype))
            low, wide = count_window(site_logp, exact.n_sites, start=start, tail=tail)
            if lower is None:
                lower = low
            elif not np.array_equal(lower, low):
                i = int(np.flatnonzero(lower != low)[0])
                raise ValueError(f"the lowest possible value of site {i} depends on the "
                                 f"continuous variables ({lower[i]} and {low[i]})")
            width = max(width, int(wide.max()))
    finally:
        for s, value in kept.items():
            s.set_value(value)
    return CountWindow(lower, width, tail, start)



def count_exact_ratios(model, block, initial_point: dict,
                       compile_kwargs: dict | None = None) -> ExactRatios:
    """The structure of a block of latent counts: which terms each count moves, read with
    every site at its initial value and one above (the values of every probe; the counts
    are evaluated beyond them, so no piece is read from a table of those two)."""
    x0 = np.concatenate([np.ravel(initial_point[v.name]) for v in block]).astype(np.int64)
    return ExactRatios(model, block, initial_point,
                       make_shared_replacements(initial_point, block, model), compile_kwargs,
                       n_categories=np.full(x0.size, 2, np.int64), offsets=x0,
                       within_values=False)
