"""Pure Metropolis-Hastings kernels on discrete spaces: numpy and numba only, no PyMC."""

from pymc_discrete.kernels.binary import (
    BinaryLBState,
    BinaryRWState,
    albp_step,
    arwm_step,
    init_lb_state,
)
from pymc_discrete.kernels.categorical import (
    CategoricalLBState,
    CategoricalRWState,
    categorical_albp_step,
    categorical_arwm_step,
    init_categorical_lb_state,
)
from pymc_discrete.kernels.common import StepInfo, probabilistic_round
from pymc_discrete.kernels.path import (
    PathState,
    init_path_state,
    pafs_step,
    pas_step,
)
from pymc_discrete.kernels.sampling import ordered_picks_logprob, sample_ordered
from pymc_discrete.kernels.weights import WEIGHT_CODES, balanced_weights, weight_code

__all__ = [
    "BinaryLBState",
    "BinaryRWState",
    "CategoricalLBState",
    "CategoricalRWState",
    "PathState",
    "StepInfo",
    "WEIGHT_CODES",
    "albp_step",
    "arwm_step",
    "categorical_albp_step",
    "categorical_arwm_step",
    "init_categorical_lb_state",
    "init_lb_state",
    "init_path_state",
    "pafs_step",
    "pas_step",
    "balanced_weights",
    "ordered_picks_logprob",
    "probabilistic_round",
    "sample_ordered",
    "weight_code",
]
