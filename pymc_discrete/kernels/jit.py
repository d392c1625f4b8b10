"""numba's ``njit`` with the compiled code cached on disk where numba can write it.

numba looks for a cache location when a function is defined: ``NUMBA_CACHE_DIR``, the
``__pycache__`` beside the module, or the user's cache directory (``~/.cache/numba``).
If none is writable (a read-only install in a container with a read-only home, say)
``numba.njit(cache=True)`` raises at definition, and importing the package would fail.
:func:`njit_cached` then compiles without a disk cache instead (every process compiles
the package's kernels again, at its start) and says once how to get the cache.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numba

__all__ = ["njit_cached"]

_warned = False


def njit_cached(func: Callable | None = None, **options) -> Callable:
    """``numba.njit(cache=True, **options)``, or without the disk cache (with one warning
    per process) where numba has no writable place to cache in.

    Parameters
    ----------
    func : callable, optional
        The function to compile (as ``@njit_cached``); without it, a decorator taking
        ``options`` (as ``@njit_cached(boundscheck=False)``).
    **options
        Passed to ``numba.njit``.

    Returns
    -------
    callable
        The numba dispatcher (or the decorator).

    Examples
    --------
    >>> from pymc_discrete.kernels.common import probabilistic_round
    >>> type(probabilistic_round).__name__  # defined with @njit_cached
    'CPUDispatcher'
    """

    def decorate(function: Callable) -> Callable:
        try:
            return numba.njit(cache=True, **options)(function)
        except RuntimeError as err:
            if "no locator available" not in str(err):
                raise
            _warn_no_cache(err)
            return numba.njit(**options)(function)

    return decorate if func is None else decorate(func)


def _warn_no_cache(err: RuntimeError) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"numba cannot cache pymc_discrete's kernels on disk ({err}); they are "
            "compiled again in every process. Set NUMBA_CACHE_DIR to a writable "
            "directory to keep them.",
            RuntimeWarning,
            stacklevel=3,
        )
