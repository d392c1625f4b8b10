"""Adaptive locally balanced Metropolis-Hastings step methods for discrete variables in PyMC.

>>> import pymc as pm, pymc_discrete as pmd
>>> with pm.Model():
...     g = pm.Bernoulli("g", 0.2, shape=100)
...     step = pmd.ALBP([g])  # doctest: +SKIP
"""

from pymc_discrete.plots import plot_moves, plot_tuning
from pymc_discrete.pymc import (
    ALBP,
    ARWM,
    PAS,
    BlockedGibbs,
    ChainGibbs,
    CollapsedNUTS,
    CountLBP,
    JointGibbs,
    NotCollapsible,
    PairedFlip,
    Recommendation,
    RelaxationError,
    RelaxationWarning,
    TuningWarning,
    exact_mode,
    is_registered,
    marginalize,
    recommend,
    recover_discrete,
    register,
    unregister,
)
from pymc_discrete.samcmc import SAMCMC

__version__ = "0.1.0"

__all__ = [
    "ALBP",
    "ARWM",
    "BlockedGibbs",
    "ChainGibbs",
    "CollapsedNUTS",
    "CountLBP",
    "JointGibbs",
    "NotCollapsible",
    "PAS",
    "PairedFlip",
    "Recommendation",
    "RelaxationError",
    "RelaxationWarning",
    "SAMCMC",
    "TuningWarning",
    "exact_mode",
    "is_registered",
    "marginalize",
    "plot_moves",
    "plot_tuning",
    "recommend",
    "recover_discrete",
    "register",
    "unregister",
]
