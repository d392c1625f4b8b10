"""Blocked Gibbs: every site of one colour drawn at once from its exact conditional.

Sites of one colour share no term of the log density (:mod:`pymc_discrete.kernels.structure`),
so given every other site and the continuous variables they are independent, and the
conditional of site i is ``p(v) ∝ exp(d(i, v))`` with ``d(i, v)`` the exact log-ratio of
setting site i to v (``d(i, x_i) = 0``). A sweep visits the colours in order; each colour
costs one batched evaluation of the model's terms at ``1 + K`` states (x, and x with the
whole colour set to each value v), or at the K value states alone where each term
touches at most one site of the colour
(:func:`~pymc_discrete.kernels.exact_tables.value_row_conditionals`), whatever the number
of its sites.

Two guarantees, chosen by the caller:

* ``exact=True``: the colouring is proven (read off the graph, sound): the draw of a
  colour is a Gibbs update and is always accepted.
* ``exact=False``: the colouring may have missed a dependency (it was only probed). The
  colour's draw is then a proposal ``q(y | x) = prod_i p_x(y_i)`` corrected by
  Metropolis-Hastings, with the conditionals at y for the reverse move (a second batched
  evaluation): a missed coupling costs acceptance, never correctness, and where the
  colouring is right every proposal is accepted.

Each site of a colour moves by :func:`site_transitions`: Metropolised Gibbs (a new value
proposed from the conditional without the current one, Liu 1996), which moves more often
than a draw from the conditional, mixed with 10% heat-bath draws, so that even fair coins
stay put sometimes (no periodic chain). Both leave the conditional invariant. Randomness: the
uniforms come from the chain's
``numpy.random.Generator``, one per site per colour and one per Metropolis-Hastings test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.common import StepInfo, acceptance_probability
from pymc_discrete.kernels.jit import njit_cached

__all__ = [
    "GibbsState",
    "ColourConditionals",
    "HEAT_BATH_SHARE",
    "corrected_acceptance",
    "transition_logprob",
    "site_transitions",
    "draw_rows",
    "update_colour",
    "blocked_gibbs_sweep",
]

#: ``(x, sites of one colour) -> (logp at x, (n_c, K) table of d(i, v) of those sites,
#: whether the colouring was proven to hold in this evaluation)``
ColourConditionals = Callable[[np.ndarray, int], tuple[float, np.ndarray]]


class GibbsState(NamedTuple):
    """State of a blocked Gibbs chain.

    Attributes
    ----------
    x : ndarray of int64, shape (N,)
        The point.
    logp : float
        Its log density (up to a constant that does not depend on the block).
    """

    x: np.ndarray
    logp: float


#: share of heat-bath moves in each site's update (the rest is Metropolised Gibbs)
HEAT_BATH_SHARE = 0.1


@njit_cached
def _binary_move(d: float, heat_bath_share: float) -> float:
    """Probability that a site with two values moves, in closed form: with d the
    log-ratio of the other value, ``p_other = sigmoid(d)`` and Metropolised Gibbs moves
    with probability ``min(1, p_other / p_x) = min(1, e^d)``, so the move has probability
    ``(1 - s) min(1, e^d) + s sigmoid(d)`` (one exp); 0 where the other value is
    impossible or its ratio NaN."""
    if not d > -np.inf:
        return 0.0
    if d < 0.0:
        e = np.exp(d)
        return (1.0 - heat_bath_share) * e + heat_bath_share * (e / (1.0 + e))
    e = np.exp(-d)
    return (1.0 - heat_bath_share) + heat_bath_share / (1.0 + e)


@njit_cached
def _categorical_rows(table: np.ndarray, current: np.ndarray, heat_bath_share: float,
                      uniforms: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, int, float]:
    """Every site's row of :func:`site_transitions` for sites with more than two values,
    stored into ``rows`` when it has a row per site, and drawn from with ``uniforms``
    when there is one per site (inverse CDF, as :func:`draw_rows`): the drawn values, the
    number changed and the sum of the drawn values' log-ratios. One loop for both, with
    the row in scratch memory: numba's calls of a function per site with array arguments
    doubled a site's update."""
    n, k = table.shape
    store, draw = rows.shape[0] == n, uniforms.size == n
    p = np.empty(k)
    row = np.empty(k)
    drawn = current.copy()
    changed = 0
    delta = 0.0
    for j in range(n):
        x = current[j]
        top = -np.inf
        for v in range(k):
            top = max(top, table[j, v])
        if not top > -np.inf:  # nothing is possible (the current value included): stay
            for v in range(k):
                row[v] = 0.0
            row[x] = 1.0
        else:
            total = 0.0
            for v in range(k):
                t = table[j, v]
                # the largest value's exp is 1 exactly: one exp a site fewer
                e = 1.0 if t == top else np.exp(t - top)
                p[v] = e
                total += e
            others_x = 0.0  # summed, not 1 - p_x: accurate when p_x is close to 1
            for v in range(k):
                p[v] /= total
                if v != x:
                    others_x += p[v]
            p_x = p[x]
            moved = 0.0
            for v in range(k):
                t = 0.0
                p_v = p[v]
                if v != x and p_v > 0.0:
                    # 1 - p_v by subtraction: inaccurate only when p_v is close to 1, and
                    # then p_v / others_x (others_x >= p_v) is the smaller term
                    others_v = max(1.0 - p_v, others_x - p_v + p_x)
                    # min(p_v / others_x, p_v / others_v), without dividing by an
                    # others_v that underflowed to 0 (a current value of probability
                    # below 1e-308)
                    t = ((1.0 - heat_bath_share) * (p_v / max(others_x, others_v))
                         + heat_bath_share * p_v)
                    moved += t
                row[v] = t
            row[x] = max(0.0, 1.0 - moved)
        if store:
            for v in range(k):
                rows[j, v] = row[v]
        if draw:
            u = uniforms[j]
            acc = 0.0
            for v in range(k):
                acc += row[v]
                if u < acc:
                    if v != x:
                        drawn[j] = v
                        changed += 1
                        delta += table[j, v]
                    break
    return drawn, changed, delta


@njit_cached
def site_transitions(table: np.ndarray, current: np.ndarray,
                     heat_bath_share: float) -> np.ndarray:
    """Every site's probabilities of moving from its current value to each value.

    The update mixes Liu's Metropolised Gibbs sampler (propose a value other than the
    current one x by its conditional, accept with ``min(1, (1 - p_x) / (1 - p_v))``:
    it moves more often than drawing from the conditional, so it mixes better, Peskun
    1973) with a share of plain heat-bath draws, which keep a site that has two equally
    likely values from alternating deterministically (a periodic chain). Both leave the
    site's conditional invariant and are reversible with respect to it:
    ``t_v = (1 - s) min(p_v / (1 - p_x), p_v / (1 - p_v)) + s p_v`` for ``v != x`` and
    ``t_x = 1 - sum_v t_v``, with ``1 - p_x`` summed from the other values (no
    cancellation near 1) and ``p_v = exp(d_v - max d) / sum_c exp(d_c - max d)``.

    Parameters
    ----------
    table : ndarray of float64, shape (n, K)
        Log-ratios ``d(j, v)`` (0 at the current value, -inf at impossible values).
    current : ndarray of int64, shape (n,)
    heat_bath_share : float
        s, in (0, 1].

    Returns
    -------
    ndarray of float64, shape (n, K)

    Examples
    --------
    Two equally likely values: a move with probability 0.9 + 0.1 / 2.

    >>> import numpy as np
    >>> t = site_transitions(np.zeros((1, 2)), np.array([0]), 0.1)
    >>> t[0].round(10).tolist()
    [0.05, 0.95]
    """
    n, k = table.shape
    out = np.empty((n, k))
    if k == 2:
        for j in range(n):
            x = current[j]
            move = _binary_move(table[j, 1 - x] - table[j, x], heat_bath_share)
            out[j, 1 - x] = move
            out[j, x] = max(0.0, 1.0 - move)
        return out
    _categorical_rows(table, current, heat_bath_share, np.empty(0), out)
    return out


@njit_cached
def draw_rows(transitions: np.ndarray, uniforms: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Draw every row's new value from its transition probabilities (inverse CDF; a
    rounding shortfall at the end of a row keeps the current value).

    Examples
    --------
    >>> import numpy as np
    >>> draw_rows(np.array([[0.25, 0.75], [1.0, 0.0]]), np.array([0.2, 0.9]),
    ...           np.array([1, 0])).tolist()
    [0, 0]
    """
    n, k = transitions.shape
    drawn = current.copy()
    for j in range(n):
        acc = 0.0
        for v in range(k):
            acc += transitions[j, v]
            if uniforms[j] < acc:
                drawn[j] = v
                break
    return drawn


@njit_cached
def _update_binary_colour(table: np.ndarray, current: np.ndarray, uniforms: np.ndarray,
                          heat_bath_share: float) -> tuple[np.ndarray, int, float]:
    """:func:`update_colour` of two-valued sites: the move probability of
    :func:`_binary_move` and the same inverse-CDF draw (the cumulative sums in
    value order, a rounding shortfall keeping the current value), without a row of
    transitions per site: the same draws, about four times faster."""
    n = table.shape[0]
    drawn = current.copy()
    changed = 0
    delta = 0.0
    for j in range(n):
        x = current[j]
        move = _binary_move(table[j, 1 - x] - table[j, x], heat_bath_share)
        stay = max(0.0, 1.0 - move)
        u = uniforms[j]
        if x == 0:
            # value 0 first (probability stay), then 1 (move); beyond their sum: stay
            new = 0 if u < stay else (1 if u < stay + move else 0)
        else:
            new = 0 if u < move else 1  # value 0 is the move
        if new != x:
            drawn[j] = new
            changed += 1
            delta += table[j, new]
    return drawn, changed, delta


@njit_cached
def update_colour(table: np.ndarray, current: np.ndarray, uniforms: np.ndarray,
                  heat_bath_share: float) -> tuple[np.ndarray, int, float]:
    """The proven path of a colour in one compiled call: every site's new value
    (:func:`site_transitions`, :func:`draw_rows`), the number of sites changed and the
    change of the log density (the sum of the drawn values' log-ratios: exact when the
    sites share no term).

    Examples
    --------
    >>> import numpy as np
    >>> drawn, n, delta = update_colour(np.array([[0.0, -np.inf]]), np.array([0]),
    ...                                 np.array([0.5]), 0.1)
    >>> drawn.tolist(), n, delta
    ([0], 0, 0.0)
    """
    if table.shape[1] == 2:
        return _update_binary_colour(table, current, uniforms, heat_bath_share)
    return _categorical_rows(table, current, heat_bath_share, uniforms,
                             np.empty((0, table.shape[1])))


@njit_cached
def transition_logprob(transitions: np.ndarray, values: np.ndarray) -> float:
    """Log-probability that every row j moves to ``values[j]``."""
    total = 0.0
    for j in range(values.size):
        total += np.log(transitions[j, values[j]])
    return total


@njit_cached
def corrected_acceptance(logp_x: float, logp_y: float, forward: np.ndarray,
                         table_y: np.ndarray, current: np.ndarray, drawn: np.ndarray,
                         heat_bath_share: float) -> float:
    """Metropolis-Hastings acceptance probability of a colour's draw from ``current`` to
    ``drawn`` made with the transitions ``forward``, the reverse move scored with the
    conditionals ``table_y`` at the proposal (the colouring may have missed a coupling)."""
    reverse = site_transitions(table_y, drawn, heat_bath_share)
    log_alpha = (logp_y - logp_x + transition_logprob(reverse, current)
                 - transition_logprob(forward, drawn))
    return acceptance_probability(log_alpha)


def blocked_gibbs_sweep(
    state: GibbsState,
    rng: np.random.Generator,
    conditionals: ColourConditionals,
    colour_sites: list[np.ndarray],
    exact: bool,
    heat_bath_share: float = HEAT_BATH_SHARE,
) -> tuple[GibbsState, StepInfo]:
    """One sweep: every colour in turn updated from its exact conditionals (module
    docstring).

    Parameters
    ----------
    state : GibbsState
    rng : numpy.random.Generator
    conditionals : callable
        ``(x, sites) -> (logp at x, (n_c, K) table of d(i, v), held)`` for the sites of
        one colour (in that order), 0 at the current values and -inf at impossible ones;
        ``held`` is False when something the proof of the colouring assumes did not hold
        in this evaluation (a parameter check failed at one of its states): that colour's
        draw is then corrected by Metropolis-Hastings.
    colour_sites : list of ndarray of int64
        The sites of every colour.
    exact : bool
        Whether the colouring is proven: then every colour's draw whose evaluation
        ``held`` is accepted without a test; else each is corrected by
        Metropolis-Hastings.
    heat_bath_share : float
        Share of heat-bath draws in each site's update (:func:`site_transitions`); 1 draws
        every site afresh from its conditional, whatever its current value.

    Returns
    -------
    new_state : GibbsState
    info : StepInfo
        ``accept_prob`` is the mean over the colours (1 when ``exact``), ``accepted``
        whether every colour's draw was accepted, ``n_proposed`` the number of sites whose
        proposed value differed from their current one.

    Examples
    --------
    Two independent fair coins (one colour): each moves with probability 0.95.

    >>> import numpy as np
    >>> def conditionals(x, sites):
    ...     return 0.0, np.zeros((sites.size, 2)), True
    >>> state = GibbsState(np.zeros(2, dtype=np.int64), 0.0)
    >>> new, info = blocked_gibbs_sweep(state, np.random.default_rng(0), conditionals,
    ...                                 [np.array([0, 1])], exact=True)
    >>> info.accept_prob, new.x.shape
    (1.0, (2,))
    """
    x, logp = state.x, state.logp
    prob_total = 0.0  # summed in order, as the compiled loop does
    all_accepted = True
    n_proposed = 0
    for sites in colour_sites:
        logp_x, table, held = conditionals(x, sites)
        current = x[sites]
        if exact and held:
            drawn, n_changed, delta = update_colour(table, current, rng.random(sites.size),
                                                    heat_bath_share)
            if n_changed:
                x = x.copy()
                x[sites] = drawn
            # d(i, v) are exact and the sites share no term: the changes add up
            logp = logp_x + delta
            prob_total += 1.0
            n_proposed += n_changed
            continue
        forward = site_transitions(table, current, heat_bath_share)
        drawn = draw_rows(forward, rng.random(sites.size), current)
        n_changed = int(np.count_nonzero(drawn != current))
        u = rng.random()
        if not n_changed:
            prob_total += 1.0
            logp = logp_x
            continue
        y = x.copy()
        y[sites] = drawn
        logp_y, table_y, _ = conditionals(y, sites)
        prob = corrected_acceptance(logp_x, logp_y, forward, table_y, current, drawn,
                                    heat_bath_share)
        prob_total += prob
        n_proposed += n_changed
        if u < prob:
            x, logp = y, logp_y
        else:
            all_accepted = False
            logp = logp_x
    mean_prob = prob_total / len(colour_sites) if colour_sites else float("nan")
    return GibbsState(x, float(logp)), StepInfo(mean_prob, all_accepted, n_proposed)
