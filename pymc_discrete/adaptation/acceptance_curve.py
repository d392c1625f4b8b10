"""The curve of acceptance against log scale, fitted, and where it meets a target.

:class:`~pymc_discrete.adaptation.scale.ScaleAdapter` freezes the scale where a curve
fitted to the last window of tuning meets the target acceptance rate
(:func:`fitted_crossing`). The curve is the optimal-scaling limit of the acceptance rate,
``2 Phi(-lambda R^k / 2)``, a line in log R under its link (``"scaling"``), or the
logistic curve (``"logit"``) for a signal that is no acceptance rate
(:class:`~pymc_discrete.adaptation.scale.PathLengthAdapter`); :data:`LINKS` holds both.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

__all__ = ["LINKS", "fitted_crossing"]


def _scaling_link(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``mu = 2 Phi(-exp(eta))`` and ``d mu / d eta``: the optimal-scaling curve (eta
    beyond 4 is as good as infinite: mu and its slope are 0 in double precision)."""
    scale = np.exp(np.minimum(eta, 4.0))
    return 2.0 * ndtr(-scale), -2.0 * np.exp(-0.5 * scale * scale) / _SQRT_2PI * scale


def _logistic_link(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``mu = 1 / (1 + exp(-eta))`` and ``d mu / d eta``."""
    mu = 1.0 / (1.0 + np.exp(-np.clip(eta, -700.0, 700.0)))
    return mu, mu * (1.0 - mu)


_SQRT_2PI = math.sqrt(2.0 * math.pi)
#: link name -> (inverse link with its derivative, link of a number in (0, 1))
LINKS = {
    "scaling": (_scaling_link, lambda a: math.log(-float(ndtri(a / 2.0)))),
    "logit": (_logistic_link, lambda a: math.log(a / (1.0 - a))),
}


def fitted_crossing(x: np.ndarray, y: np.ndarray, weights: np.ndarray, target: float,
                    link: str = "scaling") -> float:
    """Where a falling curve ``y = mu(b0 + b1 (x - mean x))``, fitted to ``y`` (values
    in [0, 1]) against ``x`` with ``weights``, meets ``target``, within ``[min x, max x]``;
    the weighted mean of ``x`` if the fitted curve does not fall, or ``x`` does not vary.

    ``link="scaling"``: ``mu(eta) = 2 Phi(-exp(eta))``, the shape of the acceptance rate
    against log R of the optimal-scaling limits (``2 Phi(-lambda R^k / 2)``, k = 3/2 for
    locally balanced proposals and 1/2 for the random walk), which a line in log R fits
    exactly; ``link="logit"``: the logistic curve. The fit maximises the weighted
    Bernoulli quasi-likelihood of ``y`` (fractional ``y`` allowed) by Fisher scoring,
    with a tiny ridge on ``b1`` so that separable data still give a finite slope.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import ndtr, ndtri
    >>> x = np.linspace(0.0, 3.0, 301)
    >>> y = 2.0 * ndtr(-0.05 * np.exp(1.5 * x) / 2.0)  # an LBP curve in x = log R
    >>> root = np.log(2.0 * -ndtri(0.574 / 2.0) / 0.05) / 1.5
    >>> bool(np.isclose(fitted_crossing(x, y, np.ones_like(x), 0.574), root, atol=1e-4))
    True
    >>> y = 1.0 / (1.0 + np.exp(3.0 * (x - 1.5)))  # a logistic curve, 1/2 at x = 1.5
    >>> round(fitted_crossing(x, y, np.ones_like(x), 0.5, link="logit"), 4)
    1.5
    """
    inverse, forward = LINKS[link]
    mean_x = float(np.average(x, weights=weights))
    z = x - mean_x
    if not float(np.average(z * z, weights=weights)) > 1e-12 * max(1.0, mean_x * mean_x):
        return mean_x
    mean_y = min(max(float(np.average(y, weights=weights)), 1e-6), 1.0 - 1e-6)
    b0, b1 = forward(mean_y), 0.0
    ridge = 1e-6 * float(weights.sum())
    for _ in range(100):
        mu, slope = inverse(b0 + b1 * z)
        mu = np.clip(mu, 1e-12, 1.0 - 1e-12)
        variance = mu * (1.0 - mu)
        info = weights * slope * slope / variance
        score = weights * slope * (y - mu) / variance
        g0, g1 = float(score.sum()), float((score * z).sum()) - ridge * b1
        h00, h01 = float(info.sum()), float((info * z).sum())
        h11 = float((info * z * z).sum()) + ridge
        det = h00 * h11 - h01 * h01
        if not det > 0.0:
            break
        d0 = (h11 * g0 - h01 * g1) / det
        d1 = (h00 * g1 - h01 * g0) / det
        b0, b1 = b0 + d0, b1 + d1
        if not (math.isfinite(b0) and math.isfinite(b1)):
            return mean_x
        if max(abs(d0), abs(d1)) < 1e-10:
            break
    # mu falls with eta for the scaling link and rises for the logistic one
    falls = b1 > 0.0 if link == "scaling" else b1 < 0.0
    if not falls:
        return mean_x
    solution = mean_x + (forward(target) - b0) / b1
    return min(max(solution, float(x.min())), float(x.max()))
