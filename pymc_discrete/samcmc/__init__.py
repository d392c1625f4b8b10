"""Sample Adaptive MCMC (Zhu, 2019) for models whose free variables are all continuous.

SAMCMC shares nothing with the discrete samplers but the package: its kernel
(:mod:`pymc_discrete.samcmc.kernel`, numpy and numba only) keeps a population of points
and substitutes at most one per iteration; its step method
(:mod:`pymc_discrete.samcmc.step`) runs that kernel inside ``pm.sample`` and must own the
whole model.
"""

from pymc_discrete.samcmc.kernel import (
    PopulationState,
    SAInfo,
    init_population,
    samcmc_step,
    substitution_log_weights,
)
from pymc_discrete.samcmc.step import SAMCMC

__all__ = [
    "SAMCMC",
    "PopulationState",
    "SAInfo",
    "init_population",
    "samcmc_step",
    "substitution_log_weights",
]
