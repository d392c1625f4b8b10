"""Plots of the per-draw sampler stats of this package's steps (matplotlib).

Every step of the package (:class:`~pymc_discrete.ALBP`, :class:`~pymc_discrete.ARWM`,
:class:`~pymc_discrete.PAS`, :class:`~pymc_discrete.BlockedGibbs`) reports the stats
``accept``, ``accepted``, ``scaling``, ``jump_distance``, ``n_proposed`` and
``target_accept`` with every draw. :func:`plot_tuning` plots how the scale and the
acceptance evolved through tuning, :func:`plot_moves` how far and how often the chains
moved. Both find the package's steps among the samplers of a compound step by the stats
only they report (``target_accept`` and ``jump_distance``) and draw one row of panels per
step found.

Finding the package's steps among the samplers, and how PyMC stores the stats of several
samplers, is :mod:`pymc_discrete.plot_stats`; this module draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pymc_discrete.plot_stats import _step_traces

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_moves", "plot_tuning"]

_NO_WARMUP = (
    "idata has no tuning draws (no 'warmup_sample_stats' group, or an empty one): "
    "pm.sample drops them unless told otherwise. Sample with "
    "pm.sample(..., discard_tuned_samples=False) to keep them; pmd.plot_moves(idata) "
    "plots the draws after tuning alone."
)


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
