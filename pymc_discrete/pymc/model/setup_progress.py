"""Progress of a long set-up, on PyMC's logger.

:class:`SetupProgress` logs nothing for a quick set-up; one that takes longer than
:data:`PROGRESS_AFTER` seconds says what it is doing, stage by stage.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

__all__ = ["PROGRESS_AFTER", "PROGRESS_EVERY", "SetupProgress", "listed", "log"]

#: Set-up longer than this (seconds) says what it is doing.
PROGRESS_AFTER = 3.0
#: While a stage lasts, repeat its progress at most this often (seconds).
PROGRESS_EVERY = 10.0

#: A child of PyMC's logger: PyMC gives "pymc" a stderr handler at level INFO when the
#: application has not configured logging, so these messages show by default exactly
#: where PyMC's own ("Sequential sampling ...") do, and follow the application's logging
#: configuration otherwise. A top-level "pymc_discrete" logger would need a handler of
#: its own to show INFO by default.
log = logging.getLogger("pymc.pymc_discrete")


#: a message names at most this many variables in full
LISTED_NAMES = 8


def listed(names) -> str:
    """Variable names for a message: all of them, or for a model written one variable
    per site the first and the last ("z_0, z_1, z_2, ..., z_299 (300 variables)"), so
    that a line says which block it is without a thousand names."""
    names = [str(name) for name in names]
    if len(names) <= LISTED_NAMES:
        return ", ".join(names)
    return f"{', '.join(names[:3])}, ..., {names[-1]} ({len(names)} variables)"


class SetupProgress:
    """Logs what a set-up is doing, but only once it has taken longer than
    :data:`PROGRESS_AFTER` seconds: a timer thread announces the current stage then,
    and every later stage change (or every :data:`PROGRESS_EVERY` seconds within one
    long stage) is logged as it happens. Quick set-ups log nothing."""

    def __init__(self, what: str, after: float | None = None):
        after = PROGRESS_AFTER if after is None else after
        self._what = what
        self._after = after
        self._start = time.perf_counter()
        self._stage = "starting"
        self._last = -np.inf
        self._shown = False
        self._done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(after, self._late)
        self._timer.daemon = True
        self._timer.start()

    def _emit(self, now: float) -> None:
        log.info("%s: %s (%.1f s so far)", self._what, self._stage, now - self._start)
        self._shown = True
        self._last = now

    def _late(self) -> None:
        with self._lock:
            if not self._done and not self._shown:
                self._emit(time.perf_counter())

    def __call__(self, stage: str) -> None:
        """Enter ``stage``; "name: detail" stages with the same name are one stage."""
        with self._lock:
            new = stage.split(":")[0] != self._stage.split(":")[0]
            self._stage = stage
            now = time.perf_counter()
            if now - self._start > self._after and (new or now - self._last > PROGRESS_EVERY):
                self._emit(now)

    def close(self) -> float:
        """Stop the timer; returns the elapsed seconds (logged if anything was)."""
        self._timer.cancel()
        with self._lock:
            self._done = True
            elapsed = time.perf_counter() - self._start
            if self._shown:
                log.info("%s: done in %.1f s", self._what, elapsed)
        return elapsed

