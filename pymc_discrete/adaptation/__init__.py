"""Pure tuners of step-method scales toward a target acceptance rate (no PyMC)."""

from pymc_discrete.adaptation.dual_averaging import (
    DualAveragingState,
    dual_averaging_final,
    dual_averaging_init,
    dual_averaging_update,
)
from pymc_discrete.adaptation.fixed_scale import FixedScale
from pymc_discrete.adaptation.scale import ScaleAdapter

__all__ = [
    "DualAveragingState",
    "FixedScale",
    "ScaleAdapter",
    "dual_averaging_final",
    "dual_averaging_init",
    "dual_averaging_update",
]
