"""Compiled PyTensor functions of a block of discrete sites: relaxed logp + local
log-ratios for the locally balanced proposals, exact logp for random-walk steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.graph.replace import clone_replace

from pymc_discrete.kernels.first_class import FirstClassTarget
from pymc_discrete.pymc.model.relaxation import relaxed_logp
from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.model.stacking import join_block_inputs

__all__ = [
    "CompiledExactRatios",
    "CompiledRatios",
    "CompiledTerms",
    "NumbaFunction",
    "compile_gradient_ratios",
    "compile_exact_logp",
]


def _built_once(cache: dict, key, target, factory: Callable, args: tuple) -> Callable:
    """``factory(target, *args)``, remembered in ``cache`` while ``key`` is the same object
    (the model's numba function: a new one after unpickling in another process)."""
    cached = cache.get(factory)
    if cached is None or cached[0] is not key:
        cached = (key, factory(target, *args))
        cache[factory] = cached
    return cached[1]


class NumbaFunction:
    """A PyTensor function compiled in NUMBA mode with one explicit input and two outputs,
    as a numba function that compiled loops call without Python in between, with the
    current values of the shared variables it reads.

    Parameters
    ----------
    fn : pytensor.compile.function.types.Function
        Compiled in NUMBA mode, with one explicit input and two outputs; shared variables
        become further inputs of its numba function.

    Notes
    -----
    The numba function and the cells of the shared variables are read from ``fn`` at
    every use: they are rebuilt when the step method is pickled into a worker process,
    and ``set_value`` on a shared variable (another step moving a continuous variable)
    updates its cell.
    """

    def __init__(self, fn) -> None:
        self.fn = fn
        if len(fn.maker.fgraph.outputs) != 2 or len(fn.vm.inputs) != len(fn.maker.inputs):
            raise NotImplementedError("the compiled function has updates or hidden inputs")
        self._specialised: dict = {}

    def __getstate__(self) -> dict:
        # loops specialised on this process's numba function are rebuilt after unpickling
        return {**self.__dict__, "_specialised": {}}

    def specialised(self, factory: Callable, *args) -> Callable:
        """``factory(self.target, *args)``, built once per process (e.g. a compiled loop
        with the target built in:
        :func:`~pymc_discrete.kernels.albp_loop.specialise_albp_loop`); ``args`` are read
        at the first call only."""
        return _built_once(self._specialised, self.target, self.target, factory, args)

    @property
    def target(self):
        """The numba dispatcher ``(relaxed sites, *shared values) -> (logp, ratios)``."""
        return self.fn.vm.jit_fn

    def shared_values(self) -> tuple:
        """Current values of the shared variables, in the order ``target`` takes them."""
        return tuple(cell[0] for cell in self.fn.vm.inputs[1:])


class CompiledTerms(NumbaFunction):
    """The batched terms of a block compiled in NUMBA mode (:class:`NumbaFunction`):
    ``(states, *shared values) -> (terms, checks held)``, for the compiled loops that
    build exact ratios and Gibbs conditionals from them."""


class CompiledRatios(NumbaFunction):
    """``x -> (logp(x), local log-ratios)`` of a block (the flip vector of a binary block,
    the (N, K) table of a categorical one), built with PyTensor's NUMBA mode
    (:class:`NumbaFunction`: the relaxed sites in, the log density and ratios out).
    """

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        logp_value, ratio_values = self.fn(np.asarray(x, dtype=np.float64))
        return float(logp_value), ratio_values


class CompiledExactRatios:
    """Exact local ratios of a block as a compiled target, for the compiled loops:
    ``target(x as float64, terms, shared values, layout) -> (logp, ratios)``
    (:func:`~pymc_discrete.kernels.exact_loop.exact_flip_ratios` or
    :func:`~pymc_discrete.kernels.exact_loop.exact_ratio_table`) on the model's batched
    terms compiled in NUMBA mode, passed as a pointer. Built by
    :meth:`~pymc_discrete.pymc.model.exact.ExactRatios.compiled_target`; the same interface as
    :class:`CompiledRatios`.

    Parameters
    ----------
    terms : CompiledTerms
        The batched terms ``(states, *shared values) -> (terms, checks held)``.
    layout : tuple
        ``(colour, n_colours, site_ptr, site_terms, n_categories, k, offsets, like, rows)``.
    binary : bool
        Whether the block is binary (flip ratios) or categorical (an (N, K) table).
    """

    def __init__(self, terms: CompiledTerms, layout: tuple, binary: bool) -> None:
        from pymc_discrete.kernels.exact_loop import exact_flip_ratios, exact_ratio_table

        self.terms = terms
        self.layout = layout
        self.binary = binary
        #: the numba function ``(x, terms, shared values, layout) -> (logp, ratios)``
        self.target = exact_flip_ratios if binary else exact_ratio_table
        self._first_class: tuple | None = None
        self._specialised: dict = {}

    def __getstate__(self) -> dict:
        # the terms' address and the loops built on it are this process's: rebuilt after
        # unpickling
        return {**self.__dict__, "_first_class": None, "_specialised": {}}

    def _terms_pointer(self) -> FirstClassTarget:
        """The terms as a first-class function, built once per process (on the terms'
        current numba function)."""
        terms = self.terms.target
        if self._first_class is None or self._first_class[0] is not terms:
            like = self.layout[7]
            states = np.zeros((2, self.layout[0].size), dtype=like.dtype)
            pointer = FirstClassTarget(terms, states, self.terms.shared_values())
            self._first_class = (terms, pointer)
        return self._first_class[1]

    def specialised(self, factory: Callable, *args) -> Callable:
        """``factory(self.target, *args)``, built once per process (as
        :meth:`NumbaFunction.specialised`)."""
        return _built_once(self._specialised, self._terms_pointer(), self.target, factory,
                           args)

    def shared_values(self) -> tuple:
        """The target's further arguments: the terms (a pointer), the shared variables'
        current values and the layout."""
        return (self._terms_pointer(), self.terms.shared_values(), self.layout)

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        from pymc_discrete.kernels.exact_loop import exact_ratios_from_python

        logp, ratios = exact_ratios_from_python(
            np.asarray(x, dtype=np.float64), *self.shared_values(), self.binary)
        return float(logp), ratios[:, 0] if self.binary else ratios


def compile_gradient_ratios(
    model,
    value_vars: Sequence[Variable],
    shapes: Sequence[tuple[int, ...]],
    categorical: Sequence[bool],
    n_values: Sequence[int],
    shared: dict[Variable, Variable],
    compile_kwargs: dict | None = None,
    numba_loop: bool = False,
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """Compile ``x -> (logp(x), first-order local log-ratios)`` from the gradient of the
    block's continuous relaxation, in the layout of
    :mod:`~pymc_discrete.kernels.ratios`: the flip vector for a block of Bernoulli
    variables only, the (N, K) table as soon as one variable is Categorical.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        Value variables of the block (Bernoulli and Categorical).
    shapes : sequence of tuple of int
        Their shapes.
    categorical : sequence of bool
        Whether each variable is Categorical (else Bernoulli).
    n_values : sequence of int
        K of each variable (2 for Bernoulli).
    shared : dict
        Other value variable -> shared variable holding its current value.
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile` (e.g. ``mode``).
    numba_loop : bool
        Compile in PyTensor's NUMBA mode and return a :class:`CompiledRatios` that
        compiled loops can call.

    Returns
    -------
    callable
        Takes the block's sites as a raveled int64 vector.

    Raises
    ------
    RelaxationError
        When the model has a term the relaxation cannot express.
    """
    if not any(categorical):
        return _compile_flip_ratios(
            model, value_vars, shapes, shared, compile_kwargs, numba_loop=numba_loop
        )
    return _compile_ratio_table(
        model, value_vars, shapes, categorical, n_values, shared, compile_kwargs,
        numba_loop=numba_loop,
    )


def _compile_flip_ratios(
    model,
    value_vars: Sequence[Variable],
    shapes: Sequence[tuple[int, ...]],
    shared: dict[Variable, Variable],
    compile_kwargs: dict | None = None,
    numba_loop: bool = False,
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """Compile ``x -> (logp(x), d(x))`` for a block of binary sites.

    ``d_i = (1 - 2 x_i) * d logp / d x_i`` on the continuous relaxation: the first-order
    estimate of the change of logp when site i flips (exact when logp is multilinear in
    the sites, e.g. Bernoulli priors and pairwise couplings).

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        Binary value variables of the block.
    shapes : sequence of tuple of int
        Their shapes.
    shared : dict
        Other value variable -> shared variable holding its current value.
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile` (e.g. ``mode``).
    numba_loop : bool
        Compile in PyTensor's NUMBA mode and return a :class:`CompiledRatios`, whose
        numba function compiled loops can call.

    Returns
    -------
    callable
        Takes the block's sites as a raveled int64 vector.
    """
    n = int(sum(np.prod(s, dtype=int) for s in shapes))
    flat = pt.vector("relaxed_sites", dtype="float64", shape=(n,))
    logp = relaxed_logp(model, value_vars, shapes, flat)
    if shared:
        logp = clone_replace(logp, replace=shared)
    grad = pytensor.grad(logp, flat)
    ratios = (1.0 - 2.0 * flat) * grad
    kwargs = dict(compile_kwargs or {})
    if numba_loop:
        kwargs["mode"] = "NUMBA"
    fn = compile_function([flat], [logp, ratios], **kwargs)
    fn.trust_input = True
    if numba_loop:
        return CompiledRatios(fn)

    def logp_and_ratios(x: np.ndarray) -> tuple[float, np.ndarray]:
        logp_value, ratio_values = fn(x.astype(np.float64))
        return float(logp_value), ratio_values

    return logp_and_ratios


def _compile_ratio_table(
    model,
    value_vars: Sequence[Variable],
    shapes: Sequence[tuple[int, ...]],
    categorical: Sequence[bool],
    n_values: Sequence[int],
    shared: dict[Variable, Variable],
    compile_kwargs: dict | None = None,
    numba_loop: bool = False,
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """Compile ``x -> (logp(x), (N, K) table of first-order local log-ratios)`` for a block
    of Bernoulli and Categorical variables.

    A categorical site enters the relaxation as a one-hot vector X_i; with ``G = d logp /
    d X`` at the one-hot point, ``d(i, c) = G[i, c] - G[i, x_i]`` (exact when the log
    density is linear in each X_i, e.g. Potts couplings and mixture labels with fixed
    component parameters). A Bernoulli site has ``d(i, 1 - x_i) = (1 - 2 x_i) dlogp/dx_i``.
    The table holds NaN at the current values and -inf at values a site does not have.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
    shapes : sequence of tuple of int
    categorical : sequence of bool
        Whether each variable is Categorical (else Bernoulli).
    n_values : sequence of int
        K of each variable (2 for Bernoulli).
    shared : dict
    compile_kwargs : dict, optional
    numba_loop : bool
        Compile in PyTensor's NUMBA mode, with the sites (not their one-hot relaxation)
        as the input, and return a :class:`CompiledRatios` that compiled loops can call.

    Returns
    -------
    callable
        Takes the block's sites as a raveled int64 vector.
    """
    k_max = int(max(n_values))
    sizes = [int(np.prod(s, dtype=int)) for s in shapes]
    widths = [n * k if cat else n for n, k, cat in zip(sizes, n_values, categorical)]
    flat = pt.vector("relaxed_sites", dtype="float64", shape=(int(sum(widths)),))
    logp = relaxed_logp(
        model, value_vars, shapes, flat,
        n_values=[k if cat else None for k, cat in zip(n_values, categorical)],
    )
    if shared:
        logp = clone_replace(logp, replace=shared)
    grad = pytensor.grad(logp, flat)
    rows = []
    start = 0
    nan = np.float64(np.nan)
    for n, k, cat, width in zip(sizes, n_values, categorical, widths):
        g, x = grad[start : start + width], flat[start : start + width]
        if cat:
            g, x = g.reshape((n, k)), x.reshape((n, k))
            # the current value's entry is selected, not multiplied out: another value
            # of probability zero has g = -inf, and -inf * 0 would be NaN
            current = pt.switch(x > 0.5, g, 0.0).sum(axis=1, keepdims=True)
            table = g - current
            table = pt.switch(x > 0.5, nan, table)
        else:
            table = pt.stack([pt.switch(x > 0.5, -g, nan), pt.switch(x < 0.5, g, nan)], axis=1)
        if k < k_max:
            table = pt.concatenate([table, pt.full((n, k_max - k), -np.inf)], axis=1)
        rows.append(table)
        start += width
    table = pt.concatenate(rows, axis=0) if len(rows) > 1 else rows[0]
    if numba_loop:
        # the input is the sites themselves (as float64): the graph builds the relaxed
        # point, a categorical site's one-hot row included, so the loop passes its state
        sites = pt.vector("sites", dtype="float64", shape=(int(sum(sizes)),))
        parts, start = [], 0
        for n, k, cat in zip(sizes, n_values, categorical):
            segment = sites[start : start + n]
            if cat:
                segment = pt.eq(pt.round(segment)[:, None], pt.arange(k)[None, :])
                segment = segment.astype("float64").ravel()
            parts.append(segment)
            start += n
        relaxed = pt.concatenate(parts) if len(parts) > 1 else parts[0]
        logp, table = clone_replace([logp, table], replace={flat: relaxed})
        fn = compile_function([sites], [logp, table], **{**(compile_kwargs or {}), "mode": "NUMBA"})
        fn.trust_input = True
        return CompiledRatios(fn)
    fn = compile_function([flat], [logp, table], **(compile_kwargs or {}))
    fn.trust_input = True

    # positions in the flat input: a Bernoulli site's float, a categorical site's one-hot
    site_base, is_cat = [], []
    offset = 0
    for n, k, cat, width in zip(sizes, n_values, categorical, widths):
        site_base.append(offset + (np.arange(n) * k if cat else np.arange(n)))
        is_cat.append(np.full(n, cat))
        offset += width
    site_base = np.concatenate(site_base)
    is_cat = np.concatenate(is_cat)
    width_total = offset

    def logp_and_table(x: np.ndarray) -> tuple[float, np.ndarray]:
        relaxed = np.zeros(width_total)
        relaxed[site_base[~is_cat]] = x[~is_cat]
        relaxed[site_base[is_cat] + x[is_cat]] = 1.0
        logp_value, table_value = fn(relaxed)
        return float(logp_value), table_value

    return logp_and_table


def compile_exact_logp(
    model,
    value_vars: Sequence[Variable],
    point: dict[str, np.ndarray],
    shared: dict[Variable, Variable],
    compile_kwargs: dict | None = None,
    offsets: np.ndarray | None = None,
) -> Callable[[np.ndarray], float]:
    """Compile the model's exact joint logp as a function of the block's raveled sites.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        Discrete value variables of the block.
    point : dict
        A point of the model (gives shapes and dtypes).
    shared : dict
        Other value variable -> shared variable holding its current value.
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile`.
    offsets : ndarray of int64, optional
        Smallest value of every site: site index v stands for the value offset + v.

    Returns
    -------
    callable
        ``x (int64 vector of site indices) -> logp``.
    """
    [logp], joined = join_block_inputs(point, [model.logp()], list(value_vars), shared)
    fn = compile_function([joined], logp, **(compile_kwargs or {}))
    fn.trust_input = True
    dtype = joined.type.dtype

    shift = offsets if offsets is not None and np.any(offsets) else None

    def exact_logp(x: np.ndarray) -> float:
        if shift is not None:
            x = x + shift
        return float(fn(np.ascontiguousarray(x, dtype=dtype)))

    return exact_logp
