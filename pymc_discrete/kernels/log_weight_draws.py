"""One draw per row of unnormalised log-weights, by the inverse of the cumulative weights.

A site of K values is drawn with one uniform: its weights are shifted by their largest
(so the largest is exp(0) = 1 and none overflows), summed cumulatively, and the drawn
value is the first whose cumulative weight reaches the uniform times the total. A
Gumbel-max draw takes K uniforms and 2K logarithms a site for the same distribution.
"""

from __future__ import annotations

import numpy as np

__all__ = ["draw_from_log_weights"]


def draw_from_log_weights(table: np.ndarray, uniforms: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The value index drawn in every row of ``table``, and every row's log-sum-exp.

    Parameters
    ----------
    table : ndarray, shape (..., K)
        Unnormalised log-weights of each row's K values; -inf where a value is
        impossible.
    uniforms : ndarray, shape (...)
        One uniform a row. In (0, 1], a value of weight zero (a flat step of the
        cumulative weights) is never drawn; in [0, 1), a row's first value is drawn at
        a uniform of exactly 0 whatever its weight. A row whose weights are all -inf
        draws its first value.

    Returns
    -------
    drawn : ndarray of int, shape (...)
    log_mass : ndarray, shape (...)
        ``log sum_v exp(table[..., v])`` (-inf for a row of no possible value).

    Examples
    --------
    >>> import numpy as np
    >>> table = np.log([[0.2, 0.0, 0.8], [1.0, 1.0, 1.0]])
    >>> drawn, log_mass = draw_from_log_weights(table, np.array([0.5, 0.1]))
    >>> drawn.tolist(), np.exp(log_mass).round(12).tolist()
    ([2, 0], [1.0, 3.0])
    """
    top = table.max(axis=-1, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    with np.errstate(under="ignore", divide="ignore"):
        cumulative = np.exp(table - top)
    np.cumsum(cumulative, axis=-1, out=cumulative)
    total = cumulative[..., -1]
    drawn = (cumulative < (uniforms * total)[..., None]).sum(axis=-1)
    np.minimum(drawn, table.shape[-1] - 1, out=drawn)
    with np.errstate(divide="ignore"):
        return drawn, np.log(total) + top[..., 0]
