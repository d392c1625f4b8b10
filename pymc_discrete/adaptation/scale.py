"""Stateful tuner of the scale R of a step method, built on dual averaging.

It runs only while tuning, restarts per chain, and freezes a scale when tuning stops (or
after the number of tuning draws announced at the start of the chain). The iterates of
dual averaging wander around the scale of the target rate (each step's acceptance
probability is a noisy signal), so the frozen scale is not the last iterate but the
one a least-squares line through the second half of tuning says reaches the target:
acceptance probability against log scale, solved for the target and kept within the
range of scales seen there. Where the line does not fall with the scale (acceptance
flat, or rising as on parity-like targets) the geometric mean of those iterates is used.
"""

from __future__ import annotations

import copy
import math

from pymc_discrete.adaptation.dual_averaging import (
    DualAveragingState,
    dual_averaging_final,
    dual_averaging_init,
    dual_averaging_update,
)

__all__ = ["ScaleAdapter"]


class ScaleAdapter:
    """Tune a scale in ``[lower, upper]`` toward a target acceptance rate.

    Parameters
    ----------
    target_accept : float
        Target acceptance rate in (0, 1).
    initial_scale : float
        Scale at the start of every tuning phase.
    lower, upper : float
        Bounds of the scale (for R: 1 and the number of sites).
    adapt : bool
        If False the scale stays at ``initial_scale``.

    Examples
    --------
    >>> tuner = ScaleAdapter(0.574, 1.0, 1.0, 800.0)
    >>> tuner.start(n_tune=2)
    >>> tuner.update(1.0); tuner.update(1.0)
    >>> tuner.tuning
    False
    """

    def __init__(
        self,
        target_accept: float,
        initial_scale: float,
        lower: float,
        upper: float,
        adapt: bool = True,
    ) -> None:
        if not 0.0 < target_accept < 1.0:
            raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
        if not (lower <= initial_scale <= upper):
            raise ValueError(
                f"initial_scale must lie in [{lower:g}, {upper:g}], got {initial_scale!r}"
            )
        self.target_accept = float(target_accept)
        self.initial_scale = float(initial_scale)
        self.lower = float(lower)
        self.upper = float(upper)
        self.adapt = bool(adapt)
        self.start(None)

    def start(self, n_tune: int | None) -> None:
        """Restart tuning for a new chain.

        Parameters
        ----------
        n_tune : int or None
            Number of tuning draws of the chain, if known; tuning freezes by itself
            after that many updates. ``0`` means the chain does not tune.
        """
        self.n_tune = n_tune
        self.scale = self.initial_scale
        self._state: DualAveragingState = dual_averaging_init(self.initial_scale)
        self._late_sum = 0.0
        self._late_accept = 0.0
        self._late_count = 0
        # sums for the line of acceptance against log scale over the second half
        self._late_xx = 0.0
        self._late_xy = 0.0
        self._late_min = math.inf
        self._late_max = -math.inf
        self.tuning = self.adapt and n_tune != 0

    def update(self, accept_prob: float) -> None:
        """Record the acceptance probability of one draw and move the scale.

        Does nothing once tuning has stopped.
        """
        if not self.tuning:
            return
        used = math.log(self.scale)  # the scale that produced this acceptance probability
        self._state = dual_averaging_update(
            self._state,
            accept_prob,
            self.target_accept,
            math.log(self.lower),
            math.log(self.upper),
        )
        self.scale = min(max(math.exp(self._state.log_scale), self.lower), self.upper)
        if self.n_tune is not None and self._state.step > self.n_tune // 2:
            self._late_sum += used
            self._late_accept += accept_prob
            self._late_count += 1
            self._late_xx += used * used
            self._late_xy += used * accept_prob
            self._late_min = min(self._late_min, used)
            self._late_max = max(self._late_max, used)
        if self.n_tune is not None and self._state.step >= self.n_tune:
            self.stop()

    def snapshot(self) -> dict:
        """Everything the tuner holds (settings, scale, averages), as a deep copy.

        :meth:`restore` puts a snapshot back, so that a chain can be saved and resumed
        exactly where its tuning was (or with the scale it froze).

        Examples
        --------
        >>> tuner = ScaleAdapter(0.574, 1.0, 1.0, 800.0)
        >>> tuner.start(n_tune=10); tuner.update(1.0)
        >>> saved = tuner.snapshot()
        >>> tuner.update(1.0)
        >>> tuner.restore(saved); tuner.snapshot() == saved
        True
        """
        return copy.deepcopy(vars(self))

    def restore(self, snapshot: dict) -> None:
        """Put back what :meth:`snapshot` returned (a deep copy of it)."""
        unknown = set(snapshot) - set(vars(self))
        if unknown:
            raise ValueError(f"not a snapshot of a ScaleAdapter: unknown fields {sorted(unknown)}")
        for name, value in copy.deepcopy(snapshot).items():
            setattr(self, name, value)

    @property
    def late_acceptance(self) -> float:
        """Mean acceptance probability over the second half of tuning (NaN before)."""
        return self._late_accept / self._late_count if self._late_count else float("nan")

    def stuck_below_target(self, margin: float = 0.15) -> bool:
        """Whether tuning ended at the lower bound with the acceptance rate still more
        than ``margin`` below the target: the target was out of reach (a smaller scale
        would be needed, or the acceptance does not fall as the scale grows)."""
        return (
            self._late_count > 0
            and self.scale <= self.lower * (1.0 + 1e-9)  # exp(log) rounds above it
            and self.late_acceptance < self.target_accept - margin
        )

    #: fewer late updates than this: no line, the geometric mean
    _MIN_FOR_LINE = 20

    def _late_solution(self) -> float:
        """Log scale at which the least-squares line of the late acceptance probabilities
        against log scale meets the target, within the late range; the mean log scale
        if the line does not fall."""
        n = self._late_count
        mean_x = self._late_sum / n
        if n < self._MIN_FOR_LINE:
            return mean_x
        mean_y = self._late_accept / n
        var_x = self._late_xx / n - mean_x * mean_x
        if not var_x > 1e-12 * max(1.0, mean_x * mean_x):
            return mean_x
        slope = (self._late_xy / n - mean_x * mean_y) / var_x
        if not slope < 0.0:
            return mean_x
        solution = mean_x + (self.target_accept - mean_y) / slope
        return min(max(solution, self._late_min), self._late_max)

    def stop(self) -> None:
        """Freeze the averaged scale; later updates leave it unchanged.

        With a known number of tuning draws the frozen value comes from the second half
        of tuning (the first half is the transient from the initial scale): the scale
        where the least-squares line of acceptance against log scale meets the target
        (module docstring); otherwise it is the dual-averaging average.
        """
        if self.tuning and self._late_count > 0:
            final = math.exp(self._late_solution())
        elif self.tuning and self._state.step > 0:
            final = dual_averaging_final(self._state)
        else:
            final = self.scale
        self.scale = min(max(final, self.lower), self.upper)
        self.tuning = False
