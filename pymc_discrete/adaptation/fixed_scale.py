"""A scale nothing tunes, behind the tuner's interface.

Gibbs steps report a scale too (the number of colours, or of joint states), and their
lifecycle calls the same methods as that of the tuned steps; :class:`FixedScale` has
those methods of :class:`~pymc_discrete.adaptation.scale.ScaleAdapter` and does nothing
in them.
"""

from __future__ import annotations

__all__ = ["FixedScale"]


class FixedScale:
    """A scale nothing tunes (a Gibbs step's number of colours or of joint states), with
    the interface of :class:`ScaleAdapter` that a step's lifecycle reads.

    Parameters
    ----------
    scale : float
        The scale, at every draw of every chain.

    Examples
    --------
    >>> fixed = FixedScale(2.0)
    >>> fixed.start(n_tune=100); fixed.update(0.3); fixed.stop()
    >>> fixed.scale, fixed.adapt, fixed.tuning
    (2.0, False, False)
    """

    def __init__(self, scale: float) -> None:
        self.initial_scale = self.scale = self.lower = self.upper = float(scale)
        #: nothing is tuned: no target, no adaptation, never in a tuning phase
        self.target_accept = None
        self.adapt = False
        self.tuning = False
        self.n_tune: int | None = None

    def start(self, n_tune: int | None) -> None:
        """A new chain: the scale is the fixed one."""
        self.n_tune = n_tune
        self.scale = self.initial_scale

    def update(self, accept_prob: float) -> None:
        """Nothing to tune."""

    def stop(self) -> None:
        """Nothing to freeze."""

    def stuck_below_target(self) -> bool:
        """Never: there is no target."""
        return False

    def snapshot(self) -> dict:
        """The whole state (as :meth:`ScaleAdapter.snapshot`)."""
        return dict(vars(self))

    def restore(self, snapshot: dict) -> None:
        """Put back what :meth:`snapshot` returned."""
        unknown = set(snapshot) - set(vars(self))
        if unknown:
            raise ValueError(f"not a FixedScale snapshot: unknown fields {sorted(unknown)}")
        vars(self).update(snapshot)
