"""The same ``random_seed`` gives the same draws whatever the state of the compile caches.

A function compiled in the process and the same function loaded from PyTensor's disk
cache must give the same bits (:mod:`pymc_discrete.pymc.model.reproducible`), or a chain
goes its own way after its first differing bit and a seed means nothing across machines.
Two fresh processes run ``register()`` + ``pm.sample(random_seed=7)``: the first with
empty PyTensor and numba caches (it compiles everything, the package's kernels
included), the second with the caches the first left. Their draws and statistics must be
equal bit for bit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(out: Path, caches: Path) -> dict[str, np.ndarray]:
    env = {**os.environ,
           "PYTENSOR_FLAGS": f"base_compiledir={caches / 'pytensor'}",
           "NUMBA_CACHE_DIR": str(caches / "numba")}
    subprocess.run([sys.executable, "-m", "tests.cache_run", str(out)], cwd=ROOT, env=env,
                   check=True, capture_output=True, timeout=1800)
    with np.load(out) as data:
        return {k: data[k] for k in data.files}


@pytest.mark.slow
def test_draws_are_the_same_with_empty_and_with_warm_caches(tmp_path):
    caches = tmp_path / "caches"
    cold = _run(tmp_path / "cold.npz", caches)
    warm = _run(tmp_path / "warm.npz", caches)
    assert sorted(cold) == sorted(warm)
    assert any(k.startswith("hmm/posterior/mu") for k in cold)
    assert any(k.startswith("occupancy/posterior/z") for k in cold)
    differ = [k for k in cold
              if cold[k].shape != warm[k].shape
              or not np.array_equal(cold[k], warm[k], equal_nan=True)]
    assert not differ, differ
    # the chains moved: equal draws of a frozen chain would prove nothing
    assert np.unique(cold["hmm/posterior/mu"][0, :, 0]).size > 50
    assert np.unique(cold["occupancy/posterior/psi"][0]).size > 50
