"""Pure Metropolis-Hastings kernels on discrete spaces: numpy and numba only, no PyMC.

One module per algorithm (its states, ``init`` and ``step``; binary sites are a fast
path inside it): :mod:`~pymc_discrete.kernels.albp` (and its compiled multi-step loop
:mod:`~pymc_discrete.kernels.albp_loop`), :mod:`~pymc_discrete.kernels.arwm`,
:mod:`~pymc_discrete.kernels.pas`. Shared pieces: :mod:`~pymc_discrete.kernels.weights`
(locally balanced weights), :mod:`~pymc_discrete.kernels.ratios` (the layouts of the
local log-ratios a kernel takes), :mod:`~pymc_discrete.kernels.sampling` (ordered picks),
:mod:`~pymc_discrete.kernels.sum_tree`, :mod:`~pymc_discrete.kernels.common` (number of
changes, Metropolis-Hastings decision, step info). Exact ratios by graph colouring:
:mod:`~pymc_discrete.kernels.structure` (which terms each site changes),
:mod:`~pymc_discrete.kernels.colouring`, :mod:`~pymc_discrete.kernels.exact_tables` (local
ratios and Gibbs conditionals from batched terms, with
:mod:`~pymc_discrete.kernels.exact_local_ratios`,
:mod:`~pymc_discrete.kernels.exact_conditionals` and
:mod:`~pymc_discrete.kernels.pairwise_sum`). Chains:
:mod:`~pymc_discrete.kernels.chain` and :mod:`~pymc_discrete.kernels.forward_backward`.

Randomness
----------
Every step function takes the chain's ``numpy.random.Generator`` and draws from it, in
Python, everything the step needs: the number of changes or the path length, the
Metropolis-Hastings uniform, and one 32-bit seed per compiled call. The numba functions
that draw (ordered picks, path moves, the compiled loop) take that seed as an argument
and seed numba's own generator with it on entry, so what they draw is a function of
their arguments alone: the chain is a deterministic function of the Generator, with one
process or several. The seed, rather than the Generator itself, crosses into numba
because numba unboxes a Generator at every call, which costs more than a typical
step's arithmetic. The compiled loops draw several steps per call: ALBP's takes its
per-step uniforms as an array; those of Gibbs (:mod:`~pymc_discrete.kernels.gibbs_loop`)
and PAS (:mod:`~pymc_discrete.kernels.pas_loop`, whose exact paths draw one seed per
move, as many as the path is long) take the Generator itself, unboxed once per loop,
and draw from it the numbers the Python steps would.
"""

from pymc_discrete.kernels.albp import (
    BinaryLBState,
    CategoricalLBState,
    albp_step,
    init_lb_state,
)
from pymc_discrete.kernels.arwm import RWState, arwm_step
from pymc_discrete.kernels.common import StepInfo, probabilistic_round
from pymc_discrete.kernels.pas import (
    PathState,
    init_path_state,
    pafs_step,
    pas_step,
)
from pymc_discrete.kernels.sampling import ordered_picks_logprob, sample_ordered
from pymc_discrete.kernels.weights import WEIGHT_CODES, balanced_weights, weight_code

__all__ = [
    "BinaryLBState",
    "CategoricalLBState",
    "PathState",
    "RWState",
    "StepInfo",
    "WEIGHT_CODES",
    "albp_step",
    "arwm_step",
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
