"""How set-up finds which terms each site of a block changes, and colours the sites.

The graph is read first for the sites each
term *may* depend on (:func:`~pymc_discrete.pymc.model.dependencies.dependency_superset`,
sound: it never misses a dependency of the graph), which lets whole groups of sites be
probed at once: (groups + 1) batched evaluations per probe point instead of N + 1, so
set-up is linear in N on sparse models too. The probes keep only the dependencies that
show (as brute-force probing did), and a few single-site moves check the grouped result.
What the graph cannot be read for falls back term by term: if the whole term vector cannot
be analysed (an op PyTensor cannot evaluate in Python, or too many possible dependencies),
each piece of it is read on its own, and only the terms of the pieces that still cannot
be are probed site by site, with a batched function of their own; if the check fails, set-up
probes every site on its own. The sites are then coloured by the superset itself (exact at
every state, even for a dependency that shows at none of the probe points) unless it needs
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
from pytensor.graph.replace import vectorize_graph

from pymc_discrete.kernels.structure import (
    DependencySuperset,
    StructureMismatch,
    TermStructure,
    build_structure_csr,
    discover_structure_csr,
    transpose_csr,
)
from pymc_discrete.pymc.model import dependencies, setup_progress
from pymc_discrete.pymc.model.batched_gathers import flatten_batched_gathers
from pymc_discrete.pymc.model.dependencies import Unanalysable
from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.model.terms import without_checks

__all__ = ["MAX_BATCH_VALUES", "StructureReading", "probe_points"]

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


class StructureReading:
    """How :class:`~pymc_discrete.pymc.model.exact.ExactRatios` reads which terms each site
    changes, and colours the sites (module docstring); a base of ExactRatios, which holds
    the batched terms these methods evaluate."""

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
        fn = compile_function([batch], pt.broadcast_to(terms, (batch.shape[0], unread.size)),
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
