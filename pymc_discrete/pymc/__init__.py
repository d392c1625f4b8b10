"""PyMC glue: the only part of the package that imports PyMC or PyTensor."""

from pymc_discrete.pymc.choosing.recommend import Recommendation, recommend
from pymc_discrete.pymc.choosing.register import is_registered, register, unregister
from pymc_discrete.pymc.exceptions import RelaxationError, RelaxationWarning, TuningWarning
from pymc_discrete.pymc.model.reproducible import exact_mode
from pymc_discrete.pymc.steps.albp import ALBP
from pymc_discrete.pymc.steps.arwm import ARWM
from pymc_discrete.pymc.steps.chain import ChainGibbs
from pymc_discrete.pymc.steps.count_step import CountLBP
from pymc_discrete.pymc.steps.gibbs import BlockedGibbs
from pymc_discrete.pymc.steps.joint import JointGibbs
from pymc_discrete.pymc.steps.paired import PairedFlip
from pymc_discrete.pymc.steps.pas import PAS
from pymc_discrete.pymc.summing.collapsed_nuts import CollapsedNUTS
from pymc_discrete.pymc.summing.collapsible import NotCollapsible
from pymc_discrete.pymc.summing.marginal_model import marginalize
from pymc_discrete.pymc.summing.recover import recover_discrete

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
    "exact_mode",
    "is_registered",
    "marginalize",
    "recommend",
    "recover_discrete",
    "register",
    "unregister",
]
