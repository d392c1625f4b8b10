"""Plots of the per-draw sampler stats of this package's steps (matplotlib).

Every step of the package (:class:`~pymc_discrete.ALBP`, :class:`~pymc_discrete.ARWM`,
:class:`~pymc_discrete.PAS`, :class:`~pymc_discrete.BlockedGibbs`) reports the stats
``accept``, ``accepted``, ``scaling``, ``jump_distance``, ``n_proposed`` and
``target_accept`` with every draw. :func:`plot_tuning` plots how the scale and the
acceptance evolved through tuning, :func:`plot_moves` how far and how often the chains
moved. Both find the package's steps among the samplers of a compound step by the stats
only they report (``target_accept`` and ``jump_distance``) and draw one row of panels per
step found.

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
    from matplotlib.axes import Axes

__all__ = ["plot_moves", "plot_tuning"]

#: stats that only this package's steps report: a sampler reporting both is one of ours
MARKER_STATS = ("target_accept", "jump_distance")
#: the per-draw stats the plots read (``accepted`` and ``n_proposed`` are left alone: a
#: foreign sampler sharing only these does not make the columns of the others ambiguous)
PLOTTED_STATS = ("accept", "scaling", "jump_distance", "target_accept")
SAMPLE_DIMS = ("chain", "draw")
_PREFIXED = re.compile(r"^sampler_(\d+)__(.+)$")

_NO_WARMUP = (
    "idata has no tuning draws (no 'warmup_sample_stats' group, or an empty one): "
    "pm.sample drops them unless told otherwise. Sample with "
    "pm.sample(..., discard_tuned_samples=False) to keep them; pmd.plot_moves(idata) "
    "plots the draws after tuning alone."
)


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


# ---------------------------------------------------------------------------------------
# finding the package's steps in sample_stats


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


# ---------------------------------------------------------------------------------------
# drawing


def _trailing_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Mean of the last ``window`` finite values up to each position (fewer at the start).

    Parameters
    ----------
    values : numpy.ndarray
        One-dimensional series.
    window : int
        Number of values averaged (at least 1).

    Returns
    -------
    numpy.ndarray
        Same length as ``values``; NaN where the window holds no finite value.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_discrete.plots import _trailing_mean
    >>> _trailing_mean(np.array([1.0, 0.0, 1.0, 1.0]), 2)
    array([1. , 0.5, 0.5, 1. ])
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    y = np.asarray(values, dtype=float)
    ok = np.isfinite(y)
    sums = np.concatenate([[0.0], np.cumsum(np.where(ok, y, 0.0))])
    counts = np.concatenate([[0], np.cumsum(ok)])
    end = np.arange(1, y.size + 1)
    start = np.maximum(0, end - window)
    n = counts[end] - counts[start]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (sums[end] - sums[start]) / np.maximum(n, 1), np.nan)


def _window(window: int | None, n_iterations: int) -> int:
    if window is None:
        return max(1, min(50, n_iterations // 10))
    window = int(window)
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    return window


def _axes(ax: Any, n_rows: int, figsize: tuple[float, float] | None) -> np.ndarray:
    if ax is None:
        import matplotlib.pyplot as plt

        if figsize is None:
            figsize = (10.0, 0.6 + 2.6 * n_rows)
        _, axes = plt.subplots(n_rows, 2, figsize=figsize, squeeze=False,
                               layout="constrained")
        return axes
    axes = np.asarray(ax, dtype=object)
    if axes.size != 2 * n_rows:
        raise ValueError(
            f"ax must hold {2 * n_rows} axes (a ({n_rows}, 2) array: one row of two "
            f"panels per pymc_discrete step), got {axes.size}"
        )
    return axes.reshape(n_rows, 2)


def _mark_tuning(ax: Axes, n_tune: int) -> None:
    if n_tune <= 0:
        return
    ax.axvspan(0, n_tune, color="0.5", alpha=0.12, linewidth=0, label="tuning")
    ax.axvline(n_tune, color="0.35", linestyle=":", linewidth=1.2, label="end of tuning")


def _mark_target(ax: Axes, target: float | None) -> None:
    if target is not None:
        ax.axhline(target, color="k", linestyle="--", linewidth=1.2,
                   label=f"target {target:.3g}")


def _title(label: str, what: str) -> str:
    return f"{label}  {what}" if label else what


def _xlabel(n_tune: int) -> str:
    return "draw (tuning draws first)" if n_tune else "draw"


def _legends(axes: np.ndarray) -> None:
    # chains once (top left), what the markers mean on every right-hand panel
    handles, labels = axes[0, 0].get_legend_handles_labels()
    chains = [(h, lab) for h, lab in zip(handles, labels) if lab.startswith("chain")]
    if chains:
        axes[0, 0].legend(*zip(*chains), loc="best", fontsize="small", frameon=False,
                          ncols=min(4, len(chains)))
    for row in axes:
        handles, labels = row[1].get_legend_handles_labels()
        marks = [(h, lab) for h, lab in zip(handles, labels) if not lab.startswith("chain")]
        if marks:
            row[1].legend(*zip(*marks), loc="best", fontsize="small", frameon=False)


def plot_tuning(
    idata: Any,
    *,
    steps: Any = None,
    window: int | None = None,
    log_scale: bool = True,
    ax: Any = None,
    figsize: tuple[float, float] | None = None,
) -> np.ndarray:
    """Plot the tuning history of each step: its scale and its acceptance, per chain.

    One row of two panels per step of this package found in ``idata`` (the samplers
    reporting ``target_accept`` and ``jump_distance``; NUTS and PyMC's other samplers
    are left out). Left, the scale each draw used (the ``scaling`` stat: R for ALBP and
    ARWM, the path parameter for PAS, the number of colours for BlockedGibbs). Right,
    the trailing mean of the acceptance probability ``accept`` over the last ``window``
    draws, with the step's target acceptance (the ``target_accept`` stat) as a dashed
    line; a step that tunes nothing (BlockedGibbs, ``adapt=False``) has no target line.
    The tuning draws are shaded and a dotted vertical line marks the end of tuning.

    The tuning draws are needed: without a ``warmup_sample_stats`` group (PyMC drops
    them unless ``pm.sample(..., discard_tuned_samples=False)``) this raises a
    ``ValueError`` rather than plot a scale that tuning has already frozen.
    :func:`plot_moves` plots the draws after tuning alone.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        Result of ``pm.sample(..., discard_tuned_samples=False)``.
    steps : step method, CompoundStep or list of them, optional
        The step methods given to ``pm.sample``, in order. Needed only when another
        sampler (``pm.Metropolis``, ``pm.BinaryMetropolis``, ``pm.HamiltonianMC``, ...)
        also reports ``accept`` or ``scaling``: PyMC's trace then stacks
        these stats of all the samplers without saying which column is which, and
        ``steps`` says it. It also labels each row with the step's class and variables.
    window : int, optional
        Number of draws in the trailing mean of ``accept`` (default: a tenth of the
        draws, at most 50).
    log_scale : bool
        Plot the scale on a logarithmic axis (when it is positive).
    ax : numpy.ndarray of matplotlib.axes.Axes, optional
        Axes to draw on, ``2 * n_steps`` of them (shape ``(n_steps, 2)``); a new figure
        when None.
    figsize : tuple of float, optional
        Size of the new figure in inches (ignored with ``ax``).

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes
        Shape ``(n_steps, 2)``: the scale and the acceptance panels of each step.

    Raises
    ------
    ValueError
        If ``idata`` has no tuning draws or no step of this package, or if the columns
        of shared stats are ambiguous and ``steps`` is not given.

    See Also
    --------
    plot_moves : jump distance and acceptance of each draw.

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     g = pm.Bernoulli("g", 0.3, shape=50)
    ...     step = pmd.ALBP([g])  # doctest: +SKIP
    ...     idata = pm.sample(step=[step], discard_tuned_samples=False)  # doctest: +SKIP
    >>> axes = pmd.plot_tuning(idata)  # doctest: +SKIP
    >>> axes.shape  # doctest: +SKIP
    (1, 2)
    """
    traces = _step_traces(idata, steps)
    if any(t.n_tune == 0 for t in traces):
        raise ValueError(_NO_WARMUP)
    axes = _axes(ax, len(traces), figsize)
    for row, trace in zip(axes, traces):
        scale_ax, accept_ax = row
        x = np.arange(trace.n_iterations)
        w = _window(window, trace.n_iterations)
        _mark_tuning(scale_ax, trace.n_tune)
        _mark_tuning(accept_ax, trace.n_tune)
        for c, chain in enumerate(trace.chains):
            colour = f"C{c % 10}"
            scale_ax.plot(x, trace.stats["scaling"][c], color=colour, linewidth=1.2,
                          label=f"chain {chain}")
            accept_ax.plot(x, _trailing_mean(trace.stats["accept"][c], w), color=colour,
                           linewidth=1.2, label=f"chain {chain}")
        _mark_target(accept_ax, trace.target)
        scaling = trace.stats["scaling"]
        if log_scale and np.all(scaling[np.isfinite(scaling)] > 0):
            _log_axis(scale_ax)
        scale_ax.set_title(_title(trace.label, "scale"), loc="left", fontsize="medium")
        scale_ax.set_ylabel("scale (scaling)")
        accept_ax.set_title(
            _title(trace.label, f"acceptance, mean of the last {w} draws"),
            loc="left", fontsize="medium",
        )
        accept_ax.set_ylabel("accept")
        accept_ax.set_ylim(-0.02, 1.02)
        for a in row:
            a.set_xlabel(_xlabel(trace.n_tune))
            a.set_xlim(0, max(1, trace.n_iterations - 1))
    _legends(axes)
    return axes


def _log_axis(ax: Axes) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    # plain numbers (2, 5, 10, ...) rather than powers of ten: R is a count of sites
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def plot_moves(
    idata: Any,
    *,
    steps: Any = None,
    warmup: bool = True,
    window: int | None = None,
    ax: Any = None,
    figsize: tuple[float, float] | None = None,
) -> np.ndarray:
    """Plot how far and how often each step moved the chains, draw by draw.

    One row of two panels per step of this package found in ``idata`` (see
    :func:`plot_tuning`). Left, the jump distance of each draw (``jump_distance``: the
    number of sites the draw changed, whose mean the tuning aims to maximise: through
    the optimal acceptance rate for ALBP and ARWM, per unit of cost for PAS); right, the M-H
    acceptance probability of each draw (``accept``), with
    the target acceptance as a dashed line. Dots are the draws, lines their
    trailing mean over the last ``window`` draws, one colour per chain. The tuning
    draws are included when ``idata`` holds them (shaded, the end of tuning marked by
    a dotted vertical line); otherwise the draws after tuning alone are plotted.

    Parameters
    ----------
    idata : xarray.DataTree or arviz.InferenceData
        Result of :func:`pymc.sample`.
    steps : step method, CompoundStep or list of them, optional
        The step methods given to ``pm.sample``, in order; needed only when another
        sampler also reports ``accept`` or ``scaling`` (see
        :func:`plot_tuning`). It also labels each row with the step's class and
        variables.
    warmup : bool
        Include the tuning draws when ``idata`` holds them.
    window : int, optional
        Number of draws in the trailing means (default: a tenth of the draws, at most
        50).
    ax : numpy.ndarray of matplotlib.axes.Axes, optional
        Axes to draw on, ``2 * n_steps`` of them (shape ``(n_steps, 2)``); a new figure
        when None.
    figsize : tuple of float, optional
        Size of the new figure in inches (ignored with ``ax``).

    Returns
    -------
    numpy.ndarray of matplotlib.axes.Axes
        Shape ``(n_steps, 2)``: the jump-distance and the acceptance panels of each
        step.

    Raises
    ------
    ValueError
        If ``idata`` holds no step of this package, or if the columns of shared stats
        are ambiguous and ``steps`` is not given.

    See Also
    --------
    plot_tuning : scale and acceptance through tuning.

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     g = pm.Bernoulli("g", 0.3, shape=50)
    ...     idata = pm.sample(step=[pmd.ALBP([g])])  # doctest: +SKIP
    >>> axes = pmd.plot_moves(idata, window=20)  # doctest: +SKIP
    >>> axes.shape  # doctest: +SKIP
    (1, 2)
    """
    traces = _step_traces(idata, steps, warmup=warmup)
    axes = _axes(ax, len(traces), figsize)
    for row, trace in zip(axes, traces):
        jump_ax, accept_ax = row
        x = np.arange(trace.n_iterations)
        w = _window(window, trace.n_iterations)
        _mark_tuning(jump_ax, trace.n_tune)
        _mark_tuning(accept_ax, trace.n_tune)
        for c, chain in enumerate(trace.chains):
            colour = f"C{c % 10}"
            for a, stat in ((jump_ax, "jump_distance"), (accept_ax, "accept")):
                values = trace.stats[stat][c]
                a.plot(x, values, color=colour, linestyle="none", marker=".",
                       markersize=2.5, alpha=0.3, label=f"_draws of chain {chain}")
                a.plot(x, _trailing_mean(values, w), color=colour, linewidth=1.6,
                       label=f"chain {chain}")
        _mark_target(accept_ax, trace.target)
        means = f"(dots: draws, lines: mean of {w})"
        jump_ax.set_title(_title(trace.label, f"jump distance {means}"), loc="left",
                          fontsize="medium")
        jump_ax.set_ylabel("sites changed")
        jump_ax.set_ylim(bottom=0)
        accept_ax.set_title(_title(trace.label, f"acceptance {means}"), loc="left",
                            fontsize="medium")
        accept_ax.set_ylabel("accept")
        accept_ax.set_ylim(-0.02, 1.02)
        for a in row:
            a.set_xlabel(_xlabel(trace.n_tune))
            a.set_xlim(0, max(1, trace.n_iterations - 1))
    _legends(axes)
    return axes
