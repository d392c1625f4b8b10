"""Opt-in registration of ALBP as PyMC's automatic step method for binary variables."""

from __future__ import annotations

from pymc.step_methods import STEP_METHODS

from pymc_discrete.pymc.albp import ALBP

__all__ = ["register", "unregister", "is_registered"]


def register() -> None:
    """Make ``pm.sample()`` assign :class:`ALBP` to Bernoulli variables automatically.

    PyMC picks the first step method of highest competence in its registry, and its own
    ``BinaryGibbsMetropolis`` also claims to be ideal for Bernoulli variables, so ALBP is
    put at the front. Calling it twice has no further effect; :func:`unregister` undoes it.

    Examples
    --------
    >>> import pymc_discrete as pmd
    >>> pmd.register()
    >>> pmd.is_registered()
    True
    >>> pmd.unregister()
    """
    if ALBP not in STEP_METHODS:
        STEP_METHODS.insert(0, ALBP)


def unregister() -> None:
    """Restore PyMC's default step-method assignment (undo :func:`register`).

    Examples
    --------
    >>> import pymc_discrete as pmd
    >>> pmd.register(); pmd.unregister(); pmd.is_registered()
    False
    """
    while ALBP in STEP_METHODS:
        STEP_METHODS.remove(ALBP)


def is_registered() -> bool:
    """Whether :func:`register` is in effect.

    Examples
    --------
    >>> import pymc_discrete as pmd
    >>> pmd.is_registered()
    False
    """
    return ALBP in STEP_METHODS
