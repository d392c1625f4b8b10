"""What a step costs, counted in evaluations of the model's log density.

Automatic choices weigh kernels by their cost, and a choice must not depend on the
machine's load: the same seed has to give the same choice, and so the same chain, in any
process. The cost is therefore counted, not timed. Its unit is one evaluation of the
block's terms at one state:

- a logp+gradient call of the relaxation costs :data:`GRADIENT_CALL` evaluations (a
  forward and a reverse pass over the graph);
- a call of the exact local ratios costs one evaluation per row of its batched states
  (:func:`exact_call`: the current state, and one row per colour and value);
- every Metropolis-Hastings step costs :data:`STEP_OVERHEAD` more (drawing the proposal,
  the acceptance test and the call itself: of the order of one small evaluation).

The calls are counted as the kernels make them (:class:`CountedCalls`), so a kernel
whose number of calls varies with its path (PAS evaluates exact ratios at every point of
the path) is charged for the calls it made.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["GRADIENT_CALL", "STEP_OVERHEAD", "CountedCalls", "exact_call"]

#: evaluations of one logp+gradient call (reverse mode costs a small multiple of the
#: forward pass; the C backend fuses most of the two)
GRADIENT_CALL = 2.0
#: evaluations of a step's own work beside its calls of the ratio source
STEP_OVERHEAD = 1.0


def exact_call(n_colours: int, rows_per_colour: int) -> float:
    """Evaluations of one call of the exact local ratios: one batched row for the current
    state and ``rows_per_colour`` per colour (1 for a binary block, K for a categorical
    one).

    Examples
    --------
    >>> exact_call(2, 1)  # a binary lattice in two colours
    3.0
    """
    return float(1 + n_colours * rows_per_colour)


class CountedCalls:
    """A ratio source that counts its calls; every other attribute is the source's.

    Parameters
    ----------
    source : callable
        ``x -> (logp, local log-ratios)``.

    Examples
    --------
    >>> counted = CountedCalls(lambda x: (0.0, x))
    >>> _ = counted(1), counted(2)
    >>> counted.calls
    2
    """

    def __init__(self, source: Callable) -> None:
        self.source = source
        #: calls so far
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return self.source(x)

    def __getattr__(self, name: str):
        if name == "source":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.source, name)
