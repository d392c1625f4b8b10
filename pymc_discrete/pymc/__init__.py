"""PyMC glue: the only part of the package that imports PyMC or PyTensor."""

from pymc_discrete.pymc.albp import ALBP
from pymc_discrete.pymc.arwm import ARWM
from pymc_discrete.pymc.chain import ChainGibbs
from pymc_discrete.pymc.collapse import CollapsedNUTS, NotCollapsible
from pymc_discrete.pymc.count_step import CountLBP
from pymc_discrete.pymc.exceptions import RelaxationError, RelaxationWarning, TuningWarning
from pymc_discrete.pymc.gibbs import BlockedGibbs
from pymc_discrete.pymc.joint import JointGibbs
from pymc_discrete.pymc.paired import PairedFlip
from pymc_discrete.pymc.pas import PAS
from pymc_discrete.pymc.recommend import Recommendation, recommend
from pymc_discrete.pymc.register import is_registered, register, unregister

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
    "TuningWarning",
    "is_registered",
    "recommend",
    "register",
    "unregister",
]
