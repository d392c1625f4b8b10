"""Opt-in registration of the package's automatic step choice in PyMC's step assignment."""

from __future__ import annotations

import os

import pymc
import pytensor
from pymc import sampling
from pymc.sampling import mcmc
from pymc.step_methods import STEP_METHODS

from pymc_discrete.pymc.choosing.assignment import wrap_assign_step_methods
from pymc_discrete.pymc.choosing.auto_step import AutoStep
from pymc_discrete.pymc.choosing.convergence_checks import wrap_convergence_checks
from pymc_discrete.pymc.choosing.summed_route import wrap_sample

__all__ = ["register", "unregister", "is_registered"]

#: PyTensor's fast-math setting and ``PYTENSOR_FLAGS`` before :func:`register` turned
#: fast math off (None: not changed)
_before: tuple[bool, str | None] | None = None

#: where PyMC's ``sample`` is reached from (``pm.sample``, ``pymc.sampling.sample``,
#: ``pymc.sampling.mcmc.sample``): each is wrapped while registered
_SAMPLE_HOMES = (pymc, sampling, mcmc)
#: PyMC's own ``sample`` (None: not wrapped)
_pymc_sample = None
#: PyMC's own ``assign_step_methods``, which ``pm.sample`` calls (None: not wrapped)
_pymc_assign = None
#: PyMC's own ``run_convergence_checks``, which ``pm.sample`` calls (None: not wrapped)
_pymc_checks = None


def register() -> None:
    """Make ``pm.sample()`` choose the package's step for Bernoulli and Categorical
    variables automatically.

    PyMC assigns each variable the first step method of highest competence in its
    registry; :class:`~pymc_discrete.pymc.choosing.auto_step.AutoStep` is put at the front, and when
    PyMC builds it for the discrete variables it returns the step
    :func:`~pymc_discrete.recommend` chooses from the model's structure (BlockedGibbs
    when few colours cover the block, else ALBP), logging why. Calling it twice has no
    further effect; :func:`unregister` undoes it.

    While registered, PyTensor compiles without numba's fast-math flags
    (``pytensor.config.numba__fastmath = False``), also for the functions PyMC compiles
    itself (NUTS's log density and gradient), and in the processes ``pm.sample`` starts
    with spawn or forkserver (through ``PYTENSOR_FLAGS``): with them, the same function
    compiled in the process and loaded from PyTensor's disk cache can differ in the last
    bits, and the same ``random_seed`` would give other draws on a machine with a warm
    cache (:mod:`~pymc_discrete.pymc.model.reproducible`). The package's own functions
    are always compiled without them.

    PyMC's assignment itself (``pymc.sampling.mcmc.assign_step_methods``) is made the
    same way in time linear in the number of variables (PyMC's own grows with its
    square on a model written one variable per site:
    :mod:`~pymc_discrete.pymc.choosing.assignment`), and so are its convergence checks
    after sampling (``pymc.sampling.mcmc.run_convergence_checks``, the same warnings:
    :mod:`~pymc_discrete.pymc.choosing.convergence_checks`). Within a registered
    ``pm.sample``, the model's initial point is computed once, PyMC's own to the bit
    (:mod:`~pymc_discrete.pymc.choosing.initial_points`), the trace records the scalar
    variables a row at a time (:mod:`~pymc_discrete.pymc.choosing.scalar_trace`), and
    Python's garbage collector makes full collections rarer, its thresholds restored when
    the call returns (:mod:`~pymc_discrete.pymc.choosing.gc_thresholds`).

    ``pm.sample`` is wrapped too (``from pymc import sample`` done before keeps PyMC's
    own): with ``nuts_sampler="nutpie" | "numpyro" | "blackjax"`` and no step, where the
    discrete variables sum out, that NUTS samples :func:`~pymc_discrete.marginalize`'s
    model and the discrete draws are added exactly
    (:mod:`~pymc_discrete.pymc.choosing.summed_route`); with no sampler named and nutpie
    installed, nutpie does so for a run long enough to pay back its compilation
    (:mod:`~pymc_discrete.pymc.choosing.nutpie_choice`).

    Examples
    --------
    >>> import pymc_discrete as pmd
    >>> pmd.register()
    >>> pmd.is_registered()
    True
    >>> pmd.unregister()
    """
    global _before, _pymc_sample, _pymc_assign, _pymc_checks
    if AutoStep not in STEP_METHODS:
        STEP_METHODS.insert(0, AutoStep)
    if _pymc_assign is None:
        _pymc_assign = mcmc.assign_step_methods
        mcmc.assign_step_methods = wrap_assign_step_methods(_pymc_assign)
    if _pymc_checks is None:
        _pymc_checks = mcmc.run_convergence_checks
        mcmc.run_convergence_checks = wrap_convergence_checks(_pymc_checks)
    if _pymc_sample is None:
        _pymc_sample = mcmc.sample
        routed = wrap_sample(_pymc_sample)
        for home in _SAMPLE_HOMES:
            if getattr(home, "sample", None) is _pymc_sample:
                home.sample = routed
    if _before is None:
        flags = os.environ.get("PYTENSOR_FLAGS")
        _before = (bool(pytensor.config.numba__fastmath), flags)
        pytensor.config.numba__fastmath = False
        os.environ["PYTENSOR_FLAGS"] = ",".join(f for f in (flags, "numba__fastmath=False")
                                                if f)


def unregister() -> None:
    """Restore PyMC's default step-method assignment (undo :func:`register`).

    Examples
    --------
    >>> import pymc_discrete as pmd
    >>> import pytensor
    >>> before = pytensor.config.numba__fastmath
    >>> pmd.register(); pmd.unregister(); pmd.is_registered()
    False
    >>> pytensor.config.numba__fastmath == before
    True
    """
    global _before, _pymc_sample, _pymc_assign, _pymc_checks
    while AutoStep in STEP_METHODS:
        STEP_METHODS.remove(AutoStep)
    if _pymc_assign is not None:
        if getattr(mcmc.assign_step_methods, "__wrapped_by_pymc_discrete__", False):
            mcmc.assign_step_methods = _pymc_assign
        _pymc_assign = None
    if _pymc_checks is not None:
        if getattr(mcmc.run_convergence_checks, "__wrapped_by_pymc_discrete__", False):
            mcmc.run_convergence_checks = _pymc_checks
        _pymc_checks = None
    if _pymc_sample is not None:
        for home in _SAMPLE_HOMES:
            if getattr(getattr(home, "sample", None), "__wrapped_by_pymc_discrete__", False):
                home.sample = _pymc_sample
        _pymc_sample = None
    if _before is not None:
        fastmath, flags = _before
        pytensor.config.numba__fastmath = fastmath
        if flags is None:
            os.environ.pop("PYTENSOR_FLAGS", None)
        else:
            os.environ["PYTENSOR_FLAGS"] = flags
        _before = None


def is_registered() -> bool:
    """Whether :func:`register` is in effect.

    Examples
    --------
    >>> import pymc_discrete as pmd
    >>> pmd.is_registered()
    False
    """
    return AutoStep in STEP_METHODS
