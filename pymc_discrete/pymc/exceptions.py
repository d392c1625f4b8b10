"""The warnings and errors the step methods raise (one place, so users can filter them)."""

from __future__ import annotations

__all__ = ["RelaxationError", "RelaxationWarning", "TuningWarning"]


class RelaxationError(ValueError):
    """The model's log density cannot be relaxed to a differentiable function of its
    discrete values (the message names the operation)."""


class RelaxationWarning(UserWarning):
    """The gradient proposal was unavailable and the step fell back to exact ratios."""


class TuningWarning(UserWarning):
    """Tuning could not bring the acceptance rate near its target."""
