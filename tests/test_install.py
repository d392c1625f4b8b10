"""Install like a user: a wheel, not an editable install, in a fresh virtualenv whose
site-packages is read-only, used from another directory.

The wheel is built from a copy of the source tree (the build writes ``build/`` and an
egg-info next to ``pyproject.toml``, and the work tree is left alone), then installed with
``pip install --no-deps`` into a venv made for the test. Its dependencies (PyMC, PyTensor,
numba, ...) come from the dev venv through a ``.pth`` file that lists the dev venv's
site-packages as a plain path: a plain path line executes none of the ``.pth`` files in
that directory, so the dev venv's editable finder never runs and ``pymc_discrete`` is
the wheel's copy (checked). The venv is then made read-only, and a user's script, run
from a directory of its own with a home of its own (``HOME`` in ``tmp_path``, nothing of
the user's is read or written), samples a small model with ALBP and, after
``pmd.register()``, with the step ``pm.sample`` chooses. numba cannot write its cache
next to the read-only modules, so it falls back to the user-wide cache
(``~/.cache/numba``); a second run loads every kernel from there and compiles nothing;
``NUMBA_CACHE_DIR`` moves the cache. Nothing is written into the venv.

PyTensor gets a compile directory in ``tmp_path`` and ``cxx=`` (its Python
implementations, no C compilation): what is under test is this package and numba's
cache, and a cold C compilation of the model would double the test's time.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout and permissions")


def _not_source(directory: str, names: list[str]) -> set[str]:
    """What ``pip install .`` in a fresh clone would not see: the work tree's build
    products, caches and environments (``shutil.copytree``'s ``ignore``)."""
    ignored = {
        ".": {".git", ".venv", "build", "dist", ".pytest_cache"},
        "docs": {"_build", "gallery", "sg_execution_times.rst"},
        "benchmarks": {"out"},
    }.get(Path(directory).relative_to(ROOT).as_posix(), set())
    return {
        n for n in names
        if n in ignored or n == "__pycache__" or n.endswith((".egg-info", ".pyc", ".nbi", ".nbc"))
    }


#: Root writes through any permission bits (CAP_DAC_OVERRIDE), so for root a chmod alone
#: leaves site-packages writable (and numba would cache into it). As root the user's
#: script runs through this launcher: it drops that capability from the bounding set,
#: so the interpreter it executes never has it, and stays uid 0, so it can still read
#: an interpreter under /root. Exit status 77: the capability could not be dropped.
_DROP_DAC_OVERRIDE = """\
import ctypes, os, sys
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE = 24, 1
if ctypes.CDLL(None, use_errno=True).prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0):
    print("cannot drop CAP_DAC_OVERRIDE:", os.strerror(ctypes.get_errno()), file=sys.stderr)
    sys.exit(77)
os.execv(sys.argv[1], sys.argv[1:])
"""

#: The user's script: ``python use_pymc_discrete.py SITE_PACKAGES sample|kernel``. It
#: prints one JSON line: where ``pymc_discrete`` was imported from, whether it could
#: write into site-packages, numba's cache hits and misses and the cache directories
#: of the package's kernels, and how long each part took.
_USER_SCRIPT = r'''
import json, sys, tempfile, time
from pathlib import Path

t0 = time.perf_counter()
site, mode = Path(sys.argv[1]), sys.argv[2]
try:
    tempfile.TemporaryFile(dir=site / "pymc_discrete").close()
    site_writable = True
except OSError:
    site_writable = False

import numpy as np
import pymc as pm
import pymc_discrete as pmd
from numba.core.dispatcher import Dispatcher

out = {"module": pmd.__file__, "site_writable": site_writable}
seconds = {"import": time.perf_counter() - t0}

if mode == "kernel":
    from pymc_discrete.kernels.common import probabilistic_round

    out["value"] = int(probabilistic_round(2.25, 0.1, 10))
else:
    with pm.Model() as model:  # an Ising chain of 20 sites
        x = pm.Bernoulli("x", 0.5, shape=20)
        s = 2 * x - 1
        pm.Potential("coupling", 0.4 * (s[1:] * s[:-1]).sum())
    kw = dict(draws=50, tune=50, chains=1, cores=1, progressbar=False,
              compute_convergence_checks=False)
    t = time.perf_counter()
    with model:
        idata = pm.sample(step=pmd.ALBP([x]), random_seed=1, **kw)
    seconds["albp"] = time.perf_counter() - t
    out["albp"] = np.asarray(idata.posterior["x"]).tolist()
    pmd.register()
    t = time.perf_counter()
    with model:
        idata = pm.sample(random_seed=2, **kw)
    seconds["registered"] = time.perf_counter() - t
    out["registered"] = np.asarray(idata.posterior["x"]).tolist()

kernels = {}
for name, module in list(sys.modules.items()):
    if name == "pymc_discrete" or name.startswith("pymc_discrete."):
        for obj in vars(module).values():
            if isinstance(obj, Dispatcher) and obj.stats.cache_path is not None:
                kernels[id(obj)] = obj.stats
out["hits"] = sum(sum(s.cache_hits.values()) for s in kernels.values())
out["misses"] = sum(sum(s.cache_misses.values()) for s in kernels.values())
out["cache_dirs"] = sorted(
    {s.cache_path for s in kernels.values() if s.cache_hits or s.cache_misses}
)
seconds["total"] = time.perf_counter() - t0
out["seconds"] = seconds
print(json.dumps(out))
'''


#: settings of the caller's shell that would make pip see another install of the package
#: (the work tree on ``PYTHONPATH`` holds its egg-info) or put the wheel elsewhere
_CALLERS_INSTALL_SETTINGS = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PIP_TARGET",
                             "PIP_PREFIX", "PIP_ROOT", "PIP_USER")


def _run(cmd, **kwargs) -> subprocess.CompletedProcess:
    """Run a build or install command, without the caller's install settings."""
    env = {k: v for k, v in os.environ.items() if k not in _CALLERS_INSTALL_SETTINGS}
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, **kwargs)
    assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def _offline_build_flags() -> list[str]:
    """Build without a network round trip when the dev venv can build the wheel itself
    (setuptools >= 70.1 has ``bdist_wheel``; PyTensor depends on setuptools), else let
    pip fetch the build requirements into an isolated environment."""
    try:
        import setuptools

        version = tuple(int(p) for p in setuptools.__version__.split(".")[:2])
    except (ImportError, ValueError):
        return []
    return ["--no-index", "--no-build-isolation"] if version >= (70, 1) else []


def _files(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under ``root``: (mode, size, mtime in ns)."""
    out = {}
    for p in [root, *root.rglob("*")]:
        st = p.lstat()
        out[p.relative_to(root).as_posix()] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def _set_writable(root: Path, writable: bool) -> None:
    write = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    for dirpath, dirnames, filenames in os.walk(root):
        for p in [Path(dirpath)] + [Path(dirpath, n) for n in dirnames + filenames]:
            if not p.is_symlink():
                mode = p.stat().st_mode
                p.chmod(mode | stat.S_IWUSR if writable else mode & ~write)


def _user_env(home: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a user of the wheel: no PYTHONPATH or other Python, numba and
    PyTensor settings of the test run, ``HOME`` (so the user cache) in ``tmp_path``."""
    drop = ("PYTHON", "NUMBA_", "PYTENSOR", "VIRTUAL_ENV", "XDG_", "MPLCONFIGDIR")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(HOME=str(home), PYTENSOR_FLAGS=f"base_compiledir={tmp_path / 'pytensor'},cxx=")
    env.update(extra)
    return env


def _use(python: Path, script: Path, site: Path, mode: str, env: dict[str, str]) -> tuple[dict, str]:
    """Run the user's script from its own directory; its JSON output and its stderr."""
    launcher = [sys.executable, "-c", _DROP_DAC_OVERRIDE] if os.geteuid() == 0 else []
    proc = subprocess.run(
        [*launcher, str(python), str(script), str(site), mode],
        capture_output=True, text=True, env=env, cwd=script.parent,
    )
    if proc.returncode == 77 and launcher:
        pytest.skip(f"running as root and site-packages cannot be made read-only: {proc.stderr}")
    assert proc.returncode == 0, f"the user's script failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.slow
def test_wheel_installs_into_a_read_only_venv_and_caches_its_kernels(tmp_path, request):
    # the wheel, from a copy of the source tree
    src, dist = tmp_path / "src", tmp_path / "dist"
    shutil.copytree(ROOT, src, ignore=_not_source, symlinks=True)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--disable-pip-version-check",
          *_offline_build_flags(), "--wheel-dir", dist, src])
    (wheel,) = dist.glob("pymc_discrete-*.whl")
    package = {p.relative_to(src).as_posix() for p in (src / "pymc_discrete").rglob("*") if p.is_file()}
    with zipfile.ZipFile(wheel) as zf:
        in_wheel = {n for n in zf.namelist() if not n.split("/")[0].endswith(".dist-info")}
    assert in_wheel == package  # every module and subpackage, nothing else (no tests)

    # a fresh venv with the wheel, its dependencies from the dev venv
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
          "--no-cache-dir", "--disable-pip-version-check", wheel])
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(_run([python, "-c", purelib]).stdout.strip())
    assert (site / "pymc_discrete" / "__init__.py").is_file()
    dev_site = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "dev-venv-dependencies.pth").write_text("".join(f"{p}\n" for p in dev_site))

    request.addfinalizer(lambda: _set_writable(venv, True))  # so that tmp_path can be removed
    _set_writable(venv, False)
    installed = _files(venv)

    elsewhere, home = tmp_path / "elsewhere", tmp_path / "home"
    elsewhere.mkdir()
    home.mkdir()
    script = elsewhere / "use_pymc_discrete.py"
    script.write_text(_USER_SCRIPT)
    env = _user_env(home, tmp_path)
    user_cache = home / ".cache" / "numba"

    # first run: the wheel's modules are imported, the kernels compiled into the user cache
    first, stderr = _use(python, script, site, "sample", env)
    assert Path(first["module"]).is_relative_to(site)
    assert not Path(first["module"]).is_relative_to(ROOT)
    assert not first["site_writable"]
    for draws in (first["albp"], first["registered"]):
        assert len(draws) == 1 and len(draws[0]) == 50 and {v for d in draws[0] for v in d} <= {0, 1}
    assert first["misses"] > 0 and first["hits"] == 0
    assert first["cache_dirs"] and all(Path(d).is_relative_to(user_cache) for d in first["cache_dirs"])
    assert list(user_cache.rglob("*.nbi")) and list(user_cache.rglob("*.nbc"))
    assert "Cannot cache" not in stderr  # numba's NumbaWarning for a kernel it cannot cache
    cached = _files(user_cache)

    # second run: every kernel comes from the cache, nothing is compiled or rewritten
    second, _ = _use(python, script, site, "sample", env)
    assert second["misses"] == 0 and second["hits"] > 0
    assert all(Path(d).is_relative_to(user_cache) for d in second["cache_dirs"])
    assert _files(user_cache) == cached
    assert second["albp"] == first["albp"] and second["registered"] == first["registered"]

    # NUMBA_CACHE_DIR moves the cache
    numba_dir, other_home = tmp_path / "numba-cache", tmp_path / "other-home"
    other_home.mkdir()
    moved, _ = _use(python, script, site, "kernel",
                    _user_env(other_home, tmp_path, NUMBA_CACHE_DIR=str(numba_dir)))
    assert moved["value"] == 3 and moved["misses"] > 0
    assert moved["cache_dirs"] and all(Path(d).is_relative_to(numba_dir) for d in moved["cache_dirs"])
    assert list(numba_dir.rglob("*.nbi"))
    assert not (other_home / ".cache" / "numba").exists()

    # nowhere to cache (read-only home, no NUMBA_CACHE_DIR): the package still imports
    # and runs, compiling in memory, and says how to get the cache
    locked_home = tmp_path / "locked-home"
    locked_home.mkdir()
    request.addfinalizer(lambda: _set_writable(locked_home, True))
    _set_writable(locked_home, False)
    uncached, stderr = _use(python, script, site, "kernel", _user_env(locked_home, tmp_path))
    assert uncached["value"] == 3 and uncached["cache_dirs"] == []
    assert "NUMBA_CACHE_DIR" in stderr
    assert not any(locked_home.iterdir())

    assert _files(venv) == installed  # nothing was written into the venv
    print(f"first run {first['seconds']}, cached run {second['seconds']}")
