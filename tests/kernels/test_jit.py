"""Kernels numba cannot cache on disk are compiled anyway (importing never fails)."""

from __future__ import annotations

import warnings

import pytest

from pymc_discrete.kernels import jit


def test_a_function_numba_cannot_cache_is_compiled_without_the_cache(monkeypatch):
    """numba finds no cache location for a function without a source file (as for every
    kernel when site-packages, the home and NUMBA_CACHE_DIR are all unwritable): the
    function is compiled without the disk cache, with one warning per process."""
    monkeypatch.setattr(jit, "_warned", False)
    namespace: dict = {}
    exec(compile("def twice(x):\n    return 2 * x\n", "<no file>", "exec"), namespace)
    with pytest.warns(RuntimeWarning, match="NUMBA_CACHE_DIR"):
        twice = jit.njit_cached(namespace["twice"])
    assert twice(21) == 42
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = jit.njit_cached(fastmath={"contract"})(namespace["twice"])
    assert again(2.5) == 5.0


def test_other_errors_of_numba_are_not_hidden(monkeypatch):
    def broken(**options):
        raise RuntimeError("something else")

    monkeypatch.setattr(jit.numba, "njit", broken)
    with pytest.raises(RuntimeError, match="something else"):
        jit.njit_cached(lambda x: x)
