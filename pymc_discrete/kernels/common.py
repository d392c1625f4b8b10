"""Pieces shared by every Metropolis-Hastings kernel: states, step info, rounding, acceptance."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pymc_discrete.kernels.jit import njit_cached

__all__ = [
    "StepInfo",
    "StepsInfo",
    "kernel_seed",
    "acceptance_probability",
    "draw_proposal_size",
    "metropolis_hastings",
    "number_of_changes",
    "probabilistic_round",
    "step_result",
    "MIN_EXTRA_CHANGES",
]


class StepInfo(NamedTuple):
    """What one Metropolis-Hastings step did.

    Attributes
    ----------
    accept_prob : float
        ``min(1, exp(log_alpha))`` of the proposal; 0 when the proposal was
        impossible or its log density was NaN or -inf.
    accepted : bool
        Whether the proposal became the new state.
    n_proposed : int
        Number of sites the proposal changed (R, or the path length for PAS).

    Examples
    --------
    >>> StepInfo(accept_prob=0.5, accepted=True, n_proposed=3).accepted
    True
    """

    accept_prob: float
    accepted: bool
    n_proposed: int


class StepsInfo(NamedTuple):
    """What several Metropolis-Hastings steps did, one entry per step.

    Attributes
    ----------
    accept_prob : ndarray of float64
        ``min(1, exp(log_alpha))`` of each proposal (0 for impossible ones).
    accepted : ndarray of bool
        Whether each proposal became the new state.
    n_proposed : ndarray of int64
        Number of sites each proposal changed.

    Examples
    --------
    >>> info = StepsInfo.from_steps([StepInfo(0.5, True, 3), StepInfo(0.0, False, 2)])
    >>> info.accepted.tolist(), int(info.n_proposed.sum())
    ([True, False], 5)
    """

    accept_prob: np.ndarray
    accepted: np.ndarray
    n_proposed: np.ndarray

    @classmethod
    def from_steps(cls, steps: list[StepInfo]) -> StepsInfo:
        """Collect the :class:`StepInfo` of consecutive steps."""
        return cls(
            np.array([s.accept_prob for s in steps], dtype=np.float64),
            np.array([s.accepted for s in steps], dtype=np.bool_),
            np.array([s.n_proposed for s in steps], dtype=np.int64),
        )


@njit_cached
def probabilistic_round(scale: float, u: float, n_sites: int) -> int:
    """Round a real scale to an integer number of sites, unbiasedly.

    ``floor(scale) + 1`` with probability ``frac(scale)``, else ``floor(scale)``,
    then clipped to ``[1, n_sites]``.

    Parameters
    ----------
    scale : float
        The real-valued scale R_t.
    u : float
        A uniform draw on [0, 1).
    n_sites : int
        Number of sites N.

    Returns
    -------
    int
        The number of sites R to change.

    Examples
    --------
    >>> probabilistic_round(2.25, 0.1, 10), probabilistic_round(2.25, 0.9, 10)
    (3, 2)
    """
    base = math.floor(scale)
    r = base + (1 if u < scale - base else 0)
    return int(min(max(r, 1), n_sites))


#: Smallest mean of the Poisson part of the number of changes (see
#: :func:`number_of_changes`): even at R = 1 a step changes two sites with probability
#: about 1/20, so no fixed scale leaves a step with one single number of changes.
MIN_EXTRA_CHANGES = 0.05


@njit_cached
def number_of_changes(scale: float, u: float, n_sites: int) -> int:
    """The number of sites a step changes: ``1 + Poisson(max(scale - 1, 1/20))``, drawn by
    inverting its distribution function at the uniform ``u``; 0 (propose to stay) when
    the draw exceeds ``n_sites``.

    A step that always changed the same number of sites R could leave states
    unreachable: with R = 2 and two free sites among pinned ones, every accepted move
    flips both and their joint state never changes; with R even on two-valued sites the
    parity of the number of ones never changes. A random number of changes, with
    positive probability of 1 and of 2 whatever the scale, makes every step irreducible
    (single changes connect any two states of positive probability that differ
    site by site) and aperiodic (changes of one and of two sites give returns of length
    2 and 3); a one-site block gets aperiodicity from the occasional stay. The mean is
    ``max(scale, 1.05)`` (less what the truncation at ``n_sites`` removes) and the spread
    ``sqrt(scale - 1)``, small beside the scale at the sizes where the optimal R grows
    like ``N^(2/3)``. The distribution does not depend on the state, so the
    Metropolis-Hastings ratio of a step is that of its R.

    Parameters
    ----------
    scale : float
        The real-valued scale R_t >= 1.
    u : float
        A uniform draw on [0, 1).
    n_sites : int
        Number of sites N.

    Returns
    -------
    int
        R in ``1 .. n_sites``, or 0 when the draw exceeds ``n_sites``.

    Examples
    --------
    >>> number_of_changes(1.0, 0.5, 10), number_of_changes(1.0, 0.99, 10)
    (1, 2)
    >>> number_of_changes(100.0, 0.5, 1000)
    100
    """
    lam = max(scale - 1.0, MIN_EXTRA_CHANGES)
    # invert the Poisson distribution function from below its bulk: the mass below
    # ``start`` (more than 12 standard deviations under the mean) is < 1e-30 and is
    # assigned to ``start``; the terms follow by the recursion p(k+1) = p(k) lam / (k+1)
    spread = 12.0 * math.sqrt(lam) + 12.0
    start = max(0, int(math.floor(lam - spread)))
    stop = int(math.ceil(lam + spread))
    log_p = start * math.log(lam) - lam - math.lgamma(start + 1.0)
    p = math.exp(log_p)
    cumulative = p
    k = start
    while cumulative <= u and k < stop:
        k += 1
        p *= lam / k
        cumulative += p
    r = 1 + k
    return r if r <= n_sites else 0


def draw_proposal_size(
    scale: float, rng: np.random.Generator, n_sites: int
) -> tuple[int, float, int]:
    """Draw what a step needs from ``rng`` in one call: the number of changes R
    (:func:`number_of_changes`), the uniform of the Metropolis-Hastings decision and a
    seed for numba's generator (see :func:`kernel_seed`).

    Returns
    -------
    r : int
        Number of sites to change, in [0, n_sites] (0: the step stays).
    u_accept : float
        Uniform on [0, 1) for :func:`metropolis_hastings`.
    seed : int
        In [0, 2**32), for the compiled part of the step.

    Examples
    --------
    >>> import numpy as np
    >>> r, u, seed = draw_proposal_size(2.5, np.random.default_rng(0), 10)
    >>> 0 <= r <= 10, 0.0 <= u < 1.0, 0 <= seed < 2**32
    (True, True, True)
    """
    u = rng.random(3)
    return number_of_changes(scale, u[0], n_sites), float(u[1]), int(u[2] * 2.0**32)


def kernel_seed(rng: np.random.Generator) -> int:
    """Draw a seed for numba's internal generator from ``rng``.

    Passing a ``numpy.random.Generator`` into a numba function costs more than a typical
    step's arithmetic (numba unboxes its bit generator at every call); the compiled
    kernels instead seed numba's own per-thread Mersenne Twister with a value drawn here,
    so the draws stay a deterministic function of ``rng`` at the cost of one integer.
    """
    return int(rng.integers(0, 2**32))


@njit_cached
def seed_numba(seed: int) -> None:
    """Seed numba's internal generator (used by ``np.random.random()`` in kernels)."""
    np.random.seed(seed)


@njit_cached
def acceptance_probability(log_alpha: float) -> float:
    """``min(1, exp(log_alpha))``, with NaN mapped to 0 (the proposal is rejected).

    Parameters
    ----------
    log_alpha : float
        Log of the Metropolis-Hastings ratio.

    Returns
    -------
    float
        The acceptance probability in [0, 1].
    """
    if math.isnan(log_alpha):
        return 0.0
    return math.exp(min(0.0, log_alpha))


@njit_cached
def metropolis_accept(log_alpha: float, u: float) -> bool:
    """Metropolis-Hastings decision ``log(u) < log_alpha``; NaN and -inf reject.

    Parameters
    ----------
    log_alpha : float
        Log of the Metropolis-Hastings ratio.
    u : float
        A uniform draw on [0, 1).

    Returns
    -------
    bool
        True when the proposal is accepted.
    """
    if not (log_alpha > -math.inf):  # also False for NaN
        return False
    return bool(np.log(u) < log_alpha)


@njit_cached
def metropolis_hastings(
    logp_current: float, logp_proposal: float, log_q_ratio: float, u: float
) -> tuple[bool, float]:
    """Decide a Metropolis-Hastings step.

    Parameters
    ----------
    logp_current, logp_proposal : float
        Log densities of the current point and of the proposal (-inf or NaN rejects).
    log_q_ratio : float
        ``log q(y -> x) - log q(x -> y)`` (0 for a symmetric proposal).
    u : float
        A uniform draw on [0, 1).

    Returns
    -------
    accepted : bool
    accept_prob : float
        ``min(1, exp(log_alpha))``.
    """
    if logp_proposal > -math.inf:
        log_alpha = logp_proposal - logp_current + log_q_ratio
    else:
        log_alpha = -math.inf
    return metropolis_accept(log_alpha, u), acceptance_probability(log_alpha)


#: What a step that proposes to stay reports (R = 0: trivially accepted, nothing moves).
STAY = StepInfo(1.0, True, 0)


def step_result(current, proposed, accepted: bool, accept_prob: float, n_proposed: int):
    """The new state and the :class:`StepInfo` of a step that changed ``n_proposed`` sites."""
    if accepted:
        return proposed, StepInfo(accept_prob, True, n_proposed)
    return current, StepInfo(accept_prob, False, n_proposed)


@njit_cached
def sum_unmasked(values: np.ndarray, mask: np.ndarray) -> float:
    """Sum of ``values[i]`` over the ``i`` where ``mask[i]`` is False (all of them when
    ``mask`` is empty), with four running sums and no branch on the mask.

    A single running sum is one chain of dependent additions, each waiting for the one
    before; four interleaved ones are independent chains that the processor runs side by
    side. The rounding differs from ``np.sum`` only in the order of the additions.

    Parameters
    ----------
    values : ndarray of float64, shape (N,)
        Finite values.
    mask : ndarray of bool, shape (N,) or (0,)
        Entries to leave out.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> sum_unmasked(np.arange(5.0), np.array([False, True, False, False, True]))
    5.0
    >>> sum_unmasked(np.arange(5.0), np.zeros(0, np.bool_))
    10.0
    """
    n = values.size
    masked = mask.size > 0  # an empty mask reads no mask (and allocates none)
    s0 = s1 = s2 = s3 = 0.0
    m = n - n % 4
    for i in range(0, m, 4):
        s0 += 0.0 if masked and mask[i] else values[i]
        s1 += 0.0 if masked and mask[i + 1] else values[i + 1]
        s2 += 0.0 if masked and mask[i + 2] else values[i + 2]
        s3 += 0.0 if masked and mask[i + 3] else values[i + 3]
    for i in range(m, n):
        s0 += 0.0 if masked and mask[i] else values[i]
    return (s0 + s1) + (s2 + s3)
