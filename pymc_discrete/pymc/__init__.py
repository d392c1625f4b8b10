"""PyMC glue: the only part of the package that imports PyMC or PyTensor."""

from pymc_discrete.pymc.register import is_registered, register, unregister
from pymc_discrete.pymc.relaxation import RelaxationError
from pymc_discrete.pymc.steps import ALBP, ARWM, PAS, RelaxationWarning, TuningWarning

__all__ = [
    "ALBP",
    "ARWM",
    "PAS",
    "RelaxationError",
    "RelaxationWarning",
    "TuningWarning",
    "is_registered",
    "register",
    "unregister",
]
