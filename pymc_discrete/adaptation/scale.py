"""Stateful tuner of the scale R of a step method, built on dual averaging.

It runs only while tuning, restarts per chain, and freezes a scale when tuning stops (or
after the number of tuning draws announced at the start of the chain).

Tuning runs in windows (as Stan's warm-up does): dual averaging starts from the initial
scale and searches (Hoffman and Gelman's constants), and at the end of the first eighth,
the first quarter and the first half of tuning it restarts from the scale the window
just ended says reaches the target, and refines it. A chain that starts far from its
typical set accepts differently while it approaches it: the acceptance curve moves
during tuning. One dual average remembers all its errors (its late iterates make up for
the early ones), and an unweighted fit through the second half describes the middle of
that half; after a restart only the current window counts, and the k-th step of a
window has weight k, so the frozen scale describes the end of tuning. (A chain that has
not reached its typical set by then still cannot be tuned for it: tuning that is too
short for the chain's transient is not repaired here.)

The iterates wander around the scale of the target rate (each step's acceptance
probability is a noisy signal, and dual averaging answers every one), so the frozen
scale is not the last iterate but the one where a curve of acceptance probability
against log scale, fitted to the last window (the second half of tuning), meets the
target, kept within the range of scales seen there. The curve has the shape of the
optimal-scaling limit of the acceptance rate, ``2 Phi(-lambda R^k / 2)`` (k = 3/2 for
locally balanced proposals, 1/2 for the random walk; :func:`fitted_crossing`), a line in
log R under its link; a straight line through iterates spread over the bend of that
sigmoid misplaces the crossing by a bias that more draws do not remove, where the
curve of the right shape has none. Where the curve does not fall with the scale
(acceptance flat, or rising as on parity-like targets) the weighted geometric mean of
the window's scales is used. The estimate that starts each window is found the same
way from the window before.

:class:`PathLengthAdapter` tunes the mean path length of PAS with the same machinery
toward a different criterion: the expected jump distance per unit of cost.

The fitted curve is in :mod:`~pymc_discrete.adaptation.acceptance_curve`, and
:class:`~pymc_discrete.adaptation.fixed_scale.FixedScale` stands in for a tuner where
nothing is tuned.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from pymc_discrete.adaptation.acceptance_curve import fitted_crossing
from pymc_discrete.adaptation.dual_averaging import (
    DualAveragingState,
    dual_averaging_final,
    dual_averaging_init,
    dual_averaging_update,
)

__all__ = ["PathLengthAdapter", "ScaleAdapter"]


class ScaleAdapter:
    """Tune a scale in ``[lower, upper]`` toward a target acceptance rate.

    Parameters
    ----------
    target_accept : float
        Target acceptance rate in (0, 1).
    initial_scale : float
        Scale at the start of every tuning phase.
    lower, upper : float
        Bounds of the scale (for R: 1 and the number of sites).
    adapt : bool
        If False the scale stays at ``initial_scale``.

    Examples
    --------
    >>> tuner = ScaleAdapter(0.574, 1.0, 1.0, 800.0)
    >>> tuner.start(n_tune=2)
    >>> tuner.update(1.0); tuner.update(1.0)
    >>> tuner.tuning
    False
    """

    def __init__(
        self,
        target_accept: float,
        initial_scale: float,
        lower: float,
        upper: float,
        adapt: bool = True,
    ) -> None:
        if not 0.0 < target_accept < 1.0:
            raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
        if not (lower <= initial_scale <= upper):
            raise ValueError(
                f"initial_scale must lie in [{lower:g}, {upper:g}], got {initial_scale!r}"
            )
        self.target_accept = float(target_accept)
        self.initial_scale = float(initial_scale)
        self.lower = float(lower)
        self.upper = float(upper)
        self.adapt = bool(adapt)
        self.start(None)

    #: fractions of the tuning steps at whose end dual averaging restarts from the
    #: window's estimate; the last window, from the last restart to the end, is the one
    #: the frozen scale comes from
    RESTARTS = (0.125, 0.25, 0.5)
    #: a restart is skipped if it would leave a window shorter than this many steps
    _MIN_WINDOW = 10
    #: dual averaging's gamma in the first window: Hoffman and Gelman's, a search (each
    #: acceptance probability a moves log R by about ``abs(target - a) / (gamma sqrt(t))``:
    #: far enough to find the scale from a poor start, too far to read the scale from
    #: the last iterate)
    _GAMMA = 0.05
    #: gamma after the restarts, which refine an estimate: ten times larger, so that each
    #: acceptance moves log R a tenth as far, the iterates stay close to the estimate,
    #: and the shape of the fitted curve matters less
    _REFINE_GAMMA = 0.5
    #: fewer updates than this in the window: no curve, the geometric mean
    _MIN_FOR_LINE = 20

    def start(self, n_tune: int | None) -> None:
        """Restart tuning for a new chain.

        Parameters
        ----------
        n_tune : int or None
            Number of tuning draws of the chain, if known; tuning freezes by itself
            after that many updates. ``0`` means the chain does not tune. Unknown: no
            windows, and :meth:`stop` freezes the dual-averaging average.
        """
        self.n_tune = n_tune
        self.scale = self.initial_scale
        self._state: DualAveragingState = dual_averaging_init(self.initial_scale)
        self._step = 0  # updates since the start of the chain
        self._restarts = self._restart_steps(n_tune)
        self._first_window_end = self._restarts[0] if self._restarts else math.inf
        self._reset_window()
        self.tuning = self.adapt and n_tune != 0

    def _restart_steps(self, n_tune: int | None) -> list[int]:
        """The steps after which dual averaging restarts (:attr:`RESTARTS`)."""
        if n_tune is None:
            return []
        steps, previous = [], 0
        for fraction in self.RESTARTS:
            step = int(n_tune * fraction)
            if step - previous >= self._MIN_WINDOW and n_tune - step >= self._MIN_WINDOW:
                steps.append(step)
                previous = step
        return steps

    def _reset_window(self) -> None:
        """Start a new window: its log scales and the signals they produced."""
        self._window_log_scales: list[float] = []
        self._window_signals: list[float] = []

    def update(self, accept_prob: float) -> None:
        """Record the acceptance probability of one draw and move the scale.

        Does nothing once tuning has stopped.
        """
        if not self.tuning:
            return
        self._update(accept_prob)

    def _update(self, signal: float) -> None:
        """One step of dual averaging on the signal (an acceptance probability, or what
        stands for one), recorded in the window; restart or stop where due."""
        if math.isnan(signal):
            signal = 0.0
        used = math.log(self.scale)  # the scale that produced this signal
        self._state = dual_averaging_update(
            self._state,
            signal,
            self.target_accept,
            math.log(self.lower),
            math.log(self.upper),
            gamma=self._GAMMA if self._step < self._first_window_end else self._REFINE_GAMMA,
        )
        self.scale = min(max(math.exp(self._state.log_scale), self.lower), self.upper)
        self._step += 1
        if self.n_tune is not None:
            self._window_log_scales.append(used)
            self._window_signals.append(float(signal))
            if self._restarts and self._step == self._restarts[0]:
                self._restart()
            elif self._step >= self.n_tune:
                self.stop()

    def _restart(self) -> None:
        """End a window: dual averaging starts again from the window's estimate (its
        shrinkage point too: the scale is about right, and is refined, not searched)."""
        del self._restarts[0]
        estimate = min(max(math.exp(self._window_solution()), self.lower), self.upper)
        self._state = dual_averaging_init(estimate, shrink_factor=1.0)
        self.scale = estimate
        self._reset_window()

    def snapshot(self) -> dict:
        """Everything the tuner holds (settings, scale, averages), as a deep copy.

        :meth:`restore` puts a snapshot back, so that a chain can be saved and resumed
        exactly where its tuning was (or with the scale it froze).

        Examples
        --------
        >>> tuner = ScaleAdapter(0.574, 1.0, 1.0, 800.0)
        >>> tuner.start(n_tune=10); tuner.update(1.0)
        >>> saved = tuner.snapshot()
        >>> tuner.update(1.0)
        >>> tuner.restore(saved); tuner.snapshot() == saved
        True
        """
        return copy.deepcopy(vars(self))

    def restore(self, snapshot: dict) -> None:
        """Put back what :meth:`snapshot` returned (a deep copy of it)."""
        unknown = set(snapshot) - set(vars(self))
        if unknown:
            raise ValueError(f"not a snapshot of a ScaleAdapter: unknown fields {sorted(unknown)}")
        for name, value in copy.deepcopy(snapshot).items():
            setattr(self, name, value)

    @property
    def _late_count(self) -> int:
        """Number of updates in the current window."""
        return len(self._window_signals)

    @property
    def late_acceptance(self) -> float:
        """Mean acceptance probability over the current window of tuning (the second
        half, once it is reached), weighted toward its end as the fit is; NaN before
        any update."""
        if not self._window_signals:
            return float("nan")
        signals = np.asarray(self._window_signals)
        return float(np.average(signals, weights=np.arange(1.0, signals.size + 1.0)))

    def stuck_below_target(self, margin: float = 0.15) -> bool:
        """Whether tuning ended at the lower bound with the acceptance rate still more
        than ``margin`` below the target: the target was out of reach (a smaller scale
        would be needed, or the acceptance does not fall as the scale grows)."""
        return (
            self._late_count > 0
            and self.scale <= self.lower * (1.0 + 1e-9)  # exp(log) rounds above it
            and self.late_acceptance < self.target_accept - margin
        )

    #: shape of the curve fitted to the window (:func:`fitted_crossing`)
    _LINK = "scaling"

    #: the frozen scale lies within the range of scales used over this last share of
    #: tuning (at least :attr:`_MIN_WINDOW` updates)
    _TAIL = 0.125

    def _tail_length(self) -> int:
        """Number of the last updates of tuning whose scales bound the frozen one."""
        n = self._late_count if self.n_tune is None else int(self.n_tune * self._TAIL)
        return max(self._MIN_WINDOW, n)

    def _window_solution(self) -> float:
        """Log scale at which the curve fitted to the window's signals meets the target
        (:func:`fitted_crossing`), within the window's range of log scales."""
        log_scales = np.asarray(self._window_log_scales)
        signals = np.asarray(self._window_signals)
        weights = np.arange(1.0, signals.size + 1.0)  # the k-th step of the window: k
        if signals.size < self._MIN_FOR_LINE:
            return float(np.average(log_scales, weights=weights))
        return fitted_crossing(log_scales, signals, weights, self.target_accept, self._LINK)

    def stop(self) -> None:
        """Freeze the averaged scale; later updates leave it unchanged.

        With a known number of tuning draws the frozen value comes from the last window
        of tuning (the second half; before it, the transient from the initial scale and
        from the chain's start): the scale where the curve of acceptance against log
        scale meets the target (module docstring), kept within the range of scales
        the last eighth of tuning used (the end of tuning, not the whole window, says
        where the chain is); otherwise it is the dual-averaging average.
        """
        if self.tuning and self._late_count > 0:
            final = math.exp(self._window_solution())
            # a scale the end of tuning used: the fit describes the whole last window,
            # and a chain whose target changed late in it (a mixture whose means settled
            # after most of the window was spent elsewhere) would otherwise freeze a
            # scale fitted to a state it has left
            recent = self._window_log_scales[-self._tail_length():]
            final = min(max(final, math.exp(min(recent))), math.exp(max(recent)))
        elif self.tuning and self._state.step > 0:
            final = dual_averaging_final(self._state)
        else:
            final = self.scale
        self.scale = min(max(final, self.lower), self.upper)
        self.tuning = False


class PathLengthAdapter(ScaleAdapter):
    """Tune the mean path length X of a path sampler toward the largest expected jump
    per unit of cost, where no acceptance rate is known to be optimal.

    Every step reports, before the update of its draw, its expected jump (the
    acceptance probability times the Hamming distance of the proposal), its cost (in
    evaluations of the model, :meth:`observe`) and on which side of X its path length
    fell (``side``: positive for a path longer than X, negative for a shorter one,
    scaled so that both halves weigh the same in expectation). A path length L is uniform
    on {1, ..., 2X - 1}, so every X tries both shorter and longer paths: comparing their
    jumps per unit of cost, in the same chain at the same time, says whether a larger X
    would pay. Adding longer paths to the mix raises the jump per cost exactly when they
    beat the mix's average, which is what the comparison asks.

    A step's signal is ``1/2 + side * u / 2``, with ``u = (e - r) / (e + r)`` in
    [-1, 1] comparing the step's jump per cost ``e`` with the running average ``r`` of the
    last ~50 steps (bounded, so a rare long jump does not swamp it). Its mean is above
    1/2 when long paths are the more efficient ones. The mean signal of a draw's steps
    goes through the windows and dual averaging of :class:`ScaleAdapter` toward 1/2, and
    the frozen X is where the logistic curve of the signal against log X crosses 1/2 in
    the last window (the window's geometric mean if it does not fall). The criterion
    works whether or not the acceptance falls with X: on the parity model, where odd
    paths are rejected and the acceptance rises with X, long paths still jump further
    per evaluation, and X grows.

    Parameters
    ----------
    initial_scale, lower, upper, adapt
        As :class:`ScaleAdapter`.

    Examples
    --------
    Longer paths jump further per unit of cost: X grows.

    >>> tuner = PathLengthAdapter(2.0, 1.5, 100.0)
    >>> tuner.start(n_tune=200)
    >>> for k in range(200):
    ...     side = 1.0 if k % 2 else -1.0  # long and short paths in turn
    ...     tuner.observe(jump=4.0 if side > 0 else 1.0, cost=2.0, side=side)
    ...     tuner.update(0.9)
    >>> tuner.scale > 2.0 and not tuner.tuning
    True
    """

    #: weight of the past in the running average of the jump per cost (about 50 steps)
    _DECAY = 0.98
    #: the signal is no acceptance rate: a logistic curve, not the optimal-scaling one
    _LINK = "logit"
    #: the signal is weak beside its noise, and the best X may be far from the start:
    #: every window searches
    _REFINE_GAMMA = 0.05

    def __init__(self, initial_scale: float, lower: float, upper: float,
                 adapt: bool = True) -> None:
        super().__init__(0.5, initial_scale, lower, upper, adapt=adapt)

    def start(self, n_tune: int | None) -> None:
        super().start(n_tune)
        self._pending: list[float] = []  # signals of the steps observed since the update
        self._jump_avg = 0.0  # decayed sums of the jumps and costs of recent steps
        self._cost_avg = 0.0

    def observe(self, jump: float, cost: float, side: float) -> None:
        """Record what one step did, before its :meth:`update`: its expected jump, its
        cost (> 0) and the side of X its path length fell on (in [-1, 1], 0 for L = X)."""
        if not self.tuning:
            return
        jump = jump if jump > 0.0 else 0.0  # NaN counts as no jump
        efficiency = jump / cost
        average = self._jump_avg / self._cost_avg if self._cost_avg > 0.0 else 0.0
        total = efficiency + average
        u = (efficiency - average) / total if total > 0.0 else 0.0
        self._pending.append(0.5 + 0.5 * side * u)
        self._jump_avg = self._DECAY * self._jump_avg + jump
        self._cost_avg = self._DECAY * self._cost_avg + cost

    def update(self, accept_prob: float) -> None:
        """Move X on the mean signal of the steps :meth:`observe` recorded since the last
        update (the steps of one draw, which all ran at the same X); the acceptance
        probability itself is not the criterion. Without an observed step the signal is
        neutral (1/2)."""
        if not self.tuning:
            return
        pending, self._pending = self._pending, []
        self._update(sum(pending) / len(pending) if pending else 0.5)

    def stuck_below_target(self, margin: float = 0.15) -> bool:
        """Never: there is no acceptance rate to reach."""
        return False
