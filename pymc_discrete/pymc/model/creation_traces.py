"""Graphs built without PyTensor's record of where each node was created.

PyTensor tags every node it makes with the Python stack that made it
(``config.traceback__limit`` frames, 8 by default), a walk of the stack that reads each
frame's source line, for error messages that point at the user's line. Building a
summed-out block's graphs and compiling them makes thousands of nodes: the walk was 0.07
to 0.1 s of the 0.5 s ``CollapsedNUTS`` took to set up a capture-recapture model
(measured with the limit at 0 and at 8). Those nodes are the package's, made from the
user's graph: their stacks would point into this package, and the rewrites that replace
a user's node copy its record onto the new one. So the package builds and compiles its
graphs with the limit at 0, unless the user has set another limit than PyTensor's
default (to debug, say), which is then left as it is.

Imports: PyTensor only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from pytensor import config

__all__ = ["untraced", "without_creation_traces"]

#: PyTensor's default ``traceback__limit``: a user who changed it keeps their choice
_PYTENSOR_DEFAULT_LIMIT = 8


def without_creation_traces() -> AbstractContextManager:
    """A context in which new PyTensor nodes record no creation stack (module
    docstring), or no change where the user set ``traceback__limit`` themselves.

    Returns
    -------
    contextlib.AbstractContextManager

    Examples
    --------
    >>> from pytensor import config
    >>> with without_creation_traces():
    ...     config.traceback__limit
    0
    """
    if config.traceback__limit != _PYTENSOR_DEFAULT_LIMIT:
        return nullcontext()
    return config.change_flags(traceback__limit=0)


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
