"""Whether a first-order (gradient) proposal can reach every move the target allows.

``proposal="auto"`` (:class:`~pymc_discrete.pymc.steps.informed_step.InformedStep`) weighs
the gradient's ratios against exact ones by how often their proposals are accepted. An
average hides what a single site suffers: where the first-order estimate of one site's
local log-ratio is far below the exact one (a log density convex in that site, such as
the log-determinant of a covariance that grows with an indicator), the locally balanced
proposal almost never offers that move, although the target gives it a fair chance. The
chain then never visits the other value of that site, or leaves it only rarely once
there, while the other sites move and the average acceptance looks normal.

This module compares the two proposals move by move at a given state. It is pure numpy
(on the kernels' weight functions), so that every step's automatic choice calls the same
function.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.weights import balanced_weights

__all__ = [
    "PLAUSIBLE_LOG_RATIO",
    "UNDERWEIGHT_LOG_MARGIN",
    "move_log_probabilities",
    "underweighted_moves",
]

#: A move is *plausible* when its exact local log-ratio is at least this: given the
#: other sites, the new value is at least a thousandth as probable as the current one
#: (a move the exact proposal offers, and the target accepts, often enough to matter
#: over a chain of thousands of draws).
PLAUSIBLE_LOG_RATIO = float(np.log(1e-3))

#: A plausible move is *underweighted* when the gradient's proposal offers it more than
#: this many e-folds (a factor of a thousand) less often than the exact proposal does.
#: Metropolis-Hastings keeps the chain correct whatever the proposal, so only a factor
#: that leaves the move practically never offered in a chain of ordinary length
#: (rather than a poorer estimate) is a reason to refuse the gradient.
UNDERWEIGHT_LOG_MARGIN = float(np.log(1e3))


def move_log_probabilities(ratios: np.ndarray, code: int) -> np.ndarray:
    """Log-probabilities of the single-site moves of a locally balanced proposal.

    The probability of the move (i, c) is ``w(i, c) / S``, ``w = g(exp(d))`` its weight
    and ``S`` the total over every move: the first pick of ALBP and every move of a
    path of PAS draw a move this way.

    Parameters
    ----------
    ratios : ndarray of float64, shape (N,) or (N, K)
        Local log-ratios in the layout of :mod:`~pymc_discrete.kernels.ratios` (NaN or
        -inf: an impossible move).
    code : int
        Weight function code (:data:`~pymc_discrete.kernels.weights.WEIGHT_CODES`).

    Returns
    -------
    ndarray of float64
        The shape of ``ratios``; -inf for impossible moves (and for moves whose weight
        is too small to represent beside the largest), all -inf if no move is possible.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(np.exp(move_log_probabilities(np.array([0.0, 0.0, -np.inf]), 1)), 3)
    array([0.5, 0.5, 0. ])
    """
    d = np.ascontiguousarray(ratios, dtype=np.float64)
    weights, _ = balanced_weights(d, code)  # on one scale: the scale cancels below
    total = weights.sum()
    with np.errstate(divide="ignore"):
        if not total > 0.0:
            return np.full(d.shape, -np.inf)
        return np.log(weights) - np.log(total)


def underweighted_moves(
    estimated: np.ndarray,
    exact: np.ndarray,
    code: int,
    plausible: float = PLAUSIBLE_LOG_RATIO,
    margin: float = UNDERWEIGHT_LOG_MARGIN,
) -> np.ndarray:
    """The plausible moves that a proposal built on estimated local ratios offers far
    less often than the proposal built on the exact ones, at one state.

    Proposal probabilities (:func:`move_log_probabilities`) are compared rather than
    the ratios themselves: an estimate off by the same amount for every move proposes
    as the exact ratios do (the offset cancels in ``w / S``), while a few moves whose
    estimate is far too high starve every other move of proposals as surely as an
    estimate far too low starves its own.

    Parameters
    ----------
    estimated, exact : ndarray of float64, shape (N,) or (N, K)
        Local log-ratios at one state: the estimate (e.g. the relaxation's gradient) and
        the exact ones, in the same layout.
    code : int
        Weight function code of the proposal.
    plausible : float
        A move counts only if its exact log-ratio is at least this
        (:data:`PLAUSIBLE_LOG_RATIO`).
    margin : float
        A move is flagged when the estimate's log-probability of proposing it is below
        the exact proposal's by more than this (:data:`UNDERWEIGHT_LOG_MARGIN`).

    Returns
    -------
    ndarray of bool
        The shape of ``ratios``: True for each flagged move.

    Examples
    --------
    >>> import numpy as np
    >>> exact = np.array([-3.0, -3.0, 0.5])
    >>> underweighted_moves(np.array([-2.5, -20.0, 0.7]), exact, 0).tolist()
    [False, True, False]
    >>> underweighted_moves(exact - 10.0, exact, 1).tolist()  # a common offset cancels
    [False, False, False]
    """
    exact = np.asarray(exact, dtype=np.float64)
    log_q_estimated = move_log_probabilities(estimated, code)
    log_q_exact = move_log_probabilities(exact, code)
    with np.errstate(invalid="ignore"):
        allowed = exact >= plausible  # NaN (no move) and -inf compare False
        return allowed & (log_q_estimated < log_q_exact - margin)
