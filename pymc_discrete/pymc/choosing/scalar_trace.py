"""PyMC's trace of a ``pm.sample`` run, recording the variables it holds with a function
that does not take every variable as an input of one compiled function.

PyMC's ``NDArray`` trace compiles one function from every value variable to every
traced variable (the variables themselves, their untransformed values, the
Deterministics), and calls it at every draw. On a model written one variable per site
that function has a thousand inputs and outputs, most of them a variable passed through
unchanged: numba compiled it for 517 s at 1,000 scalar variables (a hidden Markov chain
in a loop, warm caches; 0.5 s at 300), and each call converts every argument.

:func:`recording_trace` gives ``pm.sample`` PyMC's own ``NDArray`` backend with a
function of the same values (:class:`TracedValues`): a traced variable that is a value
variable is the value itself, as PyMC's function returns it (its inputs and outputs are
borrowed); the others (untransformed values, Deterministics) are PyMC's graphs, compiled
by PyMC as the trace compiles them, from the value variables they read only. The draws,
their dtypes and the returned layout are PyMC's.
"""

from __future__ import annotations

import operator

import numpy as np
import pytensor
from pymc.backends.ndarray import NDArray
from pytensor.graph.traversal import graph_inputs

__all__ = ["ChainTraces", "TracedValues", "recording_trace", "with_recording_trace"]


class TracedValues:
    """``(*values of model.value_vars) -> [value of every traced variable]``, as PyMC's
    trace function computes it (module docstring); called by position as the trace
    calls it, or by the value variables' names.

    Parameters
    ----------
    model : pymc.Model
    traced : sequence of Variable
        The traced variables (PyMC's default: ``model.unobserved_value_vars``).
    """

    def __init__(self, model, traced) -> None:
        inputs = list(model.value_vars)
        position = {var: i for i, var in enumerate(inputs)}
        self._names = [var.name for var in inputs]
        #: per traced variable, the input it is (None: computed)
        self._direct = [position.get(var) for var in traced]
        computed = [var for var, p in zip(traced, self._direct, strict=True) if p is None]
        read = set(graph_inputs(computed))
        #: the inputs the computed variables read, by position
        self._read = [i for i, var in enumerate(inputs) if var in read]
        #: where the traced variables are the inputs in order, then the computed ones
        #: (PyMC's default: value variables, untransformed values, Deterministics), how
        #: many inputs lead: the values are then a slice of the arguments (a thousand
        #: scalar variables: 10 us a draw, where picking them one by one took 40 us)
        self._leading = None
        leading = self._direct.index(None) if computed else len(self._direct)
        if (self._direct[:leading] == list(range(leading))
                and all(p is None for p in self._direct[leading:])):
            self._leading = leading
        self._function = None
        if computed:
            self._function = model.compile_fn(
                outs=[pytensor.Out(var, borrow=True) for var in computed],
                inputs=[pytensor.In(inputs[i], borrow=True) for i in self._read],
                point_fn=False, on_unused_input="ignore", trust_input=True)

    def __call__(self, *args, **kwargs) -> list:
        if kwargs:
            args = tuple(kwargs[name] for name in self._names)
        if self._leading is not None:
            values = list(args[:self._leading])
            if self._function is not None:
                values.extend(self._function(*[args[i] for i in self._read]))
            return values
        computed = iter(self._function(*[args[i] for i in self._read])
                        if self._function is not None else ())
        return [args[p] if p is not None else next(computed) for p in self._direct]


class ChainTraces(NDArray):
    """PyMC's ``NDArray`` backend, given to ``pm.sample`` as the trace of every chain.

    PyMC makes each chain's trace a shallow copy of the one it is given; an ``NDArray``
    copied so shares its arrays of draws, and the second chain's set-up then appends to
    the first chain's draws (PyMC 6.4, measured: the digests of every two-chain run
    changed). Each copy here starts with arrays of its own.

    PyMC's ``record`` stores every traced variable into its own array, one NumPy
    assignment each: with a thousand scalar variables, 0.18 ms a draw, more than the
    exact draw of a thousand-step chain. Here the scalar variables of one dtype are the
    columns of one (draws, k) array, written a row a draw; ``samples`` holds each
    column as the variable's array (a view), so everything PyMC reads afterwards reads
    the same arrays of the same values and dtypes."""

    #: per dtype of scalar variables: (the (draws, k) array, ``traced values -> theirs``:
    #: a slice where they are consecutive); None: PyMC's own recording (the trace was
    #: set up again, its arrays concatenated)
    _rows: list | None = None
    #: the positions of the other traced variables, recorded as PyMC records them
    _others: list | None = None

    def __copy__(self) -> ChainTraces:
        fresh = type(self).__new__(type(self))
        fresh.__dict__.update(self.__dict__)
        fresh.samples, fresh._stats, fresh.draws, fresh.draw_idx = {}, None, None, 0
        fresh._rows = fresh._others = None
        return fresh

    def setup(self, draws, chain, sampler_vars=None) -> None:
        """PyMC's set-up; then the scalar variables' arrays become the columns of one
        array per dtype (class docstring)."""
        fresh = not self.samples
        super().setup(draws, chain, sampler_vars)
        self._rows = self._others = None
        if not fresh:  # PyMC concatenated new draws to the old: its own recording
            return
        by_dtype: dict[str, list[int]] = {}
        others = []
        for position, name in enumerate(self.varnames):
            if self.var_shapes[name] == ():
                by_dtype.setdefault(str(self.var_dtypes[name]), []).append(position)
            else:
                others.append(position)
        rows = []
        for dtype, positions in by_dtype.items():
            if len(positions) < 2:
                others.extend(positions)
                continue
            block = np.empty((self.draws, len(positions)), dtype=dtype)
            for column, position in enumerate(positions):
                self.samples[self.varnames[position]] = block[:, column]
            consecutive = positions == list(range(positions[0], positions[-1] + 1))
            rows.append((block, operator.itemgetter(slice(positions[0], positions[-1] + 1))
                         if consecutive else operator.itemgetter(*positions)))
        self._rows, self._others = rows, sorted(others)

    def record(self, point, sampler_stats=None, *, in_warmup: bool) -> None:
        """PyMC's ``record``, the scalar variables a row at a time."""
        if self._rows is None:
            super().record(point, sampler_stats, in_warmup=in_warmup)
            return
        values = self.fn(*point.values())
        draw = self.draw_idx
        for block, pick in self._rows:
            block[draw] = np.fromiter(pick(values), dtype=block.dtype, count=block.shape[1])
        samples, names = self.samples, self.varnames
        for position in self._others:
            samples[names[position]][draw] = values[position]
        if sampler_stats is not None:
            for data, stats in zip(self._stats, sampler_stats, strict=False):
                for key, value in stats.items():
                    data[key][draw] = value
        elif self._stats is not None:
            raise ValueError("Expected sampler_stats")
        self.draw_idx += 1


def recording_trace(model) -> ChainTraces:
    """PyMC's default trace backend for ``model`` (its ``NDArray`` of
    ``model.unobserved_value_vars``) recording with :class:`TracedValues`."""
    traced = model.unobserved_value_vars
    return ChainTraces(model=model, vars=traced, fn=TracedValues(model, traced))


def with_recording_trace(model, kwargs: dict) -> dict:
    """``pm.sample``'s keyword arguments with :func:`recording_trace` as its trace, where
    PyMC would build its default one for a model with discrete variables (no trace and
    no ``var_names`` given, PyMC's own NUTS); the arguments as they are elsewhere (an
    all-continuous model keeps PyMC's rule that picks nutpie only when no trace is
    given)."""
    if (kwargs.get("trace") is not None or kwargs.get("var_names") is not None
            or kwargs.get("nuts_sampler", "pymc") not in (None, "pymc")
            or not model.discrete_value_vars):
        return kwargs
    return {**kwargs, "trace": recording_trace(model)}
