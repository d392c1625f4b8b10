"""Exact local log-ratios of a block of binary or categorical sites, for
``proposal="exact"``.

The model's log density is split into elementwise terms (each variable's elementwise logp,
and every potential split at its sums), the terms that depend on the block are compiled as
one function batched over a leading axis of states (``vectorize_graph``), and the sites
are coloured so that sites sharing no term are flipped together
(:mod:`pymc_discrete.kernels.structure`). One batched call per draw then gives the exact
log density and every single-flip log-ratio; its cost is (colours + 1) evaluations of the
terms, linear in N when interactions are sparse. How set-up finds which terms each site
changes is :mod:`~pymc_discrete.pymc.model.structure_reading`'s job.
"""

from __future__ import annotations

import time

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.mode import Mode
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import variable_depends_on

from pymc_discrete.kernels.exact_tables import TermLayout, colour_conditionals, local_ratios
from pymc_discrete.kernels.gibbs_loop import ColourLayout
from pymc_discrete.kernels.structure import (
    TermStructure,
)
from pymc_discrete.pymc.model.batched_gathers import flatten_batched_gathers
from pymc_discrete.pymc.model.compiled import CompiledExactRatios, CompiledTerms
from pymc_discrete.pymc.model.creation_traces import untraced
from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.model.setup_progress import SetupProgress, listed
from pymc_discrete.pymc.model.stacking import join_block_inputs
from pymc_discrete.pymc.model.step_cost import exact_call
from pymc_discrete.pymc.model.structure_reading import (
    MAX_BATCH_VALUES,
    StructureReading,
    probe_points,
)
from pymc_discrete.pymc.model.terms import block_pieces, without_checks
from pymc_discrete.pymc.model.unary_tables import tabulate_unary_pieces

__all__ = ["MAX_BATCH_VALUES", "ExactRatios", "probe_points"]



class ExactRatios(StructureReading):
    """``x -> (logp of the block's terms, exact local log-ratios)``.

    For binary sites (``n_categories`` None) the ratios are a vector of single-flip
    log-ratios; for categorical sites an (N, K) table ``d(i, v)`` with NaN at the current
    values and -inf at values a site does not have.

    Parameters
    ----------
    model : pymc.Model
    value_vars : sequence of Variable
        The block's value variables (binary or categorical).
    point : dict
        A point of the model (shapes, and the probe for the structure).
    shared : dict
        Other value variable -> shared variable holding its current value.
    compile_kwargs : dict, optional
        Passed to :func:`pymc.pytensorf.compile`.
    seed : int
        Seed of the random probes used to discover the structure.
    n_categories : ndarray of int64, optional
        Number of values of every site; None for a binary block.
    offsets : ndarray of int64, optional
        Smallest value of every site (DiscreteUniform): the ratios and states are in site
        indices, ``value = offset + index``.
    within_values : bool
        Whether every state evaluated keeps each site within its ``n_categories`` values
        (the block's support). Then a piece whose every element is a fixed function of
        one site (a variable's own log density with fixed parameters) is read from a
        table computed here (:mod:`~pymc_discrete.pymc.model.unary_tables`). False for latent
        counts, whose states go beyond the two values the structure is read at.

    Attributes
    ----------
    n_terms : int
        Number of elementwise terms that depend on the block.
    structure : TermStructure
        Terms of every site and the colouring.
    setup_report : dict
        How set-up went: ``structure`` ("graph": coloured by the graph's dependency
        superset, exact at every state; "probes": by the dependencies seen at the probe
        points, when the superset is unavailable or much coarser; "graph and probes":
        the superset where the graph was read, the probed dependencies of the pieces it
        could not be read for), ``method`` ("grouped", "site by site", or "grouped, and
        site by site for the terms not read"), ``groups`` (number
        of groups of sites probed together), ``tabulated_pieces`` (pieces read from a
        table), ``checks`` (single-site moves that checked
        them), ``rows`` (states at which all the terms were evaluated), ``rows_unread``
        (states at which the unread pieces' terms alone were), ``seconds`` per stage and
        in total, ``fallback`` (why the graph was not read whole, or the grouped
        discovery not used; None when it was) and ``imprecise_ops`` (ops the graph
        analysis treats coarsely).
    """

    @untraced
    def __init__(
        self, model, value_vars, point, shared, compile_kwargs=None, seed=0, n_categories=None,
        offsets=None, within_values: bool = True,
    ):
        value_vars = list(value_vars)
        #: names of the block's value variables, in block order
        self.var_names = tuple(v.name for v in value_vars)
        #: smallest value of every site (site index v stands for offset + v), or None
        self.offsets = (
            None if offsets is None or not np.any(offsets) else np.asarray(offsets, np.int64)
        )
        #: other value variable -> the shared variable its current value is read from
        #: (a step built on this object must update these)
        self.shared = shared
        self.n_categories = None if n_categories is None else np.asarray(n_categories, np.int64)
        #: the shape of every variable of the block, in block order
        self.shapes = tuple(np.shape(point[v.name]) for v in value_vars)
        n_sites = int(sum(np.size(point[v.name]) for v in value_vars))
        names = listed(v.name for v in value_vars)
        progress = SetupProgress(f"exact local ratios of {names} ({n_sites} sites)")
        seconds: dict[str, float] = {}
        tick = time.perf_counter()
        try:
            progress("splitting the log density into elementwise terms")
            pieces, _ = block_pieces(model, value_vars)
            vector = pt.concatenate(pieces)
            # which terms read the model's other variables (a term that reads none is
            # the same at every draw), elementwise like the terms themselves
            block = set(value_vars)
            others = [v for v in model.value_vars if v not in block]
            piece_reads = [variable_depends_on(piece, others) for piece in pieces]
            reads = pt.concatenate([
                pt.ones_like(piece, dtype="bool") if read
                else pt.zeros_like(piece, dtype="bool")
                for piece, read in zip(pieces, piece_reads, strict=True)])
            # stacked scalar variables (one variable per site) read as one gather
            [vector, reads, *joined_pieces], joined = join_block_inputs(
                point, [vector, reads, *pieces], value_vars, shared)
            self._site_values = (np.full(n_sites, 2, dtype=np.int64)
                                 if self.n_categories is None else self.n_categories)
            # a discrete variable's own log density with fixed parameters, read from a
            # table: PyTensor's code for it can cost more than the couplings beside it
            # the block at the point, in the graph's own values
            values = np.concatenate([np.ravel(point[v.name]) for v in value_vars])
            joined_pieces, n_tabulated = (tabulate_unary_pieces(
                joined_pieces, piece_reads, joined, values.astype(joined.type.dtype),
                self._site_values, self.offsets) if within_values else (joined_pieces, 0))
            if n_tabulated:
                vector = pt.concatenate(joined_pieces)
            #: the pieces the terms are concatenated from, as graphs of ``joined``: read
            #: one by one when the whole vector cannot be
            self._pieces = joined_pieces
            self._reads_graph = (joined, reads)
            self._term_reads_others = None
            self.n_sites = n_sites
            # Parameter checks (0 <= p <= 1, sigma > 0) reduce over whole arrays: read as
            # dependencies they couple every site with every term. A check only ever
            # passes its value through or makes the log density -inf, so the structure is
            # read off the graph without them, the terms of a state are the check-free
            # ones where its checks hold and -inf where one fails, and a batch reports
            # whether every check held at every state (``checks_held``).
            unchecked, held = without_checks(vector, joined)
            if not getattr(model, "check_bounds", True):
                held = pt.constant(True)  # the model asked for its checks to be dropped
            #: whether a parameter check reads the block's sites (then a check that held
            #: at states near x need not hold at x itself)
            self._checks_read_sites = variable_depends_on(held, [joined])
            batch = pt.matrix("states", dtype=joined.type.dtype, shape=(None, self.n_sites))
            terms_b, held_b = flatten_batched_gathers(
                vectorize_graph([unchecked, held], replace={joined: batch}))
            held_b = held_b.astype("bool")  # pt.constant(True) is int8: ~ must be logical
            # row by row: a check that fails at one state must not touch the others (the
            # checked graph, vectorised, reduces its conditions over the whole batch).
            # A check that reads no site is one value for the whole batch, broadcast by
            # the callers: an Alloc in the graph cost seconds of numba compilation cold
            progress("compiling the batched terms")
            #: the batched graph, compiled again in NUMBA mode by :meth:`compiled_terms`
            self._batch_graph = ([batch], [terms_b, held_b])
            self._compile_kwargs = compile_kwargs
            self._compiled_terms = None
            self._compiled_target = None
            self._fn = compile_function([batch], [terms_b, held_b], **(compile_kwargs or {}))
            self._fn.trust_input = True
            self.checks_held = True
            self._dtype = joined.type.dtype
            self._max_values = int(self._site_values.max()) if n_sites else 2
            x0 = values.astype(np.int64)
            if self.offsets is not None:
                x0 = x0 - self.offsets
            self._rows = 1
            self.n_terms = int(self.batch_terms(x0[None, :]).shape[1])
            self._rows = max(1, MAX_BATCH_VALUES // max(1, self.n_terms))
            seconds["compile"] = time.perf_counter() - tick
            self.structure = self._discover(unchecked, joined, x0, shared, seed, progress,
                                            seconds)
        finally:
            seconds["total"] = progress.close()
        self.setup_report["seconds"] = seconds
        self.setup_report["tabulated_pieces"] = n_tabulated

    def batch_terms(self, states: np.ndarray, checked: bool = True) -> np.ndarray:
        """Terms at every row of ``states`` (site indices; chunked so memory stays bounded):
        all -inf at a state where a parameter check fails, or with ``checked=False`` the
        check-free terms (what the structure is discovered from). Sets
        :attr:`checks_held`: whether every check held at every row."""
        if self.offsets is not None:
            states = states + self.offsets
        states = np.ascontiguousarray(states, dtype=self._dtype)
        if states.shape[0] <= self._rows:
            terms, held = self._fn(states)
        else:
            parts = [self._fn(states[i : i + self._rows])
                     for i in range(0, states.shape[0], self._rows)]
            terms = np.concatenate([part[0] for part in parts])
            held = np.concatenate([np.broadcast_to(part[1], part[0].shape[:1])
                                   for part in parts])
        self.checks_held = bool(held.all())
        if checked and not self.checks_held:
            # a fresh output array of the compiled function
            terms[~np.broadcast_to(held, terms.shape[:1])] = -np.inf
        return terms
    def compiled_terms(self) -> CompiledTerms:
        """The batched terms compiled in PyTensor's NUMBA mode, for compiled loops:
        ``(states, *shared values) -> (terms, checks held)``, the states in the graph's
        own values (offsets added). Compiled at the first call (seconds: numba compiles
        the whole graph), then kept."""
        if self._compiled_terms is None:
            inputs, outputs = self._batch_graph
            fn = compile_function(inputs, outputs, **{**(self._compile_kwargs or {}), "mode": "NUMBA"})
            fn.trust_input = True
            self._compiled_terms = CompiledTerms(fn)
        return self._compiled_terms

    @property
    def proven(self) -> bool:
        """Whether the colouring comes from the graph's dependency superset: sites of one
        colour then share no term at any state (else only at the probe points)."""
        return self.setup_report["structure"] == "graph"

    def colour_order(self) -> tuple[np.ndarray, np.ndarray]:
        """The sites sorted by colour (stably) and where each colour starts: the sites
        of colour c are ``order[bounds[c]:bounds[c + 1]]``."""
        colour = self.structure.colour
        order = np.argsort(colour, kind="stable").astype(np.int64)
        bounds = np.searchsorted(colour[order], np.arange(self.structure.n_colours + 1))
        return order, bounds.astype(np.int64)

    def compiled_target(self) -> CompiledExactRatios:
        """These ratios as a compiled target for the compiled loops (the batched terms
        compiled in NUMBA mode, :meth:`compiled_terms`): the same numbers as calling this
        object, to the bit, on the same terms."""
        if self._compiled_target is None:
            s = self.structure
            offsets = np.zeros(0, np.int64) if self.offsets is None else self.offsets
            layout = (
                np.asarray(s.colour, np.int64), int(s.n_colours),
                np.asarray(s.site_ptr, np.int64), np.asarray(s.site_terms, np.int64),
                self._site_values, self._max_values, offsets,
                np.zeros(0, dtype=self._dtype), self._rows,
            )
            self._compiled_target = CompiledExactRatios(
                self.compiled_terms(), layout, binary=self.n_categories is None)
        return self._compiled_target

    def sweep_layout(self, heat_bath_share: float) -> ColourLayout:
        """What the compiled Gibbs sweep
        (:func:`~pymc_discrete.kernels.gibbs_loop.gibbs_sweeps`) needs of this structure,
        with sites updated by that share of heat-bath draws."""
        order, bounds = self.colour_order()
        offsets = np.zeros(0, np.int64) if self.offsets is None else self.offsets
        return ColourLayout(
            order, bounds, np.asarray(self.structure.site_ptr, np.int64),
            np.asarray(self.structure.site_terms, np.int64), self._site_values,
            self._max_values, offsets, np.zeros(0, dtype=self._dtype), self._rows,
            self.proven, self._layout.value_rows_only, float(heat_bath_share),
        )

    def colour_sites(self) -> list[np.ndarray]:
        """The sites of every colour, in colour order."""
        order, bounds = self.colour_order()
        return [order[bounds[c] : bounds[c + 1]] for c in range(self.structure.n_colours)]

    def block_logp(self, x: np.ndarray) -> float:
        """Sum of the terms that depend on the block, at ``x``."""
        return float(self.batch_terms(np.asarray(x)[None, :])[0].sum())

    def checked_terms(self, states: np.ndarray) -> tuple[np.ndarray, bool]:
        """:meth:`batch_terms` and whether every check held at every row: the
        :data:`~pymc_discrete.kernels.exact_tables.BatchTerms` the tables read."""
        terms = self.batch_terms(states)
        return terms, self.checks_held

    @property
    def structure(self) -> TermStructure:
        """Terms of every site and the colouring (setting it rebuilds :attr:`layout`, whose
        conditionals skip x only where the colouring is proven: set
        ``setup_report["structure"]`` first)."""
        return self._structure

    @structure.setter
    def structure(self, structure: TermStructure) -> None:
        self._structure = structure
        self._layout = TermLayout(structure, self.n_categories, self._site_values,
                                  self._max_values,
                                  value_rows_only=self.proven and not self._checks_read_sites)

    @property
    def layout(self) -> TermLayout:
        """What the ratio and conditional tables read of the terms' structure."""
        return self._layout

    @property
    def term_reads_others(self) -> np.ndarray:
        """Per term (bool, shape (M,)): whether it reads the model's other variables,
        from the graph (a term that reads none has the same value at a state at every
        draw, whatever the other steps do)."""
        if self._term_reads_others is None:
            joined, reads = self._reads_graph
            fn = pytensor.function([joined], reads, mode=Mode(linker="py", optimizer=None),
                                   on_unused_input="ignore")
            x = np.zeros(self.n_sites, dtype=joined.type.dtype)
            if self.offsets is not None:
                x = x + self.offsets
            flags = np.asarray(fn(x), dtype=bool)
            if flags.shape != (self.n_terms,):
                raise ValueError(f"{flags.size} flags for {self.n_terms} terms")
            self._term_reads_others = flags
        return self._term_reads_others

    @property
    def evaluations_per_call(self) -> float:
        """What one call costs, in evaluations of the block's terms
        (:func:`~pymc_discrete.pymc.model.step_cost.exact_call`): the rows of its batch."""
        return exact_call(self._structure.n_colours, self._layout.rows_per_colour)

    def colour_conditionals(self, x: np.ndarray,
                            sites: np.ndarray) -> tuple[float, np.ndarray, bool]:
        """``(logp at x, (n_c, K) table of d(i, v), proven)`` for the sites of one colour
        (:func:`~pymc_discrete.kernels.exact_tables.colour_conditionals`)."""
        return colour_conditionals(self.checked_terms, self._layout, x, sites)

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(logp of the block's terms at x, exact local log-ratios)``
        (:func:`~pymc_discrete.kernels.exact_tables.local_ratios`)."""
        return local_ratios(self.checked_terms, self._layout, x)
