"""Python's full garbage collections made rarer while a registered ``pm.sample`` runs.

A full collection walks every object the collector tracks. A model written one variable
per site keeps many alive (its variables, their graphs, the package's reading of them),
and the allocations of sampling and of PyMC's InferenceData trigger several full
collections, each walking all of them again. :func:`fewer_full_collections` raises the
collector's last threshold (young collections between two full ones, Python's default
10) to 1,000 for the duration of the call and restores the thresholds after: young
objects are collected as before, and cycles among long-lived ones at the first full
collection after the call.
Measured with the collection put off counted (the whole ``pm.sample(draws=500,
tune=500, chains=2, cores=1)`` after ``register()``, then ``gc.collect()``; a fresh
process each, warm caches, medians over seeds 1-3): the 1,000-step chain in a loop
3.32 s -> 3.13 s, written vectorised 1.75 s -> 1.60 s; the 30 x 30 lattice of scalar
spins 1.58 s -> 1.43 s (docs/per_variable.md).

(``gc.freeze()`` around the call would skip those objects altogether, for a similar
gain, but its counterpart ``gc.unfreeze()`` also hands back objects others froze: the
interpreter itself freezes a few hundred at start-up in Python 3.12.)
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["FULL_COLLECTION_THRESHOLD", "fewer_full_collections"]

#: young collections between two full ones while a registered run samples
FULL_COLLECTION_THRESHOLD = 1000


@contextlib.contextmanager
def fewer_full_collections() -> Iterator[None]:
    """Within the block, the collector's last threshold is at least
    :data:`FULL_COLLECTION_THRESHOLD` (module docstring); its thresholds are restored
    after, also on an error."""
    thresholds = gc.get_threshold()
    if thresholds[2] >= FULL_COLLECTION_THRESHOLD:
        yield
        return
    gc.set_threshold(thresholds[0], thresholds[1], FULL_COLLECTION_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
