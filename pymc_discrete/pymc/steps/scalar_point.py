"""PyMC's point-to-array mapping for a step over many scalar variables, without its
per-variable cost.

PyMC's ``ArrayStepShared.step`` maps the point to one vector
(``DictToArrayBijection.map``: a ravel of every variable, then a concatenation) and back
(``rmap``: a slice, a reshape and a cast per variable). On a model written one variable
per site, a block is hundreds of scalar variables, and the two mappings cost more than
the draw itself (about 0.4 ms a draw at 300 sites, measured, against 0.2 ms for the
exact Gibbs draw of the whole chain). Where every variable of the block is a 0-d array of
one dtype, :class:`ScalarSitesMapping` reads the vector with one ``np.fromiter`` and
writes the new values back as 0-d views of one fresh array: the same values, dtypes and
shapes as PyMC's mappings give, in one pass.
"""

from __future__ import annotations

import numpy as np
from pymc.blocking import RaveledVars

__all__ = ["ScalarSitesMapping", "scalar_layout"]


def scalar_layout(point: dict, names: tuple[str, ...]) -> tuple | None:
    """``(dtype, point_map_info)`` where every variable ``names`` reads from ``point`` is a
    0-d array and all share one dtype (PyMC's ``point_map_info`` for them), else None."""
    values = [point.get(name) for name in names]
    if len(values) < 2 or not all(isinstance(v, np.ndarray) and v.ndim == 0 for v in values):
        return None
    dtype = values[0].dtype
    if any(v.dtype != dtype for v in values):
        return None
    return dtype, tuple((name, (), 1, dtype) for name in names)


class ScalarSitesMapping:
    """A mixin for ``ArrayStepShared`` steps: :meth:`step` as PyMC's, with the mappings
    done in one pass where the block is scalar variables of one dtype (module
    docstring). The layout is read from the first point: PyMC's mappings keep every
    variable's shape and dtype from draw to draw."""

    #: (dtype, point_map_info) of a block of scalar variables; False where the block is
    #: not one (PyMC's own mappings); None before the first step
    _scalar_sites: tuple | bool | None = None

    def step(self, point: dict) -> tuple[dict, list]:
        layout = self._scalar_sites
        if layout is None:
            layout = self._scalar_sites = scalar_layout(point, self.var_names) or False
        if layout is False:
            return super().step(point)
        dtype, info = layout
        for name, shared_var in self.shared.items():
            shared_var.set_value(point[name], borrow=True)
        names = self.var_names
        q = RaveledVars(np.fromiter((point[name] for name in names), dtype, len(names)), info)
        apoint, stats = self.astep(q)
        data = apoint.data if isinstance(apoint, RaveledVars) else apoint
        # one fresh array (PyMC's rmap copies every value), read as 0-d views
        values = np.array(data, dtype=dtype)
        new = dict(point)
        new.update(zip(names, (values[i, ...] for i in range(len(names))), strict=True))
        return new, stats
