"""Whether a block of discrete sites can be summed out site by site, and over which values.

A block sums out exactly when its sites provably share no term of the log density (one
colour of :class:`~pymc_discrete.pymc.model.exact.ExactRatios`); the values each site can
take must not depend on the continuous variables, and the sum must stay small enough to
evaluate at every NUTS step. This module reads those conditions and says why one fails;
it builds no graph (:mod:`~pymc_discrete.pymc.summing.marginal` does).

Imports: the model reader (:mod:`pymc_discrete.pymc.model`) only.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.pymc.model.counts import count_start, read_count_window, site_sums
from pymc_discrete.pymc.model.exact import ExactRatios

__all__ = ["MAX_SUMMED_TERMS", "NotCollapsible", "collapsible", "count_problem",
           "count_window_or_problem", "possible_values", "site_of_term"]

#: continuous values at which the possible values of every site are read (besides the
#: initial point): the support must be the same at all of them
SUPPORT_PROBES = 4


#: largest number of term evaluations (terms x values) a sum over the block may take: each
#: NUTS step evaluates them and their gradient
MAX_SUMMED_TERMS = 2**22


class NotCollapsible(ValueError):
    """The block cannot be summed out exactly site by site (the message says why)."""


def collapsible(exact: ExactRatios) -> str | None:
    """Why the block of ``exact`` cannot be summed out site by site, or None if it can.

    It can when its sites provably share no term (one colour, read off the graph): then
    the joint density factorises over the sites given everything else.
    """
    if exact.n_sites == 0:
        return "the block has no sites"
    if not exact.proven:
        return ("the block's structure was only probed, not read off the graph: a coupling "
                "the probes missed would make the sum wrong")
    if exact.structure.n_colours != 1:
        return (f"its sites share terms ({exact.structure.n_colours} colours): the sum over "
                "the block would not factorise over its sites")
    size = exact.n_terms * exact.layout.max_values
    if size > MAX_SUMMED_TERMS:
        return (f"the sum would evaluate {exact.n_terms} terms at {exact.layout.max_values} values "
                f"({size} in all, more than {MAX_SUMMED_TERMS}) at every NUTS step")
    return None


def site_of_term(exact: ExactRatios) -> np.ndarray:
    """The site every term depends on (-1: none); one colour: at most one each."""
    s = exact.structure
    owner = np.full(exact.n_terms, -1, dtype=np.int64)
    owner[s.site_terms] = np.repeat(np.arange(exact.n_sites), np.diff(s.site_ptr))
    return owner


def possible_values(exact: ExactRatios, seed: int = 0) -> np.ndarray:
    """Which value of every site has a finite log density, the same at the initial point and
    at ``SUPPORT_PROBES`` perturbed values of the continuous variables.

    Returns
    -------
    ndarray of bool, shape (N, K)
        False also at values a site does not have (``v >= K_i``).

    Raises
    ------
    NotCollapsible
        If a parameter check of the model fails at some value of the block, or if the
        possible values differ between the probe points.
    """
    k = exact.layout.max_values
    ks = exact.layout.site_values
    has = np.arange(k)[None, :] < ks[:, None]
    states = np.minimum(np.arange(k)[:, None], ks[None, :] - 1)
    rng = np.random.default_rng(seed)
    saved = {s: s.get_value() for s in exact.shared.values()}
    seen = None
    try:
        for probe in range(1 + SUPPORT_PROBES):
            if probe:
                for s, value in saved.items():
                    if np.issubdtype(np.asarray(value).dtype, np.floating):
                        s.set_value(value + rng.normal(0.0, 1.0, np.shape(value)).astype(
                            np.asarray(value).dtype))
            terms = exact.batch_terms(states)
            if not exact.checks_held:
                raise NotCollapsible(
                    "a parameter check of the model fails at some value of the block")
            finite = (site_sums(terms, exact) > -np.inf) & has
            if seen is None:
                seen = finite
            elif not np.array_equal(seen, finite):
                i, v = np.argwhere(seen != finite)[0]
                raise NotCollapsible(
                    f"whether site {i} can take value {v} depends on the continuous variables")
    finally:
        for s, value in saved.items():
            s.set_value(value)
    if not seen.any(axis=1).all():
        raise NotCollapsible(f"site {int(np.flatnonzero(~seen.any(axis=1))[0])} has no "
                             "possible value")
    return seen


def count_window_or_problem(model, block, exact: ExactRatios, point: dict):
    """The window a block of counts is summed over, or why it cannot be summed out."""
    why = collapsible(exact)
    if why is not None:
        return why
    start = min(count_start(model.values_to_rvs[v]) for v in block)
    try:
        window = read_count_window(exact, point, start)
    except ValueError as err:
        return str(err)
    size = exact.n_terms * window.width
    if size > MAX_SUMMED_TERMS:
        return (f"the sum would evaluate {exact.n_terms} terms at {window.width} values "
                f"({size} in all, more than {MAX_SUMMED_TERMS}) at every NUTS step")
    return window


def count_problem(model, block, exact: ExactRatios, point: dict) -> str | None:
    """Why a block of counts cannot be summed out for NUTS, or None."""
    window = count_window_or_problem(model, block, exact, point)
    return window if isinstance(window, str) else None

