"""Graphs built without PyTensor's record of where each node was created.

PyTensor tags every node it makes with the Python stack that made it
(``config.traceback__limit`` frames, 8 by default), a walk of the stack that reads each
frame's source line, for error messages that point at the user's line. Building a
summed-out block's graphs and compiling them makes thousands of nodes: the walk was
about a tenth of the time ``CollapsedNUTS`` took to set up a capture-recapture or an
occupancy model (0.78 -> 0.70 s and 0.61 -> 0.55 s, medians of 7 builds in one process,
the limit at 8 and at 0). Those nodes are the package's, made from the user's graph:
their stacks would point into this package, and the rewrites that replace a user's node
copy its record onto the new one. So the package builds and compiles its graphs with the
limit at 0, unless the limit is not PyTensor's default (a user debugging with another
limit keeps it; one who set 8 explicitly cannot be told from the default).

The limit is one setting of the whole process: while any thread is inside, graphs that
other threads build record no stack either. Entries are counted under a lock, so the
limit found by the first entry is restored by the last exit, also on an error.

Imports: PyTensor only.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator

from pytensor import config

__all__ = ["untraced", "without_creation_traces"]

#: PyTensor's default ``traceback__limit``: a user who changed it keeps their choice
_PYTENSOR_DEFAULT_LIMIT = 8

_lock = threading.Lock()
_inside = 0  # entries not yet exited, over all threads
_restore: int | None = None  # the limit found by the first of them


@contextlib.contextmanager
def without_creation_traces() -> Iterator[None]:
    """A context in which new PyTensor nodes record no creation stack (module
    docstring), or no change where ``traceback__limit`` is not PyTensor's default.

    Examples
    --------
    >>> from pytensor import config
    >>> with without_creation_traces():
    ...     config.traceback__limit
    0
    >>> config.traceback__limit
    8
    """
    global _inside, _restore
    with _lock:
        if _inside == 0:
            _restore = config.traceback__limit
            if _restore == _PYTENSOR_DEFAULT_LIMIT:
                config.traceback__limit = 0
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                config.traceback__limit = _restore


def untraced[**P, R](function: Callable[P, R]) -> Callable[P, R]:
    """``function`` run :func:`without_creation_traces`.

    Parameters
    ----------
    function : callable
        Builds or compiles graphs.

    Returns
    -------
    callable
        The same function, its nodes made without creation stacks.

    Examples
    --------
    >>> import pytensor.tensor as pt
    >>> @untraced
    ... def doubled(x):
    ...     return 2 * x
    >>> doubled(pt.dscalar("x")).tag.trace
    []
    """

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with without_creation_traces():
            return function(*args, **kwargs)

    return wrapper
