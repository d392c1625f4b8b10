"""Exact local log-ratios of a block of binary or categorical sites, for
``proposal="exact"``.

The model's log density is split into elementwise terms (each variable's elementwise logp,
and every potential split at its sums), the terms that depend on the block are compiled as
one function batched over a leading axis of states (``vectorize_graph``), and the sites
are coloured so that sites sharing no term are flipped together
(:mod:`pymc_discrete.kernels.structure`). One batched call per draw then gives the exact
log density and every single-flip log-ratio; its cost is (colours + 1) evaluations of the
terms, linear in N when interactions are sparse.

Set-up finds which terms each site changes. The graph is read first for the sites each
term *may* depend on (:func:`~pymc_discrete.pymc.dependencies.dependency_superset`,
sound: it never misses a dependency of the graph), which lets whole groups of sites be
probed at once: (groups + 1) batched evaluations per probe point instead of N + 1, so
set-up is linear in N on sparse models too. The probes keep only the dependencies that
show (as brute-force probing did), and a few single-site moves check the grouped result.
What the graph cannot be read for falls back term by term: if the whole term vector cannot
be analysed (an op PyTensor cannot evaluate in Python, or too many possible dependencies),
each piece of it is read on its own, and only the terms of the pieces that still cannot
be are probed site by site, with a batched function of their own; if the check fails,
set-up probes every site on its own. The sites are then coloured by the superset itself (exact at every
state, even for a dependency that shows at none of the probe points) unless it needs
clearly more colours than the probed dependencies; where that coarseness comes from
pieces with an op that has no precise rule, only those pieces' rows are taken from the
probes, the others' stay the graph's. Set-up that takes longer than a few
seconds says what it is doing on the ``pymc.pymc_discrete`` logger (a child of PyMC's
logger, so it is shown where and when PyMC's own messages are).
"""

from __future__ import annotations

import time

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import join_nonshared_inputs
from pytensor.compile.mode import Mode
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import variable_depends_on

from pymc_discrete.kernels.exact_tables import TermLayout, colour_conditionals, local_ratios
from pymc_discrete.kernels.gibbs_loop import ColourLayout
from pymc_discrete.kernels.structure import (
    DependencySuperset,
    StructureMismatch,
    TermStructure,
    build_structure_csr,
    discover_structure_csr,
    transpose_csr,
)
from pymc_discrete.pymc import dependencies, setup_progress
from pymc_discrete.pymc.batched_gathers import flatten_batched_gathers
from pymc_discrete.pymc.compiled import CompiledExactRatios, CompiledTerms
from pymc_discrete.pymc.dependencies import Unanalysable
from pymc_discrete.pymc.setup_progress import SetupProgress
from pymc_discrete.pymc.step_cost import exact_call
from pymc_discrete.pymc.terms import block_pieces, without_checks
from pymc_discrete.pymc.unary_tables import tabulate_unary_pieces

__all__ = ["ExactRatios", "probe_points"]

#: Upper bound on the number of float64 values one batched call may produce.
MAX_BATCH_VALUES = 2**22


def probe_points(x0: np.ndarray, n_categories: np.ndarray | None,
                 rng: np.random.Generator) -> np.ndarray:
    """Where set-up looks for dependencies: ``x0``, the two extreme points (all zeros; all
    ones or every site at its last value) and random points (3 binary, 4 categorical).

    Parameters
    ----------
    x0 : ndarray of int64, shape (N,)
        The initial point.
    n_categories : ndarray of int64, optional
        Number of values of every site; None for binary sites.
    rng : numpy.random.Generator
        Draws the random points.

    Returns
    -------
    ndarray of int64, shape (P, N)

    Examples
    --------
    >>> probe_points(np.zeros(3, np.int64), None, np.random.default_rng(0)).shape
    (6, 3)
    """
    n = x0.size
    if n_categories is None:
        probes = np.vstack([x0, np.zeros(n), np.ones(n), rng.integers(0, 2, (3, n))])
    else:
        ks = np.asarray(n_categories, dtype=np.int64)
        extremes = [np.zeros(n), ks - 1] + [rng.integers(0, ks) for _ in range(4)]
        probes = np.vstack([x0, *extremes])
    return probes.astype(np.int64)


class ExactRatios:
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
        table computed here (:mod:`~pymc_discrete.pymc.unary_tables`). False for latent
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
        n_sites = int(sum(np.size(point[v.name]) for v in value_vars))
        names = ", ".join(v.name for v in value_vars)
        progress = SetupProgress(f"exact local ratios of {names} ({n_sites} sites)")
        seconds: dict[str, float] = {}
        tick = time.perf_counter()
        try:
            progress("splitting the log density into elementwise terms")
            pieces, _ = block_pieces(model, value_vars)
            vector = pt.concatenate(pieces)
            # which terms read the model's other variables (a term that reads none is
            # the same at every draw), elementwise like the terms themselves
            others = [v for v in model.value_vars if v not in value_vars]
            piece_reads = [variable_depends_on(piece, others) for piece in pieces]
            reads = pt.concatenate([
                pt.ones_like(piece, dtype="bool") if read
                else pt.zeros_like(piece, dtype="bool")
                for piece, read in zip(pieces, piece_reads, strict=True)])
            [vector, reads, *joined_pieces], joined = join_nonshared_inputs(
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
            self._fn = pm_compile([batch], [terms_b, held_b], **(compile_kwargs or {}))
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

    def _superset(self, vector, joined, x0, shared, progress, analysis) -> tuple:
        """The graph's dependency superset, the terms it could not read (None when it
        read every one), and why it fell back (or None).

        The whole term vector is read at once; if that fails (an op PyTensor cannot
        evaluate in Python, or a variable with too many possible dependencies), each
        piece is read on its own, so that what cannot be read falls back to probing
        term by term, not for the whole block: the unread pieces' rows of the superset
        are empty and their indices are returned.
        """
        progress("reading the possible dependencies off the graph")
        values = x0 if self.offsets is None else x0 + self.offsets  # the graph's own
        varying = list(shared.values())
        try:
            superset = dependencies.dependency_superset(
                vector, joined, values, varying=varying,
                max_pairs=dependencies.MAX_DEPENDENCY_PAIRS, report=analysis,
            )
        except Unanalysable as err:
            return self._piece_supersets(joined, values, varying, analysis, str(err))
        if superset.term_ptr.size - 1 != self.n_terms:
            return None, None, (f"the graph analysis found {superset.term_ptr.size - 1} "
                                f"terms, the compiled function gives {self.n_terms}")
        return superset, None, None

    def _read_pieces(self, joined, values, varying, coarse_unread: bool = False):
        """Each piece's dependency superset read on its own: a list of (first term, number
        of terms, superset or None: None where the piece cannot be read, or, with
        ``coarse_unread``, where an op without a precise rule made it coarse) and the ops
        without one; None if the pieces' sizes cannot be had."""
        try:
            sizes = pytensor.function([joined], [p.shape[0] for p in self._pieces],
                                      on_unused_input="ignore")(
                values.astype(joined.type.dtype))
        except Exception:  # no shapes without the values
            return None
        out, lo, imprecise = [], 0, set()
        for piece, size in zip(self._pieces, sizes, strict=True):
            size = int(size)
            report: dict = {}
            try:
                part = dependencies.dependency_superset(
                    piece, joined, values, varying=varying,
                    max_pairs=dependencies.MAX_DEPENDENCY_PAIRS, report=report)
                if part.term_ptr.size - 1 != size:
                    raise Unanalysable(f"{part.term_ptr.size - 1} terms read, {size} given")
                imprecise.update(report.get("imprecise_ops", []))
                if coarse_unread and report.get("imprecise_ops"):
                    part = None
            except Unanalysable:
                part = None
            out.append((lo, size, part))
            lo += size
        return (out, sorted(imprecise)) if lo == self.n_terms else None

    @staticmethod
    def _joined_rows(parts) -> DependencySuperset:
        """The pieces' rows in one superset (an unread piece's rows empty)."""
        ptrs, sites = [np.zeros(1, np.int64)], []
        for _, size, part in parts:
            if part is None:
                ptrs.append(np.full(size, ptrs[-1][-1], np.int64))
            else:
                ptrs.append(part.term_ptr[1:] + ptrs[-1][-1])
                sites.append(part.term_sites)
        flat = np.concatenate(sites).astype(np.int64) if sites else np.zeros(0, np.int64)
        return DependencySuperset(np.concatenate(ptrs), flat)

    @staticmethod
    def _replace_rows(superset: DependencySuperset, terms: np.ndarray, term_ptr: np.ndarray,
                      term_sites: np.ndarray) -> DependencySuperset:
        """``superset`` with the row of term ``terms[j]`` replaced by row j of
        ``(term_ptr, term_sites)`` (the sites the probes found for it)."""
        rows = [superset.term_sites[superset.term_ptr[k]:superset.term_ptr[k + 1]]
                for k in range(superset.term_ptr.size - 1)]
        for j, k in enumerate(terms):
            rows[k] = term_sites[term_ptr[j]:term_ptr[j + 1]]
        ptr = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64)
        flat = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
        return DependencySuperset(ptr, flat)

    def _piece_supersets(self, joined, values, varying, analysis, why: str) -> tuple:
        """:meth:`_superset` piece by piece, after the whole vector could not be read."""
        read = self._read_pieces(joined, values, varying)
        if read is None:
            return None, None, why
        parts, analysis["imprecise_ops"] = read
        unread = [np.arange(lo, lo + size) for lo, size, part in parts if part is None]
        unread = np.concatenate(unread).astype(np.int64) if unread else None
        if unread is not None and unread.size == self.n_terms:
            return None, None, why
        superset = self._joined_rows(parts)
        if unread is None:
            return superset, None, f"{why}; every piece was read on its own"
        return superset, unread, (f"{why}; the other terms were read piece by piece and "
                                  f"{unread.size} of {self.n_terms} terms are probed site by "
                                  "site")

    def _mixed_superset(self, joined, x0, shared, result) -> DependencySuperset | None:
        """The superset with the pieces an op without a precise rule made coarse taken
        from the probes (``result``, site -> terms) instead, the others read piece by
        piece; None when no piece is coarse alone or the pieces cannot be read."""
        values = x0 if self.offsets is None else x0 + self.offsets
        read = self._read_pieces(joined, values, list(shared.values()), coarse_unread=True)
        parts = None if read is None else read[0]
        if parts is None or all(part is not None for _, _, part in parts) or all(
                part is None for _, _, part in parts):
            return None
        coarse = np.concatenate([np.arange(lo, lo + size) for lo, size, part in parts
                                 if part is None]).astype(np.int64)
        term_ptr, term_sites = transpose_csr(result[0], result[1], self.n_terms)
        probed = [term_sites[term_ptr[t]:term_ptr[t + 1]] for t in coarse]
        ptr = np.concatenate([[0], np.cumsum([r.size for r in probed])]).astype(np.int64)
        return self._replace_rows(self._joined_rows(parts), coarse, ptr,
                                  np.concatenate(probed).astype(np.int64))

    def _unread_terms(self, joined, unread: np.ndarray):
        """A batched evaluator of the unread terms alone (site indices in, terms out), so
        that probing them site by site does not evaluate the others."""
        parts = [without_checks(piece, joined)[0] for piece in self._pieces]
        vector = pt.concatenate(parts)[pt.as_tensor(unread)]
        batch = pt.matrix("states", dtype=joined.type.dtype, shape=(None, self.n_sites))
        [terms] = flatten_batched_gathers([vectorize_graph(vector, replace={joined: batch})])
        fn = pm_compile([batch], pt.broadcast_to(terms, (batch.shape[0], unread.size)),
                        **(self._compile_kwargs or {}))
        offsets = self.offsets

        def evaluate(states: np.ndarray) -> np.ndarray:
            if offsets is not None:
                states = states + offsets
            return fn(np.ascontiguousarray(states, dtype=joined.type.dtype))

        return evaluate

    def _probe_unread(self, joined, unread, result, superset, probes, ks, progress,
                      rows: list) -> tuple:
        """The terms the graph could not read, probed site by site with their own
        batched function, merged into the grouped ``result`` and into the superset the
        sites are coloured by (their rows there: the probed dependencies)."""
        evaluate = self._unread_terms(joined, unread)

        def counted(states: np.ndarray) -> np.ndarray:
            rows[1] += states.shape[0]
            return evaluate(states)

        per_call = max(1, MAX_BATCH_VALUES // max(1, unread.size))
        site_ptr, site_terms = discover_structure_csr(counted, probes, per_call, ks,
                                                      progress=progress)
        n = self.n_sites
        lists = [np.concatenate([result[1][result[0][i]:result[0][i + 1]],
                                 unread[site_terms[site_ptr[i]:site_ptr[i + 1]]]])
                 for i in range(n)]
        lists = [np.unique(t) for t in lists]
        merged_ptr = np.concatenate([[0], np.cumsum([t.size for t in lists])]).astype(np.int64)
        merged = (merged_ptr, np.concatenate(lists).astype(np.int64) if n else
                  np.zeros(0, np.int64))
        # the superset's rows of the unread terms: the sites their probes found
        return merged, self._replace_rows(superset, unread,
                                          *transpose_csr(site_ptr, site_terms, unread.size))

    def _discover(self, vector, joined, x0, shared, seed, progress, seconds) -> TermStructure:
        """Probe at x0, all zeros, all ones and random points, with the continuous variables
        moved to random values (a parameter at exactly 0 would hide dependencies).

        Grouped probing (by the graph's dependency superset) when possible, else every
        site on its own; both find the same dependencies at the same probes.
        """
        if self.n_sites == 1:
            # one site: every term of the block is its own, there is nothing to colour
            # and nothing to read off the graph
            structure = build_structure_csr(np.array([0, self.n_terms]),
                                            np.arange(self.n_terms), self.n_terms)
            seconds.update(analyse=0.0, probe=0.0, colour=0.0)
            self.setup_report = {"structure": "graph", "method": "one site", "groups": 1,
                                 "checks": 0, "rows": 0, "rows_unread": 0, "fallback": None,
                                 "imprecise_ops": None}
            return structure
        tick = time.perf_counter()
        analysis: dict = {}
        superset, unread, fallback = self._superset(vector, joined, x0, shared, progress,
                                                    analysis)
        seconds["analyse"] = time.perf_counter() - tick
        tick = time.perf_counter()
        rows = [0, 0]  # states evaluated by the whole terms' function, by the unread ones'

        def counted(states: np.ndarray) -> np.ndarray:
            rows[0] += states.shape[0]
            terms = self.batch_terms(states, checked=False)
            if unread is not None:  # probed on their own below
                terms[:, unread] = 0.0
            return terms

        rng = np.random.default_rng(seed)
        saved = {s: s.get_value() for s in shared.values()}
        try:
            for s, value in saved.items():
                if np.issubdtype(np.asarray(value).dtype, np.floating):
                    s.set_value(value + rng.normal(0.0, 1.0, np.shape(value)).astype(value.dtype))
            n = self.n_sites
            ks = self.n_categories
            probes = probe_points(x0, ks, rng)
            report: dict = {}
            result, method = None, "site by site"
            if superset is not None:
                try:
                    result = discover_structure_csr(
                        counted, probes, self._rows, ks, superset=superset, seed=seed,
                        progress=progress, report=report,
                    )
                    method = "grouped"
                except StructureMismatch as err:
                    fallback = str(err)
                    superset = None  # wrong somewhere: neither probe nor colour by it
                    setup_progress.log.warning(
                        "Exact-ratio set-up: the grouped discovery failed its check (%s); "
                        "probing every site on its own instead (slow for many sites). "
                        "Please report this with the model.", err)
            if result is not None and unread is not None:
                result, superset = self._probe_unread(joined, unread, result, superset,
                                                      probes, ks, progress, rows)
                method = "grouped, and site by site for the terms not read"
            if result is None:
                unread = None  # every term probed site by site, ``counted`` included
                if n > 1000:
                    setup_progress.log.info("Exact-ratio set-up probes each of the %d sites on its own "
                              "(%s)", n, fallback)
                result = discover_structure_csr(counted, probes, self._rows, ks,
                                                progress=progress, report=report)
        finally:
            for s, value in saved.items():
                s.set_value(value)
        seconds["probe"] = time.perf_counter() - tick
        tick = time.perf_counter()
        progress("colouring the sites")
        structure = build_structure_csr(*result, self.n_terms)
        source = "probes"
        if superset is not None:
            # The probes see only the dependencies that show at a few points (x_i x_j x_k
            # shows only where two of them are 1); the superset never misses one, and
            # colouring by it makes the ratios exact at every state. Its price is
            # coarseness where an op has no precise rule: take it unless it needs
            # clearly more colours (each costs one batched evaluation per draw).
            safe = build_structure_csr(
                *transpose_csr(superset.term_ptr, superset.term_sites, n), self.n_terms
            )
            enough = max(structure.n_colours + 2, 1.25 * structure.n_colours)
            graph_source = "graph" if unread is None else "graph and probes"
            if safe.n_colours > enough and analysis.get("imprecise_ops") and unread is None:
                # coarse only where an op has no precise rule: keep the graph's rows for
                # the pieces without one, the probed ones for the pieces with one
                mixed = self._mixed_superset(joined, x0, shared, result)
                if mixed is not None:
                    mixed_structure = build_structure_csr(
                        *transpose_csr(mixed.term_ptr, mixed.term_sites, n), self.n_terms)
                    if mixed_structure.n_colours <= enough:
                        safe, graph_source = mixed_structure, "graph and probes"
            if safe.n_colours <= enough:
                structure, source = safe, graph_source
            else:
                setup_progress.log.info(
                    "Exact-ratio set-up: the graph's possible dependencies need %d colours, "
                    "the probed ones %d; using the probed ones (a dependency that shows at "
                    "none of the %d probe points would be missed).",
                    safe.n_colours, structure.n_colours, probes.shape[0])
        seconds["colour"] = time.perf_counter() - tick
        self.setup_report = {
            "structure": source,
            "method": method,
            "groups": report.get("groups"),
            "checks": report.get("checks"),
            "rows": rows[0],
            "rows_unread": rows[1],
            "fallback": fallback,
            "imprecise_ops": analysis.get("imprecise_ops"),
        }
        return structure

    def compiled_terms(self) -> CompiledTerms:
        """The batched terms compiled in PyTensor's NUMBA mode, for compiled loops:
        ``(states, *shared values) -> (terms, checks held)``, the states in the graph's
        own values (offsets added). Compiled at the first call (seconds: numba compiles
        the whole graph), then kept."""
        if self._compiled_terms is None:
            inputs, outputs = self._batch_graph
            fn = pm_compile(inputs, outputs, **{**(self._compile_kwargs or {}), "mode": "NUMBA"})
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
        (:func:`~pymc_discrete.pymc.step_cost.exact_call`): the rows of its batch."""
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
