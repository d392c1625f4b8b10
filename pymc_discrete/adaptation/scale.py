"""Stateful tuner of the scale R of a step method, built on dual averaging.

It runs only while tuning, restarts per chain, and freezes an averaged scale when tuning
stops (or after the number of tuning draws announced at the start of the chain): the
geometric mean of the iterates over the second half of tuning, not the last noisy one.
"""

from __future__ import annotations

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
        self.tuning = self.adapt and n_tune != 0

    def update(self, accept_prob: float) -> None:
        """Record the acceptance probability of one draw and move the scale.

        Does nothing once tuning has stopped.
        """
        if not self.tuning:
            return
        self._state = dual_averaging_update(
            self._state,
            accept_prob,
            self.target_accept,
            math.log(self.lower),
            math.log(self.upper),
        )
        self.scale = min(max(math.exp(self._state.log_scale), self.lower), self.upper)
        if self.n_tune is not None and self._state.step > self.n_tune // 2:
            self._late_sum += self._state.log_scale
            self._late_accept += accept_prob
            self._late_count += 1
        if self.n_tune is not None and self._state.step >= self.n_tune:
            self.stop()

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
            and self.scale <= self.lower
            and self.late_acceptance < self.target_accept - margin
        )

    def stop(self) -> None:
        """Freeze the averaged scale; later updates leave it unchanged.

        With a known number of tuning draws the frozen value is the geometric mean of the
        iterates of the second half of tuning (the first half is the transient from the
        initial scale); otherwise it is the dual-averaging average.
        """
        if self.tuning and self._late_count > 0:
            final = math.exp(self._late_sum / self._late_count)
        elif self.tuning and self._state.step > 0:
            final = dual_averaging_final(self._state)
        else:
            final = self.scale
        self.scale = min(max(final, self.lower), self.upper)
        self.tuning = False
