"""Latent counts on a finite window: where a count's conditional lives, and a bound on the
mass outside it.

A latent count (``N ~ Poisson(lambda)`` thinned by ``y ~ Binomial(N, p)``) has infinitely
many values, but given everything else its conditional lives on a short range: below the
largest count observed it is impossible (the data give the lower end), above its mode it
falls off at least geometrically. A window ``lower .. lower + width - 1`` of values then
holds all but a bounded share of the mass, and a sum or draw over the window is exact
up to that share.

The bound: when the conditional ``p`` is log-concave beyond the window's last value ``h``
(the Poisson, the NegativeBinomial with ``n >= 1`` and the Binomial likelihood of ``N``
are each log-concave in ``N``, and so is their product), the ratio of consecutive values
``p(v + 1) / p(v)`` does not increase past ``h``, so with ``r = p(h) / p(h - 1) < 1``

    ``sum_{k >= 1} p(h + k) <= p(h) * sum_{k >= 1} r^k = p(h) * r / (1 - r)``.

:func:`tail_mass_bound` computes it relative to the window's mass; :func:`count_window`
scans a table of the conditional for the window that holds every site's mass to within
a stated tolerance. Both are pure numpy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["COUNT_TARGET_ACCEPT", "MAX_COUNT", "MAX_COUNT_STEP", "TAIL_MASS", "count_lbp_step",
           "count_sizes", "count_window", "needed_width", "tail_mass_bound",
           "tune_count_sizes", "window_extension"]

#: largest share of a site's conditional mass a window may leave out, beyond its last
#: value (checked at every draw; the window is widened when it is exceeded)
TAIL_MASS = 1e-8

#: largest value a window search looks at: a count whose conditional has not fallen off
#: by then is not a latent count this package can sum
MAX_COUNT = 2**16


def _logsumexp_rows(table: np.ndarray) -> np.ndarray:
    top = np.max(table, axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        return np.log(np.exp(table - safe[:, None]).sum(axis=1)) + safe


def _end_bound(value: np.ndarray, before: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``p(h) r / (1 - r)`` for windows ending at a value of log density ``value``, the
    one before it ``before``, the row's log mass ``total`` (inf where ``r >= 1``)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        log_r = value - before
        r = np.exp(np.minimum(log_r, 0.0))
        bound = np.exp(value - total) * r / (1.0 - r)
    return np.where(log_r >= 0.0, np.inf, bound)


def tail_mass_bound(table: np.ndarray, log_mass: np.ndarray | None = None) -> np.ndarray:
    """Upper bound on every site's conditional mass beyond the window, relative to the
    mass in it, assuming log-concavity beyond the window (module docstring).

    Parameters
    ----------
    table : ndarray, shape (N, W)
        Unnormalised log conditional of every site at its window's W values, in order;
        -inf where a value is impossible.
    log_mass : ndarray, shape (N,), optional
        Every row's log-sum-exp, where the caller has computed it already.

    Returns
    -------
    ndarray, shape (N,)
        ``p(h) r / (1 - r)`` with ``p`` normalised over the window, ``h`` its last value
        and ``r = p(h) / p(h - 1)``; 0 where the last value is impossible (the support
        ended), inf where ``r >= 1`` (the conditional is still rising: its mode lies
        beyond the window).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import geom
    >>> v = np.arange(1, 11)
    >>> bound = tail_mass_bound(geom.logpmf(v, 0.5)[None, :])
    >>> exact = geom.sf(10, 0.5) / geom.cdf(10, 0.5)  # the bound is exact for a geometric
    >>> bool(np.isclose(bound[0], exact, rtol=1e-12))
    True
    """
    table = np.asarray(table, dtype=np.float64)
    if table.shape[1] < 2:
        return np.where(np.isfinite(table[:, -1]), np.inf, 0.0)
    last = table[:, -1]
    total = _logsumexp_rows(table) if log_mass is None else np.asarray(log_mass)
    bound = _end_bound(last, table[:, -2], total)
    return np.where(np.isneginf(last), 0.0, bound)


def count_window(site_logp: Callable[[np.ndarray], np.ndarray], n_sites: int,
                 start: int = 0, first_width: int = 64, tail: float = TAIL_MASS,
                 max_count: int = MAX_COUNT) -> tuple[np.ndarray, np.ndarray]:
    """Every site's lowest possible value and the width that holds its conditional mass
    to within ``tail``.

    Parameters
    ----------
    site_logp : callable
        ``values (V,) -> (N, V)``: the unnormalised log conditional of every site at each
        value (every site set to the same value).
    n_sites : int
    start : int
        The smallest value the distribution has.
    first_width : int
        Values scanned at first; the scan doubles until every site is covered.
    tail : float
        Largest mass share left beyond the window (:func:`tail_mass_bound`).
    max_count : int
        Largest value scanned.

    Returns
    -------
    lower : ndarray of int64, shape (N,)
        The smallest value of finite log density of every site.
    width : ndarray of int64, shape (N,)
        Number of values from ``lower`` that leave at most ``tail`` of the mass beyond.

    Raises
    ------
    ValueError
        If some site has no possible value, or its mass has not fallen off, within
        ``max_count``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import poisson
    >>> lower, width = count_window(lambda v: poisson.logpmf(v[None, :], 3.0), 1)
    >>> int(lower[0]), int(width[0]), bool(poisson.sf(width[0] - 1, 3.0) < 1e-8)
    (0, 18, True)
    """
    end = start + first_width
    while True:
        values = np.arange(start, end)
        table = np.asarray(site_logp(values), dtype=np.float64).reshape(n_sites, values.size)
        done, first, last = _shortest_ends(table, tail)
        if done.all():
            return (start + first).astype(np.int64), (last - first + 1).astype(np.int64)
        if end >= max_count:
            site = int(np.flatnonzero(~done)[0])
            why = ("has no possible value" if not np.isfinite(table[site]).any() else
                   "still holds more than the tolerated mass beyond that")
            raise ValueError(f"site {site} {why} in the values {start} .. {end - 1}")
        end = min(start + 2 * (end - start), max_count)


def _shortest_ends(table: np.ndarray, tail: float, log_mass: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every row of a table of log conditionals: whether some value past its first
    possible one can end a window with at most ``tail`` of the row's mass beyond
    (:func:`tail_mass_bound` at that end, the mass normalised over the whole row), the
    index of the first possible value, and of the first such end. ``log_mass``: the
    rows' log-sum-exp where the caller has it (rows of finite values and -inf)."""
    n, width = table.shape
    finite = np.isfinite(table)
    has = finite.any(axis=1)
    first = np.argmax(finite, axis=1)
    if width < 2:
        return np.zeros(n, bool), first, first
    total = (_logsumexp_rows(np.where(finite, table, -np.inf)) if log_mass is None
             else np.asarray(log_mass))
    index = np.arange(1, width)[None, :]  # every end at value index 1 .. W - 1
    bound = _end_bound(table[:, 1:], table[:, :-1], total[:, None])
    bound = np.where(np.isneginf(table[:, 1:]) & (index > first[:, None]), 0.0, bound)
    ok = (bound <= tail) & (index > first[:, None])
    return has & ok.any(axis=1), first, np.argmax(ok, axis=1) + 1


def needed_width(table: np.ndarray, tail: float = TAIL_MASS,
                 log_mass: np.ndarray | None = None) -> int | None:
    """The smallest width from the window's start that would leave at most ``tail`` of
    every row's mass beyond, read off a table of log conditionals over a wider window;
    None if the table is not wide enough to tell. ``log_mass``: the rows' log-sum-exp,
    where the caller has computed it already (the table holding no NaN or +inf).

    Examples
    --------
    >>> from scipy.stats import poisson
    >>> needed_width(poisson.logpmf(np.arange(40), 3.0)[None, :])
    18
    """
    done, _, last = _shortest_ends(np.asarray(table, dtype=np.float64), tail, log_mass)
    return int(last.max()) + 1 if done.all() and done.size else None


def window_extension(table: np.ndarray, tail: float = TAIL_MASS) -> int:
    """How many values to add to a window whose tail bound exceeds ``tail``: where the
    conditional falls at the end (ratio r < 1), the k with ``p(h) r^k r / (1 - r) <=
    tail`` (log-concavity: the ratio keeps falling, so the bound at the new end holds);
    where it still rises, as many values as the window has; never more than that (the
    ratio just past a mode is close to 1 and overstates the tail: a window extended in
    steps, each re-reading the bound at its new end, ends closer to what is needed).

    Examples
    --------
    >>> from scipy.stats import geom
    >>> width = 10  # values 1 .. 10 of a Geometric(0.3): the bound needs about 50
    >>> while tail_mass_bound(geom.logpmf(np.arange(1, width + 1), 0.3)[None, :])[0] > 1e-8:
    ...     width += window_extension(geom.logpmf(np.arange(1, width + 1), 0.3)[None, :])
    >>> width, float(geom.sf(width, 0.3)) <= 1e-8
    (52, True)
    """
    table = np.asarray(table, dtype=np.float64)
    width = table.shape[1]
    if width < 2:
        return max(width, 1)
    total = _logsumexp_rows(table)
    last = table[:, -1] - total
    log_r = table[:, -1] - table[:, -2]
    over = tail_mass_bound(table) > tail
    if np.any(over & ~(log_r < 0.0)):
        return width
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.exp(log_r)
        need = (np.log(tail) + np.log1p(-r) - last - log_r) / log_r
    need = np.where(over, need, 0.0)
    return int(min(width, max(1, np.ceil(np.nanmax(need)))))

#: acceptance the step sizes of :func:`count_lbp_step` are tuned toward (the locally
#: balanced proposals' optimal rate, as for ALBP)
COUNT_TARGET_ACCEPT = 0.574

#: largest step size a site may reach in tuning (a move of up to this many values)
MAX_COUNT_STEP = 32


def count_lbp_step(table: np.ndarray, sizes: np.ndarray, uniforms: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """One locally balanced move of every site of a colour, each accepted on its own.

    Site ``i`` at value ``x`` proposes ``y = x + d``, ``0 < |d| <= s_i``, with probability
    ``g(pi(y) / pi(x)) / Z(x)``, ``g(t) = sqrt(t)``, ``Z(x) = sum_d g(pi(x + d) / pi(x))``,
    and accepts with ``min(1, Z(x) / Z(y))``: with this ``g`` the Metropolis-Hastings
    ratio ``pi(y) q(x | y) / (pi(x) q(y | x))`` reduces to ``Z(x) / Z(y)``. For a fixed
    ``s_i`` the move is reversible with respect to the site's conditional; any value of a
    contiguous support is reached in moves of one.

    Parameters
    ----------
    table : ndarray, shape (n, 4 S + 1)
        Unnormalised log conditional of every site at ``x + e``, ``e = -2S .. 2S``
        (``S = max(sizes)``; -inf where a value is impossible).
    sizes : ndarray of int64, shape (n,)
        Every site's step size ``s_i`` (1 .. S).
    uniforms : ndarray, shape (n, 2)
        Two uniforms a site: the proposal's, the acceptance's.

    Returns
    -------
    moves : ndarray of int64, shape (n,)
        The accepted change of every site (0 where rejected).
    accept : ndarray, shape (n,)
        Every site's acceptance probability.

    Examples
    --------
    >>> import numpy as np
    >>> table = -0.5 * (np.arange(-4, 5)[None, :] - 1.0) ** 2  # S = 2, mode at x + 1
    >>> moves, accept = count_lbp_step(table, np.array([2]), np.array([[0.5, 0.0]]))
    >>> int(moves[0]), bool(0.0 < accept[0] <= 1.0)
    (1, True)
    """
    table = np.asarray(table, dtype=np.float64)
    n, width = table.shape
    big = (width - 1) // 4
    sizes = np.asarray(sizes, dtype=np.int64)
    offsets = np.arange(-big, big + 1)  # the moves d of the widest site
    allowed = (np.abs(offsets)[None, :] <= sizes[:, None]) & (offsets[None, :] != 0)
    centre = 2 * big
    here = table[:, centre]
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.where(allowed, np.exp(0.5 * (table[:, centre + offsets] - here[:, None])),
                           0.0)
    weights = np.where(np.isnan(weights), 0.0, weights)
    cdf = np.cumsum(weights, axis=1)
    z_here = cdf[:, -1]
    # the last allowed move of every site: a uniform at the top of the cumulative weights
    # must not pick past it (a move of weight 0)
    last = offsets.size - 1 - np.argmax((weights > 0)[:, ::-1], axis=1)
    pick = np.minimum((cdf < uniforms[:, 0:1] * z_here[:, None]).sum(axis=1), last)
    move = offsets[pick]
    rows = np.arange(n)
    there = table[rows, centre + move]
    # Z(y) over the moves from y = x + d: table columns centre + d + e
    columns = centre + move[:, None] + offsets[None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        back = np.where(allowed, np.exp(0.5 * (table[rows[:, None], columns] - there[:, None])),
                        0.0)
    back = np.where(np.isnan(back), 0.0, back)
    z_there = back.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        accept = np.where((z_here > 0) & np.isfinite(there) & (z_there > 0),
                          np.minimum(1.0, z_here / z_there), 0.0)
    moves = np.where(uniforms[:, 1] < accept, move, 0)
    return moves.astype(np.int64), accept


def tune_count_sizes(log_sizes: np.ndarray, accept: np.ndarray, t: int,
                     target: float = COUNT_TARGET_ACCEPT) -> np.ndarray:
    """One Robbins-Monro step of every site's log step size toward ``target`` acceptance
    (gain ``t^-0.6``), kept within ``[0, log MAX_COUNT_STEP]``."""
    gain = (t + 1.0) ** -0.6
    return np.clip(log_sizes + gain * (accept - target) * 2.0, 0.0, np.log(MAX_COUNT_STEP))


def count_sizes(log_sizes: np.ndarray) -> np.ndarray:
    """Whole step sizes (at least 1) from their tuned logs."""
    return np.maximum(1, np.rint(np.exp(log_sizes))).astype(np.int64)
