"""Bit-for-bit digests of short sampling runs, to check that a refactor keeps the chains.

Why
---
A refactor of the kernels or of the PyMC glue must give the same chains as before for
the same seeds wherever the algorithm did not change. Statistical tests cannot see a
changed random-number stream or a reordered floating-point sum; comparing the draws bit
for bit can. This script runs short ``pm.sample`` runs (tuning draws kept, since tuning
must stay identical too) of every step mode of the package on the example models, and
records, case by case, a SHA-256 of

* the draws of every free and deterministic variable (``posterior`` and
  ``warmup_posterior``, variables sorted by name, integers as little-endian int64 and
  floats as little-endian float64, C order), and
* the numeric sampler statistics (``sample_stats`` and ``warmup_sample_stats``, sorted by
  name; wall-clock timings such as NUTS's ``perf_counter_diff`` are left out),

with one digest per array (to tell *what* changed) and one per case, plus a few numbers
for humans (mean of the discrete variable, mean acceptance) that play no part in the
comparison.

How to use it
-------------
Run it from the root of a repository checkout, as a module (``python -m`` puts the
current directory first on the import path, so the checkout's own ``pymc_discrete`` is
the one sampled). Record on the code before the change (ideally a clean checkout of the
commit)::

    python -m benchmarks.draw_digests --write benchmarks/draw_digests.json

and after the change rerun every recorded case and compare::

    python -m benchmarks.draw_digests --compare benchmarks/draw_digests.json

which prints ``identical`` or ``DIFFERENT`` (naming the arrays that differ) for every
case and exits with status 1 if any case differs, failed or is missing. Options:

``--only SUBSTRING``
    Run only the cases whose name contains SUBSTRING (repeatable). ``--write`` then
    replaces just those cases in an existing record (made with the same settings and
    library versions) and keeps the others, so a deliberate change re-records only the
    cases it changes.
``--cores N``
    Sample with N processes (default 1). The digests must not depend on it: comparing a
    ``--cores 2`` run against a ``--cores 1`` record checks reproducibility across cores.
``--list``
    Print the case names and exit.

A case whose algorithm was changed on purpose is expected to differ: record again after
the change and say so in the commit. Digests are only comparable with the same versions
of NumPy, PyTensor, PyMC and numba (and on the same machine architecture): the record
keeps them, and ``--compare`` warns when they differ. The CPU matters too, below what the
record names: on two x86_64 VMs of the same versions a third of the cases differed in the
last bits of floating-point statistics (the same commit on both), so a difference
against a record written on another VM says to record the parent commit on this one and
compare against that. Sampler warnings (tuning, fallback
to exact ratios) are expected on such short runs and are silenced. The whole set takes
about two minutes with one core (longer the first time, while PyTensor fills its
compilation cache; the compiled-loop cases compile a numba loop every time).

Examples
--------
.. code-block:: console

    $ python -m benchmarks.draw_digests --compare benchmarks/draw_digests.json --only potts
    potts/albp               identical   1.2 s
    ...
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import logging
import os
import platform
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

import pymc_discrete as pmd
from pymc_discrete.example_models import (
    bernoulli_model,
    fhmm_model,
    ising_model,
    parity_model,
    potts_model,
    rbm_model,
)

#: version of the record's layout (bump when the hashing changes)
FORMAT = 1
#: ``pm.sample`` settings of every case
SETTINGS: dict[str, Any] = {
    "draws": 60,
    "tune": 40,
    "chains": 2,
    "random_seed": 20240611,
    "discard_tuned_samples": False,
    "progressbar": False,
    "compute_convergence_checks": False,
}
#: sample_stats that measure time, not the chain
TIMING_STATS = ("perf_counter_diff", "perf_counter_start", "process_time_diff")
GROUPS = ("posterior", "warmup_posterior", "sample_stats", "warmup_sample_stats")

Steps = Callable[[pm.Model], Any]


# ---- models ------------------------------------------------------------------------------
def small_rbm() -> pm.Model:
    """RBM marginal on 16 visible units with 6 hidden ones (fixed random weights)."""
    rng = np.random.default_rng(1)
    return rbm_model(rng.normal(0.0, 0.5, (16, 6)), rng.normal(0.0, 0.5, 16),
                     rng.normal(0.0, 0.5, 6))


def binary_mixture(n: int = 30, seed: int = 0) -> pm.Model:
    """Two-component Gaussian mixture on ``n`` points: Bernoulli labels ``x`` (a discrete
    step) next to the ordered means ``mu``, scale ``sigma`` and weight ``w`` (NUTS). The
    mean of point j is ``mu[0] + x_j (mu[1] - mu[0])``, linear in the label."""
    rng = np.random.default_rng(seed)
    y = np.concatenate([rng.normal(-1.5, 0.7, n // 2), rng.normal(1.5, 0.7, n - n // 2)])
    with pm.Model() as model:
        w = pm.Beta("w", 2.0, 2.0)
        mu = pm.Normal("mu", 0.0, 3.0, shape=2, transform=pm.distributions.transforms.ordered,
                       initval=np.array([-1.0, 1.0]))
        sigma = pm.HalfNormal("sigma", 1.0)
        x = pm.Bernoulli("x", w, shape=n)
        pm.Normal("y", mu=mu[0] + x * (mu[1] - mu[0]), sigma=sigma, observed=y)
    return model


def categorical_mixture(n: int = 30, seed: int = 0) -> pm.Model:
    """The same data with Categorical labels ``x`` and ``mu[x]`` indexing (3 components)."""
    rng = np.random.default_rng(seed)
    y = np.concatenate([rng.normal(-1.5, 0.7, n // 2), rng.normal(1.5, 0.7, n - n // 2)])
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(3))
        mu = pm.Normal("mu", 0.0, 3.0, shape=3, transform=pm.distributions.transforms.ordered,
                       initval=np.array([-1.0, 0.0, 1.0]))
        sigma = pm.HalfNormal("sigma", 1.0)
        x = pm.Categorical("x", w, shape=n)
        pm.Normal("y", mu=mu[x], sigma=sigma, observed=y)
    return model


def gaussian_3d() -> pm.Model:
    """Correlated 3-d MvNormal (all continuous, for SAMCMC)."""
    cov = np.array([[1.0, 0.6, 0.2], [0.6, 2.0, -0.4], [0.2, -0.4, 0.5]])
    with pm.Model() as model:
        pm.MvNormal("theta", mu=np.array([1.0, -1.0, 0.5]), cov=cov)
    return model


def n_mixture_small(sites: int = 12, visits: int = 3, seed: int = 0) -> pm.Model:
    """An N-mixture model: Poisson abundances ``N`` (latent counts) counted with Binomial
    error at every visit, a site covariate in the log rate."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=sites)
    y = rng.binomial(rng.poisson(np.exp(1.5 + 0.5 * x))[:, None], 0.5, size=(sites, visits))
    with pm.Model() as model:
        b0 = pm.Normal("b0", 0.0, 2.0)
        b1 = pm.Normal("b1", 0.0, 2.0)
        p = pm.Beta("p", 1.0, 1.0)
        n = pm.Poisson("N", pm.math.exp(b0 + b1 * x), initval=y.max(axis=1) + 1)
        pm.Binomial("y", n=n[:, None], p=p, observed=y)
    return model


def coupled_counts() -> pm.Model:
    """Two Poisson counts tied by a Potential (two colours, nothing continuous)."""
    with pm.Model() as model:
        n = pm.Poisson("N", np.array([6.0, 25.0]), initval=np.array([1, 1]))
        pm.Potential("tie", -((n[0] - n[1] + 10.0) ** 2) / 20.0)
    return model


def small_hmm(steps: int = 30, seed: int = 0) -> pm.Model:
    """A sticky two-state chain with free state means (the transitions a Potential)."""
    rng = np.random.default_rng(seed)
    states = np.repeat([0, 1, 0], [10, 10, steps - 20])
    y = rng.normal(np.array([-1.0, 1.0])[states], 0.8)
    log_p = np.log(np.array([[0.9, 0.1], [0.1, 0.9]]))
    with pm.Model() as model:
        z = pm.Categorical("z", np.array([0.5, 0.5]), shape=steps)
        mu = pm.Normal("mu", 0.0, 2.0, shape=2, transform=pm.distributions.transforms.ordered,
                       initval=np.array([-0.5, 0.5]))
        pm.Potential("chain", pm.math.sum(pt.as_tensor(log_p)[z[:-1], z[1:]]))
        pm.Normal("y", mu[z], 0.8, observed=y)
    return model


# ---- step modes --------------------------------------------------------------------------
def _albp(**kwargs: Any) -> Steps:
    return lambda m: [pmd.ALBP([m["x"]], model=m, **kwargs)]


def _arwm(**kwargs: Any) -> Steps:
    return lambda m: [pmd.ARWM([m["x"]], model=m, **kwargs)]


def _pas(**kwargs: Any) -> Steps:
    return lambda m: [pmd.PAS([m["x"]], model=m, **kwargs)]


#: every step mode on a binary block (name -> steps builder)
BINARY_MODES: dict[str, Steps] = {
    "albp": _albp(),
    "albp-exact": _albp(proposal="exact"),
    "albp-sqrt": _albp(weight="sqrt"),
    "albp-steps4": _albp(steps_per_draw=4),
    "albp-loop4": _albp(steps_per_draw=4, compiled_loop=True),
    "arwm": _arwm(),
    "pas": _pas(),
    "pas-barker": _pas(weight="barker"),
    "pas-exact": _pas(proposal="exact"),
}
#: on a categorical block (no compiled loop there)
CATEGORICAL_MODES: dict[str, Steps] = {
    "albp": _albp(),
    "albp-exact": _albp(proposal="exact"),
    "albp-sqrt": _albp(weight="sqrt"),
    "arwm": _arwm(),
    "pas": _pas(),
    "pas-exact": _pas(proposal="exact"),
}


@dataclass(frozen=True)
class Case:
    """One sampling run: a model, the steps to give ``pm.sample`` (None: PyMC assigns
    them), and whether :func:`pymc_discrete.register` is in effect."""

    name: str
    model: Callable[[], pm.Model]
    steps: Steps | None
    register: bool = False
    discrete: str | None = "x"
    #: ``pm.sample`` arguments of this case beside ``SETTINGS`` (a NUTS sampler)
    options: tuple = ()


def cases() -> list[Case]:
    """Every case, in a fixed order."""
    binary_models: dict[str, Callable[[], pm.Model]] = {
        "bernoulli": lambda: bernoulli_model(40, "C2", seed=0),
        "ising8": lambda: ising_model(8, "C2", seed=0),
        "parity": lambda: parity_model(12, 3.0),
        "fhmm": lambda: fhmm_model(30, 3, 1.0, seed=0),
        "rbm": small_rbm,
    }
    out = [Case(f"{model}/{mode}", build, steps)
           for model, build in binary_models.items() for mode, steps in BINARY_MODES.items()]
    out += [Case(f"potts/{mode}", lambda: potts_model(5, 3, seed=0), steps)
            for mode, steps in CATEGORICAL_MODES.items()]
    for mode in ("albp", "albp-exact", "albp-loop4", "arwm", "pas"):
        out.append(Case(f"mixture/{mode}+nuts", binary_mixture, BINARY_MODES[mode]))
    for mode in ("albp-exact", "pas-exact"):
        out.append(Case(f"mixture-cat/{mode}+nuts", categorical_mixture,
                        CATEGORICAL_MODES[mode]))
    out.append(Case("mvnormal3/samcmc", gaussian_3d, lambda m: pmd.SAMCMC(model=m),
                    discrete=None))
    out.append(Case("ising8/registered", lambda: ising_model(8, "C2", seed=0), None,
                    register=True))
    # register() with PyMC's NUTS: the step loop (CollapsedNUTS); with nuts_sampler="nutpie"
    # (installed by make): the summed-out model sampled by nutpie, the draws recovered
    pymc_nuts = (("nuts_sampler", "pymc"),)
    out.append(Case("mixture/registered+nuts", binary_mixture, None, register=True,
                    options=pymc_nuts))
    out.append(Case("nmixture/registered", n_mixture_small, None, register=True,
                    discrete="N", options=pymc_nuts))
    nutpie = (("nuts_sampler", "nutpie"),)
    out.append(Case("mixture/registered+nutpie", binary_mixture, None, register=True,
                    options=nutpie))
    out.append(Case("nmixture/registered+nutpie", n_mixture_small, None, register=True,
                    discrete="N", options=nutpie))
    out.append(Case("hmm/registered+nutpie", small_hmm, None, register=True,
                    discrete="z", options=nutpie))
    out.append(Case("counts/countlbp", coupled_counts, lambda m: [pmd.CountLBP(model=m)],
                    discrete="N"))
    out.append(Case("hmm/collapsed-chain", small_hmm,
                    lambda m: [pmd.CollapsedNUTS([m["z"]], model=m)], discrete="z"))
    return out


# ---- digests -----------------------------------------------------------------------------
def canonical(values: np.ndarray) -> np.ndarray:
    """The array as little-endian int64 (booleans and integers) or float64 (floats), in C
    order: the bytes that are hashed."""
    values = np.asarray(values)
    if values.dtype.kind in "biu":
        return np.ascontiguousarray(values.astype("<i8"))
    if values.dtype.kind == "f":
        return np.ascontiguousarray(values.astype("<f8"))
    raise TypeError(f"cannot digest an array of dtype {values.dtype}")


def array_digest(name: str, values: np.ndarray) -> str:
    """SHA-256 of the name, canonical dtype, shape and bytes of an array."""
    values = canonical(values)
    sha = hashlib.sha256(f"{name}|{values.dtype.str}|{values.shape}\n".encode())
    sha.update(values.tobytes())
    return sha.hexdigest()


def idata_digests(idata: Any) -> dict[str, str]:
    """``"group/name" -> digest`` for the variables and numeric, non-timing stats of
    :data:`GROUPS`, sorted."""
    out: dict[str, str] = {}
    for group in GROUPS:
        if group not in idata.children:  # a DataTree (ArviZ >= 1)
            continue
        data = idata[group].to_dataset()
        for name in sorted(data.data_vars):
            values = data[name].values
            if name in TIMING_STATS or values.dtype.kind not in "biuf":
                continue
            out[f"{group}/{name}"] = array_digest(f"{group}/{name}", values)
    return out


def case_digest(arrays: dict[str, str]) -> str:
    """SHA-256 over the sorted ``name digest`` lines of a case (full array digests)."""
    lines = "".join(f"{name} {digest}\n" for name, digest in sorted(arrays.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def summary(idata: Any, case: Case) -> dict[str, float]:
    """Numbers for humans (not compared): mean of the discrete variable, mean acceptance
    of the discrete step (``accept``) and of NUTS (``acceptance_rate``)."""
    out: dict[str, float] = {}
    if case.discrete is not None and case.discrete in idata.posterior:
        out["mean_" + case.discrete] = float(idata.posterior[case.discrete].mean())
    stats = idata.sample_stats
    for name in ("accept", "acceptance_rate", "scaling"):
        if name in stats:
            out["mean_" + name] = float(stats[name].mean())
    return {k: round(v, 6) for k, v in out.items()}


def run_case(case: Case, cores: int) -> dict[str, Any]:
    """Sample a case and return its digests and summary."""
    model = case.model()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case.register:
            pmd.register()
        try:
            with model:
                steps = None if case.steps is None else case.steps(model)
                idata = pm.sample(step=steps, cores=cores, **SETTINGS, **dict(case.options))
        finally:
            if case.register:
                pmd.unregister()
    arrays = idata_digests(idata)
    return {
        "digest": case_digest(arrays),
        # the first 16 hex digits of each array's digest only say *which* array changed
        "arrays": {name: digest[:16] for name, digest in arrays.items()},
        "summary": summary(idata, case),
        "seconds": round(time.perf_counter() - start, 2),
    }


# ---- record ------------------------------------------------------------------------------
def _git(*args: str) -> str:
    """Output of a git command in the repository of the imported package ('' if none)."""
    where = Path(pmd.__file__).resolve().parents[1]
    try:
        return subprocess.run(["git", "-C", str(where), *args], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def environment() -> dict[str, Any]:
    """Where the record comes from: commit, package path, library versions, machine."""
    import arviz
    import numba
    import pytensor
    import scipy

    return {
        "commit": _git("rev-parse", "HEAD"),
        "package_changes": _git("status", "--porcelain", "--", "pymc_discrete"),
        "package": str(Path(pmd.__file__).resolve().parent),
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "pytensor": pytensor.__version__,
            "pymc": pm.__version__,
            "numba": numba.__version__,
            "arviz": arviz.__version__,
            "pymc_discrete": pmd.__version__,
        },
        "machine": f"{platform.system()} {platform.machine()}",
    }


def run_all(selected: list[Case], cores: int,
            recorded: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Run the cases, printing one line each (compared with ``recorded`` if given).
    Returns the results and the names of the cases that differ or fail."""
    results: dict[str, Any] = {}
    bad: list[str] = []
    width = max(len(c.name) for c in selected)
    for case in selected:
        try:
            result = run_case(case, cores)
        except Exception as err:  # report and go on: one broken case must not hide others
            print(f"{case.name:<{width}}  ERROR      {type(err).__name__}: {err}", flush=True)
            bad.append(case.name)
            continue
        results[case.name] = result
        line = f"{case.name:<{width}}  "
        if recorded is None:
            line += f"{result['digest'][:16]}"
        elif case.name not in recorded:
            line += "not recorded"
        elif recorded[case.name]["digest"] == result["digest"]:
            line += "identical "
        else:
            old, new = recorded[case.name]["arrays"], result["arrays"]
            changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
            line += "DIFFERENT  " + ", ".join(changed)
            bad.append(case.name)
        print(f"{line}  {result['seconds']:.1f} s", flush=True)
    return results, bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.draw_digests",
                                     description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", type=Path, metavar="JSON", help="record the digests")
    action.add_argument("--compare", type=Path, metavar="JSON",
                        help="rerun the recorded cases and compare")
    action.add_argument("--list", action="store_true", help="print the case names")
    parser.add_argument("--only", action="append", default=[], metavar="SUBSTRING",
                        help="run only the cases whose name contains it (repeatable)")
    parser.add_argument("--cores", type=int, default=1, help="processes of pm.sample")
    args = parser.parse_args(argv)

    selected = [c for c in cases() if not args.only or any(s in c.name for s in args.only)]
    if args.list:
        print("\n".join(c.name for c in selected))
        return 0
    if not selected:
        parser.error(f"no case matches {args.only}")
    # sampler warnings are expected on short runs; children of cores > 1 inherit this
    os.environ["PYTHONWARNINGS"] = "ignore"
    warnings.simplefilter("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    env = environment()
    print(f"pymc_discrete from {env['package']} (commit {env['commit'][:12] or '?'}"
          f"{', package modified' if env['package_changes'] else ''}), cores={args.cores}",
          flush=True)
    start = time.perf_counter()

    if args.write is not None:
        results, bad = run_all(selected, args.cores)
        if args.only and args.write.exists():
            previous = json.loads(args.write.read_text())
            same = (previous.get("format") == FORMAT and previous.get("settings") == SETTINGS
                    and previous.get("environment", {}).get("versions") == env["versions"])
            if not same:
                raise SystemExit(f"{args.write} was recorded with other settings or library "
                                 "versions: record every case (without --only)")
            results = {**previous["cases"], **results}
        record = {
            "format": FORMAT,
            "created": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": "python -m benchmarks.draw_digests --write"
                       + "".join(f" --only {s}" for s in args.only),
            "cores": args.cores,
            "settings": SETTINGS,
            "environment": env,
            "cases": results,
        }
        args.write.write_text(json.dumps(record, indent=1) + "\n")
        print(f"{len(results)} cases written to {args.write} in "
              f"{time.perf_counter() - start:.0f} s")
        if bad:
            print("FAILED: " + ", ".join(bad))
        return 1 if bad else 0

    record = json.loads(args.compare.read_text())
    if record.get("format") != FORMAT or record.get("settings") != SETTINGS:
        print("warning: the record was made with other settings or another format; every "
              "case will differ")
    old_versions, new_versions = record["environment"]["versions"], env["versions"]
    for lib in sorted(old_versions.keys() | new_versions.keys()):
        if lib != "pymc_discrete" and old_versions.get(lib) != new_versions.get(lib):
            print(f"warning: {lib} {old_versions.get(lib)} recorded, "
                  f"{new_versions.get(lib)} now: differences may come from it")
    recorded = record["cases"]
    results, bad = run_all(selected, args.cores, recorded)
    missing = [name for name in recorded
               if name not in {c.name for c in cases()}
               and (not args.only or any(s in name for s in args.only))]
    for name in missing:
        print(f"{name}: recorded but no longer a case")
    n_same = sum(recorded.get(k, {}).get("digest") == r["digest"] for k, r in results.items())
    print(f"{n_same} of {len(selected)} cases identical to the record of commit "
          f"{record['environment']['commit'][:12]} ({time.perf_counter() - start:.0f} s)")
    if bad or missing:
        print("DIFFERENT or FAILED: " + ", ".join(bad + missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
