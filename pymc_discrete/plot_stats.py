"""The per-draw stats of this package's steps, found in an idata for the plots.

:func:`~pymc_discrete.plots.plot_tuning` and :func:`~pymc_discrete.plots.plot_moves` read
each step's stats with :func:`_step_traces`: the samplers of a compound step that report
the stats only this package's steps report (:data:`MARKER_STATS`), their columns of the
plotted stats (:data:`PLOTTED_STATS`), tuning draws first.

How PyMC stores the stats of several samplers
---------------------------------------------
With PyMC's default trace (``NDArray``), a stat that several samplers of a compound step
report is stacked along a dimension ``<stat>_dim_0`` of ``sample_stats``, one column per
sampler reporting it, in the order of the samplers; a stat that a single sampler reports
has no such dimension. The columns carry no sampler names. When only this package's steps
report ``accept`` and ``scaling`` (with NUTS, for example, whose stats have other names),
column ``j`` of every stat is the ``j``-th step of the package. When another
sampler (``pm.Metropolis``, ``pm.BinaryMetropolis``, ``pm.HamiltonianMC``, ...) reports
one of these stats too, the column of each step depends on where that sampler stands,
which the trace does not say: pass the step methods given to :func:`pymc.sample`
(``steps=``) and the columns are worked out from them. A trace whose stats are named
``sampler_<i>__<stat>`` (PyMC's ``ZarrTrace``) says which sampler reported what, and
needs no ``steps``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import xarray as xr

__all__ = ["MARKER_STATS", "PLOTTED_STATS", "SAMPLE_DIMS"]

#: stats that only this package's steps report: a sampler reporting both is one of ours
MARKER_STATS = ("target_accept", "jump_distance")
#: the per-draw stats the plots read (``accepted`` and ``n_proposed`` are left alone: a
#: foreign sampler sharing only these does not make the columns of the others ambiguous)
PLOTTED_STATS = ("accept", "scaling", "jump_distance", "target_accept")
SAMPLE_DIMS = ("chain", "draw")
_PREFIXED = re.compile(r"^sampler_(\d+)__(.+)$")


@dataclass
class _StepTrace:
    """The stats of one step of the package, tuning draws first."""

    label: str
    chains: np.ndarray
    n_tune: int
    stats: dict[str, np.ndarray]  # stat -> (chain, n_tune + n_draws)

    @property
    def n_iterations(self) -> int:
        return next(iter(self.stats.values())).shape[1]

    @property
    def target(self) -> float | None:
        """The target acceptance of the step, or None when it tuned nothing."""
        values = self.stats.get("target_accept")
        if values is None:
            return None
        finite = values[np.isfinite(values)]
        return float(np.median(finite)) if finite.size else None


def _group(idata: Any, name: str) -> xr.Dataset | None:
    """A group of ``idata`` (DataTree or InferenceData) as a Dataset, None if absent."""
    try:
        node = idata[name]
    except (KeyError, AttributeError, TypeError):
        return None
    if hasattr(node, "to_dataset"):  # an xarray DataTree node
        node = node.to_dataset()
    if not hasattr(node, "data_vars"):
        return None
    return node


def _flatten_steps(steps: Any) -> list:
    if hasattr(steps, "methods"):  # a CompoundStep (possibly nested)
        return [m for s in steps.methods for m in _flatten_steps(s)]
    if isinstance(steps, (list, tuple)):
        return [m for s in steps for m in _flatten_steps(s)]
    return [steps]


def _stat_names(step: Any) -> set[str]:
    shapes = getattr(step, "stats_dtypes_shapes", None)
    if shapes:
        return set(shapes)
    return {name for d in getattr(step, "stats_dtypes", None) or [] for name in d}


def _step_label(step: Any) -> str:
    names = [getattr(v, "name", str(v)) for v in getattr(step, "vars", [])]
    return f"{type(step).__name__}: [{', '.join(names)}]"


def _extra_dims(da: xr.DataArray, name: str) -> list[str]:
    missing = [d for d in SAMPLE_DIMS if d not in da.dims]
    if missing:
        raise ValueError(f"sample stat {name!r} has no dimension {missing[0]!r}")
    extra = [d for d in da.dims if d not in SAMPLE_DIMS]
    if len(extra) > 1:
        raise ValueError(
            f"sample stat {name!r} has dimensions {da.dims}: expected (chain, draw) and at "
            "most one dimension over the samplers reporting it"
        )
    return extra


def _n_columns(da: xr.DataArray, name: str) -> int:
    extra = _extra_dims(da, name)
    return int(da.sizes[extra[0]]) if extra else 1


#: where a stat of one step is: (variable name, column along its sampler dimension)
_Plan = list[tuple[str, dict[str, tuple[str, int | None]]]]


def _plan_prefixed(ds: xr.Dataset, methods: list | None) -> _Plan:
    by_sampler: dict[int, set[str]] = {}
    for name in ds.data_vars:
        match = _PREFIXED.match(str(name))
        if match:
            by_sampler.setdefault(int(match[1]), set()).add(match[2])
    plan: _Plan = []
    for i in sorted(by_sampler):
        names = by_sampler[i]
        if not set(MARKER_STATS) <= names:
            continue
        if methods is not None and i < len(methods):
            label = _step_label(methods[i])
        else:
            label = f"sampler {i}"
        plan.append((label, {s: (f"sampler_{i}__{s}", None) for s in PLOTTED_STATS
                             if s in names}))
    return plan


def _plan_stacked(ds: xr.Dataset, methods: list | None) -> _Plan:
    if not all(s in ds.data_vars for s in MARKER_STATS):
        return []
    present = [s for s in PLOTTED_STATS if s in ds.data_vars]
    counts = {s: _n_columns(ds[s], s) for s in present}
    k = counts["target_accept"]
    if methods is None:
        shared = [s for s in present if counts[s] != k]
        if shared:
            s = shared[0]
            raise ValueError(
                f"the sample stat {s!r} is reported by {counts[s]} samplers, of which "
                f"{k} {'is a step' if k == 1 else 'are steps'} of pymc_discrete; PyMC's "
                f"trace stacks them along {s + '_dim_0'!r} without saying which column "
                "is which sampler. Pass the step methods you gave pm.sample, in the same "
                "order: steps=[...] (every pymc_discrete step must be among them)."
            )
        columns = {s: list(range(k)) for s in present}
        labels = [f"step {j}" if k > 1 else "" for j in range(k)]
    else:
        has = [_stat_names(m) for m in methods]
        positions = [p for p, names in enumerate(has) if set(MARKER_STATS) <= names]
        if len(positions) != k:
            raise ValueError(
                f"idata holds the stats of {k} pymc_discrete step(s) but steps= lists "
                f"{len(positions)}: pass every step method given to pm.sample, in order"
            )
        columns = {}
        for s in present:
            reporting = sum(s in names for names in has)
            if reporting > counts[s]:
                raise ValueError(
                    f"steps= lists {reporting} samplers reporting {s!r} but idata holds "
                    f"{counts[s]}: these are not the steps that made idata"
                )
            columns[s] = [sum(s in names for names in has[:p]) for p in positions]
        labels = [_step_label(methods[p]) for p in positions]
    plan: _Plan = []
    for j in range(k):
        where = {}
        for s in present:
            where[s] = (s, None if not _extra_dims(ds[s], s) else columns[s][j])
        plan.append((labels[j], where))
    return plan


def _select(ds: xr.Dataset, where: dict[str, tuple[str, int | None]]) -> dict:
    out = {}
    for stat, (name, column) in where.items():
        da = ds[name]
        extra = _extra_dims(da, name)
        if extra:
            da = da.isel({extra[0]: column})
        out[stat] = np.asarray(da.transpose(*SAMPLE_DIMS).values, dtype=float)
    return out


def _step_traces(idata: Any, steps: Any = None, *, warmup: bool = True) -> list[_StepTrace]:
    """The stats of each pymc_discrete step in ``idata`` (sampler order), tuning first.

    ``steps`` are the step methods given to ``pm.sample`` (see :func:`plot_tuning`);
    ``warmup=False`` leaves the tuning draws out.
    """
    posterior = _group(idata, "sample_stats")
    if posterior is None:
        raise ValueError("idata has no 'sample_stats' group: nothing to plot")
    methods = None if steps is None else _flatten_steps(steps)
    plan = _plan_prefixed(posterior, methods) or _plan_stacked(posterior, methods)
    if not plan:
        raise ValueError(
            "no pymc_discrete step found in idata.sample_stats (no sampler reports both "
            f"{MARKER_STATS[0]!r} and {MARKER_STATS[1]!r}): sample with a step of "
            "pymc_discrete (ALBP, ARWM, PAS, BlockedGibbs)"
        )
    tuning = _group(idata, "warmup_sample_stats") if warmup else None
    if tuning is not None and int(tuning.sizes.get("draw", 0)) == 0:
        tuning = None
    chains = np.asarray(posterior["chain"].values)
    traces = []
    for label, where in plan:
        stats = _select(posterior, where)
        n_tune = 0
        if tuning is not None:
            tuned = _select(tuning, where)
            n_tune = next(iter(tuned.values())).shape[1]
            stats = {s: np.concatenate([tuned[s], stats[s]], axis=1) for s in stats}
        traces.append(_StepTrace(label, chains, n_tune, stats))
    return traces
