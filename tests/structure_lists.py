"""List versions of the structure functions (one array per site), for tests that write
structures by hand: the package itself works on CSR arrays."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pymc_discrete.kernels.structure import (
    N_CHECKS,
    DependencySuperset,
    TermStructure,
    build_structure_csr,
    discover_structure_csr,
    greedy_colouring_csr,
)


def csr_from_lists(lists: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, flat)`` CSR arrays from a list of int arrays."""
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([np.size(t) for t in lists])
    flat = (np.concatenate([np.asarray(t, dtype=np.int64).ravel() for t in lists])
            if len(lists) else np.empty(0, np.int64))
    return ptr, flat.astype(np.int64)


def lists_from_csr(ptr: np.ndarray, flat: np.ndarray) -> list[np.ndarray]:
    """One array per row of CSR arrays."""
    return [flat[ptr[i]:ptr[i + 1]].copy() for i in range(ptr.size - 1)]


def greedy_colouring(terms_of_site: list[np.ndarray], n_terms: int) -> tuple[np.ndarray, int]:
    """:func:`greedy_colouring_csr` of per-site term lists."""
    return greedy_colouring_csr(*csr_from_lists(terms_of_site), n_terms)


def build_structure(terms_of_site: list[np.ndarray], n_terms: int) -> TermStructure:
    """:func:`build_structure_csr` of per-site term lists."""
    return build_structure_csr(*csr_from_lists(terms_of_site), n_terms)


def discover_structure(batch_terms, probes: np.ndarray, rows_per_call: int,
                       n_categories: np.ndarray | None = None,
                       superset: DependencySuperset | None = None,
                       shifts: Sequence[int] | None = None, n_checks: int = N_CHECKS,
                       seed: int = 0, progress=None, report: dict | None = None,
                       ) -> list[np.ndarray]:
    """:func:`discover_structure_csr` with the result as one array per site."""
    return lists_from_csr(*discover_structure_csr(
        batch_terms, probes, rows_per_call, n_categories, superset, shifts, n_checks, seed,
        progress, report,
    ))
