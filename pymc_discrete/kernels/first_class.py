"""Compiled loops that call the model's function through a pointer, so that numba caches
them on disk.

A numba function that holds another as a constant (or takes it as an argument typed by
its dispatcher) names that very function in its signature: numba cannot cache it, and
every process compiles it again before its first draw. Passed as a *first-class
function* (an address and a signature), the model's function is named by its argument
and return types only: the loop is cached once per machine and set of types, and a
process that loads it pays nothing but the pointer's boxing at each call of the loop
(not at each step; docs/algorithms.md gives the figures). The model's functions are
star-args functions (PyTensor's NUMBA-mode functions take ``*inputs``), whose
first-class form takes its arguments as one tuple: a loop calls ``target((x,) + extra)``
where it would call ``target(x, *extra)``.
"""

from __future__ import annotations

import types as pytypes
import warnings
from collections.abc import Callable

import numba
import numpy as np
from numba import errors, types

from pymc_discrete.kernels.jit import njit_cached

# numba calls its first-class functions experimental and says so when it compiles a call
# of one: our loops' first compilation on a machine would show it to the user, who can do
# nothing about it (the chains are checked bit for bit against the Python steps' in tests)
warnings.filterwarnings("ignore", message="First-class function type feature is experimental",
                        category=errors.NumbaExperimentalFeatureWarning)

__all__ = ["FirstClassTarget", "call_packed", "calling_first_class"]


class FirstClassTarget(types.WrapperAddressProtocol):
    """A compiled star-args function as a first-class function of numba (its address and
    signature), which compiled code calls through a pointer.

    Parameters
    ----------
    target : numba dispatcher
        A star-args function ``target(*args)`` (as PyTensor's NUMBA-mode functions are).
    x : ndarray
        Its first argument, and ``extra`` the further ones: the target is compiled for
        their types (if it was not), the signature the loop calls it with.
    extra : tuple

    Notes
    -----
    The address is valid in this process only: steps keep these objects among what they
    rebuild after being pickled into a worker process
    (:meth:`~pymc_discrete.pymc.model.compiled.CompiledRatios.specialised`).
    """

    def __init__(self, target, x: np.ndarray, extra: tuple) -> None:
        from numba.experimental.function_type import _get_wrapper_address

        x = np.ascontiguousarray(x)
        target(x, *extra)  # compiled for these types, if it was not
        wanted = (numba.typeof(x),) + tuple(numba.typeof(e) for e in extra)
        for sig in target.nopython_signatures:
            packed = sig.args[0] if len(sig.args) == 1 else None
            if isinstance(packed, types.BaseTuple) and tuple(packed.types) == wanted:
                break
        else:
            raise RuntimeError(f"the target has no compiled signature for {wanted} "
                               "(it must take all its arguments as *args)")
        self._target = target  # keeps the compiled code alive
        self._signature = sig
        self._address = _get_wrapper_address(target, sig)
        # numba's typeof reads this attribute first: no signature built at every call
        self._numba_type_ = types.FunctionType(sig)

    def __wrapper_address__(self) -> int:
        return self._address

    def signature(self):
        return self._signature


def calling_first_class(function, replacements: dict) -> Callable:
    """``function``'s Python code compiled again, cached on disk, with the global names in
    ``replacements`` bound to other compiled functions (those that call the target through
    a pointer, in place of those that call it directly).

    Parameters
    ----------
    function : numba dispatcher
    replacements : dict
        Global name -> the compiled function to use instead.

    Returns
    -------
    numba dispatcher
    """
    func = function.py_func
    names = {**func.__globals__, **replacements}
    copy = pytypes.FunctionType(func.__code__, names, func.__name__, func.__defaults__,
                                func.__closure__)
    copy.__qualname__ = func.__qualname__ + "_first_class"
    return njit_cached(copy)


@njit_cached
def call_packed(target, x, extra):
    """``target(x, *extra)`` of a :class:`FirstClassTarget`: one tuple of arguments."""
    return target((x,) + extra)
