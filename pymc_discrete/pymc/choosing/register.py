"""Opt-in registration of the package's automatic step choice in PyMC's step assignment."""

from __future__ import annotations

from pymc.step_methods import STEP_METHODS

from pymc_discrete.pymc.choosing.auto_step import AutoStep

__all__ = ["register", "unregister", "is_registered"]


def register() -> None:
    """Make ``pm.sample()`` choose the package's step for Bernoulli and Categorical
    variables automatically.

    PyMC assigns each variable the first step method of highest competence in its
    registry; :class:`~pymc_discrete.pymc.choosing.auto_step.AutoStep` is put at the front, and when
    PyMC builds it for the discrete variables it returns the step
    :func:`~pymc_discrete.recommend` chooses from the model's structure (BlockedGibbs
    when few colours cover the block, else ALBP), logging why. Calling it twice has no
    further effect; :func:`unregister` undoes it.

    Examples
    --------
    >>> import pymc_discrete as pmd
    >>> pmd.register()
    >>> pmd.is_registered()
    True
    >>> pmd.unregister()
    """
    if AutoStep not in STEP_METHODS:
        STEP_METHODS.insert(0, AutoStep)


def unregister() -> None:
    """Restore PyMC's default step-method assignment (undo :func:`register`).

    Examples
    --------
    >>> import pymc_discrete as pmd
    >>> pmd.register(); pmd.unregister(); pmd.is_registered()
    False
    """
    while AutoStep in STEP_METHODS:
        STEP_METHODS.remove(AutoStep)


def is_registered() -> bool:
    """Whether :func:`register` is in effect.

    Examples
    --------
    >>> import pymc_discrete as pmd
    >>> pmd.is_registered()
    False
    """
    return AutoStep in STEP_METHODS
