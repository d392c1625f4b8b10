"""PyTensor functions that give the same bits whether compiled now or loaded from a cache.

PyTensor's NUMBA linker compiles with fast-math flags by default
(``pytensor.config.numba__fastmath``: reassociation, contraction into fused
multiply-adds, approximate functions). Those let LLVM choose another order of operations
for the same graph, and the same function compiled in this process and loaded from
PyTensor's disk cache was seen to differ in the last bits (PyMC's own log density of a
mixture: 161 of 1,260 values, by up to 3.6e-15). A Markov chain that differs in one bit
then goes its own way: the same ``random_seed`` gave other draws on a fresh machine than
on a warm one. Every function this package compiles goes through
:func:`compile_function` (or takes :func:`exact_mode`), whose linker,
:class:`ExactNumbaLinker`, compiles with the flags off; the linker is part of the
compiled function, so a function pickled to another process (``pm.sample(cores=2)``
with spawn) is rebuilt there the same way. The flag is part of PyTensor's cache key: a
function compiled with fast math is never loaded in its place.

Imports: PyMC and PyTensor only.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

import pytensor
from pymc.pytensorf import compile as pm_compile
from pytensor.compile.mode import Mode, get_mode
from pytensor.link.numba.linker import NumbaLinker

__all__ = ["ExactNumbaLinker", "compile_function", "exact_arithmetic", "exact_mode"]


def exact_arithmetic() -> AbstractContextManager:
    """A context in which PyTensor compiles without numba's fast-math flags.

    Returns
    -------
    contextlib.AbstractContextManager
        ``pytensor.config.change_flags(numba__fastmath=False)``.

    Examples
    --------
    >>> import pytensor
    >>> with exact_arithmetic():
    ...     pytensor.config.numba__fastmath
    False
    """
    return pytensor.config.change_flags(numba__fastmath=False)


class ExactNumbaLinker(NumbaLinker):
    """PyTensor's numba linker, compiling without fast-math flags (module docstring).

    Examples
    --------
    >>> isinstance(exact_mode("NUMBA").linker, ExactNumbaLinker)
    True
    """

    def make_all(self, *args, **kwargs):
        """Convert and compile the graph inside :func:`exact_arithmetic`."""
        with exact_arithmetic():
            return super().make_all(*args, **kwargs)


def exact_mode(mode=None) -> Mode:
    """``mode`` (a name, a Mode or None for PyTensor's default) with its numba linker
    replaced by :class:`ExactNumbaLinker`; other linkers (C, Python) are kept.

    Parameters
    ----------
    mode : str or pytensor.compile.mode.Mode, optional
        The mode asked for.

    Returns
    -------
    pytensor.compile.mode.Mode

    Examples
    --------
    >>> exact_mode("FAST_COMPILE").linker.__class__.__name__
    'VMLinker'
    """
    mode = get_mode(mode)
    if not isinstance(mode.linker, NumbaLinker) or isinstance(mode.linker, ExactNumbaLinker):
        return mode
    return Mode(linker=ExactNumbaLinker(), optimizer=mode.provided_optimizer)


def compile_function(inputs: Sequence, outputs, **kwargs):
    """:func:`pymc.pytensorf.compile` in :func:`exact_mode` (module docstring).

    Parameters
    ----------
    inputs : sequence of Variable
        The function's inputs.
    outputs : Variable or sequence of Variable
        What it computes.
    **kwargs
        Passed to :func:`pymc.pytensorf.compile` (``mode``, ``on_unused_input``, ...).

    Returns
    -------
    pytensor.compile.function.types.Function

    Examples
    --------
    >>> import pytensor.tensor as pt
    >>> x = pt.dvector("x")
    >>> f = compile_function([x], pt.sum(x**2))
    >>> float(f([1.0, 2.0]))
    5.0
    """
    return pm_compile(inputs, outputs, **{**kwargs, "mode": exact_mode(kwargs.get("mode"))})
