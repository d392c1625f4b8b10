"""Where a draw's time goes, stage by stage, through a real ``pm.sample`` run.

Issue 20, item 4: on the Ising model (C2) at 50x50 (2,500 sites) and 200x200 (40,000
sites), for the step ``pmd.register()`` builds there (BlockedGibbs) and for ALBP's
compiled loop (``pmd.ALBP(weight="sqrt", steps_per_draw=8, compiled_loop=True)``, as in
``run_core`` and ``run_blocked``), the wall time of every PyMC draw is split into the
stages below. Each stage is a call site wrapped, for the duration of one run only, by a
function that adds its ``time.perf_counter`` time and its call count to an accumulator
(monkeypatching the module global, class attribute or instance attribute the caller
looks up; everything is restored afterwards):

1. the whole draw loop: ``pymc.sampling.mcmc._sample`` (one call per chain) divided by
   the iterations (tuning included), and within it PyMC's per-draw work outside the step:
   ``NDArray.record`` (the default trace; with its compiled function ``NDArray.fn``
   timed apart), ``MCMCProgressBarManager.update`` and ``log_warning_stats``; what is
   left is the loop itself (the ``_iter_sample`` generator, per-chain set-up and close);
2. inside ``ArrayStepShared.step`` (``pymc/step_methods/arraystep.py``):
   ``DictToArrayBijection.map``, the step's ``astep`` and ``DictToArrayBijection.rmap``;
   what is left sets the shared variables and builds the block's dict;
3. inside our ``SiteBlockStep.astep`` (``pymc_discrete/pymc/block_step.py``): the kernel
   (``_run_steps``), ``_others_changed``, the tuner's update, ``_record_tuning`` and
   ``_with_progress``; what is left is the int conversion, the state check, the stats
   dict and the copy of the result;
4. inside the kernel: for BlockedGibbs, per colour, ``colour_value_states`` (numba),
   ``ExactRatios.batch_terms`` (split into PyTensor's ``Function.__call__`` and, within
   it, the compiled graph ``fn.vm()``), ``colour_conditional_table`` and
   ``update_colour`` (numba), the rest being the Python between colours; for ALBP's
   compiled loop, ``albp_steps`` and within it the numba loop (8 M-H steps with the
   model's log density and gradient compiled to numba).

Every configuration is built once, warmed up by a short discarded ``pm.sample``, then
sampled five times with the same seed, one chain, ``cores=1``, no progress bar (as the
other benchmarks), unwrapped (only ``_sample`` timed, once per chain) and wrapped in
turn: U W U W U. The stage times add up the two wrapped runs; the three unwrapped runs
give the time per draw without the wrappers and the run-to-run noise; all five must give
the same draws and stats (the wrappers touch no random state). The wrappers' own cost is
estimated from an empty function called through one (calls per draw x cost per call)
and lands in the parents' "rest" rows. Four more wrapped runs of BlockedGibbs at 50x50,
PyMC's default progress bar off and on in turn, measure what the bar costs per draw.
The inline operations of our glue (the state comparison, the jump count, the stats
reductions, the copy of the result), PyMC's copies in ``DictToArrayBijection`` and the
trace's store of a draw (into fresh and into touched memory) are timed alone on the
run's last draw, next to the no-copy alternatives, to size what a change would save.

Writes the section ``stages`` of ``benchmarks/RESULTS.md`` (tables and findings computed
from the numbers). Run with ``python -m benchmarks.run_stages`` (``--quick``: small
lattices and few draws, a smoke test).
"""

from __future__ import annotations

import datetime
import sys
import time
import timeit
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pymc.sampling.mcmc as pm_mcmc
from pymc.backends.ndarray import NDArray
from pymc.blocking import DictToArrayBijection
from pymc.progress_bar.progress import MCMCProgressBarManager
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.step_methods import STEP_METHODS

import pymc_discrete as pmd
import pymc_discrete.kernels.gibbs as gibbs_kernels
import pymc_discrete.pymc.albp as albp_module
import pymc_discrete.pymc.exact as exact_module
from benchmarks.harness import machine_description, write_section
from pymc_discrete.example_models import ising_model
from pymc_discrete.pymc.block_step import SiteBlockStep

COMMAND = "python -m benchmarks.run_stages"
#: wrapped runs of each configuration, alternating with one more unwrapped runs
WRAPPED_RUNS = 2
SEED = 3
ALBP_STEPS = 8
BLOCKED = "register() (BlockedGibbs)"
ALBP = f"ALBP (sqrt, compiled loop, {ALBP_STEPS} steps per draw)"


@dataclass(frozen=True)
class Size:
    """One lattice and the run lengths on it (one chain)."""

    side: int
    tune: int
    draws: int
    warmup: int


FULL = (Size(50, 300, 1000, 50), Size(200, 150, 500, 20))
QUICK = (Size(10, 20, 40, 5), Size(20, 20, 40, 5))


# --------------------------------------------------------------------------------------
# accumulators and patching
# --------------------------------------------------------------------------------------


class Stages:
    """Accumulators of wall time and calls, one per named stage.

    Examples
    --------
    >>> stages = Stages()
    >>> f = stages.wrap("double", lambda v: 2 * v)
    >>> f(3), stages.calls("double")
    (6, 1)
    """

    def __init__(self) -> None:
        self._acc: dict[str, list] = {}

    def wrap(self, name: str, fn: Callable) -> Callable:
        """``fn`` with its time and calls added to the stage ``name``.

        Parameters
        ----------
        name : str
            The stage.
        fn : callable
            What the stage calls.

        Returns
        -------
        callable
            Calls ``fn`` with the same arguments and returns what it returns.
        """
        acc = self._acc.setdefault(name, [0.0, 0])
        clock = time.perf_counter

        def timed(*args, **kwargs):
            began = clock()
            out = fn(*args, **kwargs)
            acc[0] += clock() - began
            acc[1] += 1
            return out

        return timed

    def seconds(self, name: str) -> float:
        """Seconds spent in the stage (0 if it never ran)."""
        return self._acc.get(name, [0.0, 0])[0]

    def calls(self, name: str) -> int:
        """Calls of the stage (0 if it never ran)."""
        return self._acc.get(name, [0.0, 0])[1]

    def total_calls(self) -> int:
        """Calls of every stage together."""
        return sum(calls for _, calls in self._acc.values())

    @classmethod
    def merged(cls, parts: list[Stages]) -> Stages:
        """The stages of several runs added up."""
        out = cls()
        for part in parts:
            for name, (seconds, calls) in part._acc.items():
                acc = out._acc.setdefault(name, [0.0, 0])
                acc[0] += seconds
                acc[1] += calls
        return out


class _TimedVM:
    """Stands for a PyTensor function's ``vm``: its call timed, its attributes passed on
    (``Function.__call__`` reads ``vm.allow_gc`` after the call)."""

    def __init__(self, vm, timed: Callable) -> None:
        self._vm = vm
        self._timed = timed
        self.allow_gc = vm.allow_gc

    def __call__(self):
        return self._timed()

    def __getattr__(self, name):
        return getattr(self._vm, name)


@contextmanager
def patched(replacements: list[tuple[object, str, object]]) -> Iterator[None]:
    """Set ``owner.attr = new`` for every ``(owner, attr, new)``, in order, and restore
    the originals on exit (deleting the attributes that were only inherited).

    Parameters
    ----------
    replacements : list of (object, str, object)
        Module, class or instance, attribute name, replacement.

    Examples
    --------
    >>> class A:
    ...     x = 1
    >>> with patched([(A, "x", 2)]):
    ...     A.x
    2
    >>> A.x
    1
    """
    saved = []
    try:
        for owner, attr, new in replacements:
            own = getattr(owner, "__dict__", None)
            if own is None:  # slots: the attribute is the object's own
                saved.append((owner, attr, True, getattr(owner, attr)))
            else:
                saved.append((owner, attr, attr in own, own.get(attr)))
            setattr(owner, attr, new)
        yield
    finally:
        for owner, attr, had, old in reversed(saved):
            if had:
                setattr(owner, attr, old)
            else:
                delattr(owner, attr)


def _draw_loop_patches(stages: Stages) -> list:
    """The wrapper of ``pymc.sampling.mcmc._sample``: the time of the whole draw loop,
    one call per chain (all the unwrapped runs carry)."""
    return [(pm_mcmc, "_sample", stages.wrap("draw", pm_mcmc._sample))]


def _pymc_patches(stages: Stages) -> list:
    """PyMC's per-draw work: trace recording (and its compiled function), progress bar,
    warning stats, and the point conversion of ``ArrayStepShared.step``."""
    setup = NDArray.setup

    def setup_timing_fn(self, *args, **kwargs):  # every chain's trace: time its function
        setup(self, *args, **kwargs)
        self.fn = stages.wrap("trace_fn", self.fn)

    return [
        (NDArray, "setup", setup_timing_fn),
        (NDArray, "record", stages.wrap("record", NDArray.record)),
        (MCMCProgressBarManager, "update", stages.wrap("progress",
                                                       MCMCProgressBarManager.update)),
        (pm_mcmc, "log_warning_stats", stages.wrap("warnings", pm_mcmc.log_warning_stats)),
        (DictToArrayBijection, "map", staticmethod(stages.wrap("map",
                                                                DictToArrayBijection.map))),
        (DictToArrayBijection, "rmap", staticmethod(stages.wrap("rmap",
                                                                 DictToArrayBijection.rmap))),
    ]


def _astep_patches(stages: Stages, step: SiteBlockStep) -> list:
    """Our ``astep`` and its parts (instance attributes of the step and its tuner)."""
    return [
        (step, "step", stages.wrap("step", step.step)),
        (step, "astep", stages.wrap("astep", step.astep)),
        (step, "_others_changed", stages.wrap("others", step._others_changed)),
        (step, "_run_steps", stages.wrap("kernel", step._run_steps)),
        (step.adapter, "update", stages.wrap("tuner", step.adapter.update)),
        (step, "_record_tuning", stages.wrap("record_tuning", step._record_tuning)),
        (step, "_with_progress", stages.wrap("with_progress", step._with_progress)),
    ]


def _blocked_gibbs_patches(stages: Stages, step) -> list:
    """BlockedGibbs' kernel: state building, batched terms (PyTensor), tables, draws."""
    exact = step._exact
    fn = exact._fn
    return [
        (fn, "vm", _TimedVM(fn.vm, stages.wrap("vm", fn.vm))),
        (exact, "_fn", stages.wrap("pytensor_call", fn)),
        (exact, "batch_terms", stages.wrap("batch_terms", exact.batch_terms)),
        (exact_module, "colour_value_states",
         stages.wrap("colour_states", exact_module.colour_value_states)),
        (exact_module, "colour_conditional_table",
         stages.wrap("table", exact_module.colour_conditional_table)),
        (gibbs_kernels, "update_colour",
         stages.wrap("update_colour", gibbs_kernels.update_colour)),
    ]


def _albp_loop_patches(stages: Stages) -> list:
    """ALBP's compiled loop: ``albp_steps`` and the numba loop it calls."""
    albp_steps = albp_module.albp_steps
    loops: dict[int, Callable] = {}

    def with_timed_loop(state, scale, rng, n_steps, loop, extra, code):
        timed = loops.get(id(loop))
        if timed is None:
            timed = loops[id(loop)] = stages.wrap("numba_loop", loop)
        return albp_steps(state, scale, rng, n_steps, timed, extra, code)

    return [(albp_module, "albp_steps", stages.wrap("albp_steps", with_timed_loop))]


def all_patches(stages: Stages, step: SiteBlockStep) -> list:
    """Every wrapper of a wrapped run of ``step``."""
    out = _draw_loop_patches(stages) + _pymc_patches(stages) + _astep_patches(stages, step)
    if isinstance(step, pmd.BlockedGibbs):
        out += _blocked_gibbs_patches(stages, step)
    elif getattr(step, "compiled_loop", False):
        out += _albp_loop_patches(stages)
    return out


# --------------------------------------------------------------------------------------
# the stage tree
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """A timed stage, its label and owner, and the stages timed inside it (what they
    leave of it is a "rest" row with ``rest`` as label)."""

    key: str
    label: str
    owner: str
    children: tuple = ()
    rest: str = ""
    rest_owner: str = ""


def stage_tree(kernel: tuple) -> Stage:
    """The stages of a draw, with ``kernel`` the stages inside ``_run_steps``."""
    return Stage("draw", "whole draw (`pymc.sampling.mcmc._sample` / iterations)", "", (
        Stage("step", "`ArrayStepShared.step`", "PyMC", (
            Stage("map", "`DictToArrayBijection.map` (point to array: `np.concatenate`)",
                  "PyMC"),
            Stage("astep", "`SiteBlockStep.astep`", "ours", (
                Stage("others", "`_others_changed`", "ours"),
                Stage("kernel", "kernel: `_run_steps`", "ours", *kernel),
                Stage("tuner", "tuner: `ScaleAdapter.update`", "ours"),
                Stage("record_tuning", "`_record_tuning`", "ours"),
                Stage("with_progress", "`_with_progress` (running means)", "ours"),
            ), "rest: int conversion, state check, jump count, stats dict, copy of the "
               "result", "ours"),
            Stage("rmap", "`DictToArrayBijection.rmap` (array to point: `astype` copy)",
                  "PyMC"),
        ), "rest: shared variables, the block's dict", "PyMC"),
        Stage("record", "`NDArray.record` (the default trace)", "PyMC", (
            Stage("trace_fn", "its compiled function `NDArray.fn`", "PyMC"),
        ), "rest: stores the draw and the stats in the trace's arrays", "PyMC"),
        Stage("progress", "`MCMCProgressBarManager.update`", "PyMC"),
        Stage("warnings", "`log_warning_stats`", "PyMC"),
    ), "rest: the loop (`_iter_sample` generator, per-chain set-up, `stop_tuning`, "
       "`close`)", "PyMC")


BLOCKED_KERNEL = ((
    Stage("colour_states", "`colour_value_states` (numba: the 1 + K states of a colour)",
          "ours"),
    Stage("batch_terms", "`ExactRatios.batch_terms`", "ours", (
        Stage("pytensor_call", "PyTensor `Function.__call__`", "PyTensor", (
            Stage("vm", "the compiled graph (`fn.vm()`)", "PyTensor"),
        ), "rest: `Function.__call__`'s Python", "PyTensor"),
    ), "rest: offsets, contiguous copy, checks", "ours"),
    Stage("table", "`colour_conditional_table` (numba)", "ours"),
    Stage("update_colour", "`update_colour` (numba draws)", "ours"),
), "rest: Python between colours (`blocked_gibbs_sweep`), `StepsInfo`", "ours")

ALBP_KERNEL = ((
    Stage("albp_steps", "`albp_steps`", "ours", (
        Stage("numba_loop", f"numba loop: {ALBP_STEPS} M-H steps, model's logp+gradient "
                            "in numba", "ours"),
    ), "rest: uniforms, state and info objects", "ours"),
), "rest: the loop's lookup, shared values", "ours")


def tree_for(step) -> Stage:
    """The stage tree of ``step``'s draws."""
    return stage_tree(BLOCKED_KERNEL if isinstance(step, pmd.BlockedGibbs) else ALBP_KERNEL)


@dataclass
class Row:
    """One line of a stage table."""

    number: str
    label: str
    owner: str
    seconds: float
    calls: float  # per draw (NaN for a rest)


def flatten(stage: Stage, stages: Stages, number: str = "1",
            draw_seconds: float | None = None) -> list[Row]:
    """The rows of ``stage`` and everything inside it, in order, each rest after the
    stages it is the rest of. The draw's seconds are the draw loop's."""
    seconds = stages.seconds(stage.key) if draw_seconds is None else draw_seconds
    rows = [Row(number, stage.label, stage.owner, seconds, float(stages.calls(stage.key)))]
    inside = 0.0
    for i, child in enumerate(stage.children, 1):
        child_rows = flatten(child, stages, f"{number}.{i}")
        inside += child_rows[0].seconds
        rows += child_rows
    if stage.children:
        rows.append(Row(f"{number}.{len(stage.children) + 1}", stage.rest, stage.rest_owner,
                        seconds - inside, float("nan")))
    return rows


# --------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------


def registered_step(model: pm.Model, start: dict):
    """What plain ``pm.sample()`` assigns with ``register()`` (PyMC's own
    ``assign_step_methods`` and ``instantiate_steppers``), built at ``start``."""
    was = pmd.is_registered()
    pmd.register()
    try:
        provided, selected = assign_step_methods(model, None, methods=STEP_METHODS)
        return instantiate_steppers(model, provided, selected,
                                    initial_point={**model.initial_point(), **start})
    finally:
        if not was:
            pmd.unregister()


def albp_step(model: pm.Model, start: dict):
    """ALBP's compiled loop as ``run_core`` and ``run_blocked`` build it (``start`` is
    where ``pm.sample`` starts it)."""
    return pmd.ALBP([model["x"]], weight="sqrt", steps_per_draw=ALBP_STEPS,
                    compiled_loop=True)


@dataclass
class Run:
    """One ``pm.sample`` run: its stages, draws and stats."""

    stages: Stages
    iterations: int
    wall: float
    draws: np.ndarray
    stats: dict

    @property
    def ms_per_draw(self) -> float:
        """Milliseconds of the draw loop per iteration (tuning included)."""
        return 1e3 * self.stages.seconds("draw") / self.iterations


def sample_once(model: pm.Model, step, size: Size, start: dict, wrapped: bool,
                progressbar: bool = False) -> Run:
    """One chain of ``size.tune + size.draws`` iterations with the seed :data:`SEED`,
    every stage wrapped or only the draw loop."""
    stages = Stages()
    patches = all_patches(stages, step) if wrapped else _draw_loop_patches(stages)
    began = time.perf_counter()
    with model, patched(patches):
        idata = pm.sample(step=step, draws=size.draws, tune=size.tune, chains=1, cores=1,
                          random_seed=SEED, progressbar=progressbar, initvals=start,
                          compute_convergence_checks=False, discard_tuned_samples=False,
                          quiet=not progressbar)
    wall = time.perf_counter() - began
    x = np.concatenate([idata.warmup_posterior["x"].values, idata.posterior["x"].values], 1)
    stats = {k: np.concatenate([idata.warmup_sample_stats[k].values,
                                idata.sample_stats[k].values], 1)
             for k in idata.sample_stats.data_vars}
    return Run(stages, size.tune + size.draws, wall, x, stats)


def merged_runs(runs: list[Run]) -> Run:
    """Runs of one configuration as one: stages and iterations added up (the draws and
    stats of the first)."""
    first = runs[0]
    return Run(Stages.merged([r.stages for r in runs]), sum(r.iterations for r in runs),
               sum(r.wall for r in runs), first.draws, first.stats)


def same_chain(a: Run, b: Run) -> bool:
    """Whether two runs gave the same draws and the same stats (NaN equal to NaN)."""
    return bool(np.array_equal(a.draws, b.draws)) and set(a.stats) == set(b.stats) and all(
        np.array_equal(a.stats[k], b.stats[k], equal_nan=a.stats[k].dtype.kind == "f")
        for k in a.stats)


def wrapper_cost(n: int = 200_000) -> float:
    """Seconds one wrapper adds to a call (an empty function called directly and through
    :meth:`Stages.wrap`, best of 5)."""
    def empty():
        return None

    timed = Stages().wrap("empty", empty)
    direct = min(timeit.repeat(empty, number=n, repeat=5))
    through = min(timeit.repeat(timed, number=n, repeat=5))
    return max(0.0, (through - direct) / n)


def _us(stmt: Callable, seconds: float = 0.05) -> float:
    """Microseconds per call of ``stmt`` (best of 5 repeats of about ``seconds``)."""
    n = max(1, int(seconds / max(1e-7, timeit.timeit(stmt, number=3) / 3)))
    return 1e6 * min(timeit.repeat(stmt, number=n, repeat=5)) / n


#: the array operations timed alone: key -> label
INLINE = {
    "int": "ours: int conversion `np.asarray(q0.data, dtype=np.int64)` (no copy of int64)",
    "check": "ours: state check `np.array_equal(state.x, x)` (equal arrays)",
    "jump": "ours: jump count `np.count_nonzero(state.x != start)`",
    "sums": f"ours: the 3 stats reductions `float(info.accept_prob.sum())`, ... "
            f"({ALBP_STEPS} steps)",
    "copy": "ours: copy of the result `values.astype(dtype, copy=True)`",
    "map": "PyMC `map`: `np.concatenate((x.ravel(),))`",
    "map_view": "`map` without the copy: `x.ravel()`",
    "rmap": "PyMC `rmap`: `a.reshape(shape).astype(dtype)`",
    "rmap_view": "`rmap` without the copy: `a.reshape(shape).astype(dtype, copy=False)`",
}


def inline_costs(x: np.ndarray) -> dict[str, float]:
    """Microseconds of the array operations of our glue and of PyMC's point conversion
    (:data:`INLINE`), on the draw ``x`` (its dtype and shape), and of their no-copy
    alternatives."""
    flat = x.ravel().copy()
    same = flat.copy()
    other = flat.copy()
    other[0] = 1 - other[0]
    dtype, shape = x.dtype, x.shape
    info = (np.full(ALBP_STEPS, 0.5), np.ones(ALBP_STEPS, bool), np.ones(ALBP_STEPS, np.int64))

    def sums():
        return (float(info[0].sum()) / ALBP_STEPS, float(info[1].sum()) / ALBP_STEPS,
                int(info[2].sum()))

    return {
        "int": _us(lambda: np.asarray(flat, dtype=np.int64)),
        "check": _us(lambda: np.array_equal(flat, same)),
        "jump": _us(lambda: np.count_nonzero(flat != other)),
        "sums": _us(sums),
        "copy": _us(lambda: flat.astype(dtype, copy=True)),
        "map": _us(lambda: np.concatenate((x.ravel(),))),
        "map_view": _us(lambda: x.ravel()),
        "rmap": _us(lambda: flat.reshape(shape).astype(dtype)),
        "rmap_view": _us(lambda: flat.reshape(shape).astype(dtype, copy=False)),
    }


#: the trace's store of a draw, timed alone: key -> label
TRACE_STORE = {
    "store_fresh": "PyMC trace: store a draw into `NDArray`'s fresh `np.empty` (int64, as "
                   "`NDArray.setup` allocates)",
    "store_touched": "the same store into trace memory already written once",
    "store_int8": "the same store into a fresh int8 array",
}


def trace_store_costs(x: np.ndarray, rows: int) -> dict[str, float]:
    """Microseconds per draw of ``samples[i] = x`` over ``rows`` draws (:data:`TRACE_STORE`):
    into fresh memory allocated as ``NDArray.setup`` does (``np.empty``, the variable's
    dtype), into the same memory again, and into a fresh int8 array."""
    def per_draw(trace: np.ndarray) -> float:
        began = time.perf_counter()
        for i in range(rows):
            trace[i] = x
        return 1e6 * (time.perf_counter() - began) / rows

    trace = np.empty((rows, *x.shape), dtype=x.dtype)
    fresh = per_draw(trace)
    touched = per_draw(trace)
    del trace
    small = np.empty((rows, *x.shape), dtype=np.int8)
    return {"store_fresh": fresh, "store_touched": touched, "store_int8": per_draw(small)}


@dataclass
class Case:
    """Every run of one step on one lattice."""

    side: int
    label: str
    step_name: str
    size: Size
    tree: Stage
    wrapped: Run
    bare: list[Run]
    identical: bool
    inline: dict[str, float] = field(default_factory=dict)
    build_s: float = 0.0
    #: what a further run needs: the model, the step and the start
    setting: tuple = ()

    @property
    def n(self) -> int:
        return self.side * self.side

    def rows(self) -> list[Row]:
        """The stage rows of the wrapped run, seconds per draw."""
        it = self.wrapped.iterations
        rows = flatten(self.tree, self.wrapped.stages)
        for r in rows:
            r.seconds /= it
            r.calls /= it
        return rows

    def ms(self, key: str) -> float:
        """Milliseconds per draw of a timed stage of the wrapped run."""
        return 1e3 * self.wrapped.stages.seconds(key) / self.wrapped.iterations


def _step_name(step) -> str:
    if isinstance(step, pmd.BlockedGibbs):
        return f"BlockedGibbs ({step.n_colours} colours)"
    return type(step).__name__


def run_case(side: int, label: str, make_step: Callable[[pm.Model, dict], object],
             size: Size) -> Case:
    """Build the step on the lattice, warm it up, and run it unwrapped, wrapped and
    unwrapped again."""
    model = ising_model(side, "C2")
    start = {"x": np.random.default_rng(0).integers(0, 2, (side, side))}
    began = time.perf_counter()
    with model:
        step = make_step(model, start)
    built = time.perf_counter() - began
    if not isinstance(step, SiteBlockStep):
        raise RuntimeError(f"{label} on {side}x{side} built {step!r}, not one step of ours")
    warm = Size(side, size.warmup, size.warmup, 0)
    sample_once(model, step, warm, start, wrapped=False)
    runs = [sample_once(model, step, size, start, wrapped=i % 2 == 1)
            for i in range(2 * WRAPPED_RUNS + 1)]
    identical = all(same_chain(runs[0], r) for r in runs[1:])
    wrapped = merged_runs(runs[1::2])
    bare = runs[0::2]
    x = wrapped.draws[0, -1]
    inline = {**inline_costs(x), **trace_store_costs(x, wrapped.iterations // WRAPPED_RUNS)}
    case = Case(side, label, _step_name(step), size, tree_for(step), wrapped, bare,
                identical, inline, built, (model, step, start))
    print(f"  {side}x{side} {label}: built in {built:.1f} s; ms/draw unwrapped "
          + " / ".join(f"{b.ms_per_draw:.3f}" for b in bare) + ", wrapped "
          + " / ".join(f"{w.ms_per_draw:.3f}" for w in runs[1::2])
          + f"; same draws: {identical}", flush=True)
    return case


def progressbar_cost(case: Case) -> tuple[float, float, float]:
    """Milliseconds per draw of ``MCMCProgressBarManager.update`` and of the whole draw
    with PyMC's default progress bar on, and of the whole draw with it off (wrapped runs
    of ``case``'s step, off and on alternating)."""
    model, step, start = case.setting
    runs = [sample_once(model, step, case.size, start, wrapped=True, progressbar=i % 2 == 1)
            for i in range(2 * WRAPPED_RUNS)]
    if not all(same_chain(case.wrapped, r) for r in runs):
        raise RuntimeError("the progress bar changed the chain")
    on, off = merged_runs(runs[1::2]), merged_runs(runs[0::2])
    return 1e3 * on.stages.seconds("progress") / on.iterations, on.ms_per_draw, off.ms_per_draw


# --------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------


def _depth(number: str) -> int:
    return number.count(".")


def stage_table(cases: list[Case]) -> str:
    """One step's stages at every size: ms per draw and share of the draw."""
    head = "| stage | whose | calls per draw | " + " | ".join(
        f"{c.n:,} sites: ms/draw | share" for c in cases) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    per_case = [c.rows() for c in cases]
    totals = [rows[0].seconds for rows in per_case]
    for parts in zip(*per_case):
        first = parts[0]
        indent = "&nbsp;&nbsp;" * _depth(first.number)
        calls = ("" if not np.isfinite(first.calls) else "-" if first.number == "1"
                 else f"{first.calls:.2f}")
        cells = []
        for r, total in zip(parts, totals):
            cells.append(f"{1e3 * r.seconds:.4f} | {100 * r.seconds / total:.1f}%")
        label = f"**{first.label}**" if first.number == "1" else first.label
        lines.append(f"| {indent}{first.number} {label} | {first.owner} | {calls} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def rollup(case: Case) -> dict[str, float]:
    """Milliseconds per draw by whose work it is: the kernel, our glue around it, PyMC's
    step wrapper and PyMC's loop (trace, progress, warnings, generator)."""
    draw, step, astep, kernel = (case.ms(k) for k in ("draw", "step", "astep", "kernel"))
    return {"draw": draw, "kernel": kernel, "glue": astep - kernel,
            "pymc_step": step - astep, "pymc_loop": draw - step}


def summary_table(cases: list[Case], per_call: float) -> str:
    """Per step and lattice: the draw split by owner, the unwrapped times, the wrappers'
    cost and whether the draws were the same."""
    head = ("| step | sites | runs x (tune + draws) | ms/draw wrapped | kernel | our glue "
            "| PyMC: `ArrayStepShared.step` wrapper | PyMC: loop, trace, progress "
            "| ms/draw unwrapped: median (range) | wrapped - unwrapped median "
            "| wrappers' cost (estimate) | same draws and stats |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for c in cases:
        r = rollup(c)
        bare = sorted(b.ms_per_draw for b in c.bare)
        median = float(np.median(bare))
        calls = c.wrapped.stages.total_calls() / c.wrapped.iterations

        def part(key):
            return f"{r[key]:.3f} ({100 * r[key] / r['draw']:.0f}%)"

        lines.append(
            f"| {c.label} | {c.n:,} | {WRAPPED_RUNS} wrapped, {len(bare)} unwrapped x "
            f"({c.size.tune} + {c.size.draws}) | {r['draw']:.3f} "
            f"| {part('kernel')} | {part('glue')} | {part('pymc_step')} | {part('pymc_loop')} "
            f"| {median:.3f} ({bare[0]:.3f}-{bare[-1]:.3f}) | {r['draw'] - median:+.3f} "
            f"| {1e3 * calls * per_call:.3f} ({calls:.0f} calls) "
            f"| {'yes' if c.identical else '**NO**'} |")
    return "\n".join(lines)


def inline_table(cases: list[Case]) -> str:
    """The glue's and PyMC's array operations timed alone, at every size."""
    sizes = {c.n: c for c in cases}
    head = "| operation (timed alone on the last draw) | " + " | ".join(
        f"{n:,} sites: us" for n in sizes) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for key, label in {**INLINE, **TRACE_STORE}.items():
        lines.append(f"| {label} | " + " | ".join(f"{c.inline[key]:.2f}"
                                                  for c in sizes.values()) + " |")
    return "\n".join(lines)


def _pct(part: float, whole: float) -> str:
    return f"{1e3 * part:.0f} us ({100 * part / whole:.0f}%)"


def _case_finding(c: Case) -> str:
    """One bullet: where the case's draw goes, by owner and largest stages."""
    r = rollup(c)
    d = r["draw"]
    if c.ms("batch_terms") > 0:
        numba = c.ms("colour_states") + c.ms("table") + c.ms("update_colour")
        between = r["kernel"] - numba - c.ms("batch_terms")
        kernel = (f"`ExactRatios.batch_terms` {_pct(c.ms('batch_terms'), d)} (of which the "
                  f"compiled graph {1e3 * c.ms('vm'):.0f} us and PyTensor's "
                  f"`Function.__call__` around it {1e3 * (c.ms('pytensor_call') - c.ms('vm')):.0f}"
                  f" us), numba state building, tables and draws {_pct(numba, d)}, Python "
                  f"between colours {_pct(between, d)}")
    else:
        kernel = (f"the numba loop {_pct(c.ms('numba_loop'), d)}, Python around it "
                  f"{_pct(r['kernel'] - c.ms('numba_loop'), d)}")
    pymc = sorted([
        (c.ms("map"), "`map`"), (c.ms("rmap"), "`rmap`"),
        (c.ms("record"), f"`NDArray.record` (its `fn` {1e3 * c.ms('trace_fn'):.0f} us)"),
        (r["pymc_step"] - c.ms("map") - c.ms("rmap"), "rest of `ArrayStepShared.step`"),
        (r["pymc_loop"] - c.ms("record") - c.ms("progress") - c.ms("warnings"),
         "the loop"),
        (c.ms("progress") + c.ms("warnings"), "progress update (bar off) and warnings"),
    ], key=lambda item: item[0], reverse=True)
    return (f"- **{c.label}, {c.n:,} sites**, {d:.3f} ms per draw: kernel "
            f"{_pct(r['kernel'], d)}: {kernel}. Ours outside the kernel "
            f"{_pct(r['glue'], d)}. PyMC {_pct(r['pymc_step'] + r['pymc_loop'], d)}: "
            + ", ".join(f"{label} {1e3 * ms:.0f} us" for ms, label in pymc) + ".")


def findings(cases: list[Case], progress: tuple[float, float, float] | None,
             per_call: float) -> str:
    """The findings, computed from the numbers."""
    by_size = {c.n: c for c in cases if c.label == BLOCKED}  # the inline timings
    sizes = list(by_size)
    at = " and ".join(f"{n:,}" for n in sizes)
    gibbs = [c for c in cases if c.label == BLOCKED]

    def each(fn, fmt=".0f", over=None) -> str:  # a value at every size, "a / b us"
        over = by_size if over is None else over
        return " / ".join(format(fn(over[n]), fmt) for n in sizes) + " us"

    def each_case(fn) -> str:  # a percentage in every case
        return "; ".join(f"{c.label} at {c.n:,} sites {fn(c):.0f}%" for c in cases)

    def pct(c: Case, keys) -> float:
        r = rollup(c)
        return 100 * sum(r[k] for k in keys) / r["draw"]

    def cuttable(c: Case) -> float:
        return sum(c.inline[k] for k in ("check", "jump", "sums", "copy"))

    def glue_rest(c: Case) -> float:
        return 1e3 * (rollup(c)["glue"] - sum(
            c.ms(k) for k in ("others", "tuner", "record_tuning", "with_progress")))

    def store(c: Case) -> float:  # the trace's stores of the draw and the stats, in the run
        return 1e3 * (c.ms("record") - c.ms("trace_fn"))

    def saving_copies(c: Case) -> float:
        i = c.inline
        return i["map"] - i["map_view"] + i["rmap"] - i["rmap_view"]

    def numba(c: Case) -> float:
        return 100 * (c.ms("colour_states") + c.ms("table") + c.ms("update_colour")) \
            / rollup(c)["draw"]

    def model(c: Case) -> float:
        return 100 * c.ms("batch_terms") / rollup(c)["draw"]

    gibbs_kernel = "; ".join(
        f"{c.n:,} sites: numba {numba(c):.0f}% (`update_colour` alone "
        f"{100 * c.ms('update_colour') / rollup(c)['draw']:.0f}%), batched terms {model(c):.0f}%"
        for c in gibbs)
    by_any = {c.n: c for c in cases if c.label == ALBP} or by_size
    numba_first = all(numba(c) > model(c) for c in gibbs)
    kernel_note = (
        f"the numba code is the larger part, not the model's evaluation ({gibbs_kernel}): "
        "the next gain is ours, in `update_colour` and `colour_conditional_table`, before "
        "any of PyMC's" if numba_first else
        f"the model's batched evaluation is the larger part ({gibbs_kernel})")
    pymc_shares = each_case(lambda c: pct(c, ("pymc_step", "pymc_loop")))
    glue_shares = each_case(lambda c: pct(c, ("glue",)))
    int8_saving = each(lambda c: c.inline["store_fresh"] - c.inline["store_int8"])
    big = by_size[sizes[-1]]
    items = {  # PyMC's items in the largest BlockedGibbs run, us per draw
        "the trace's stores (`NDArray.record` less its `fn`)": store(big),
        "`NDArray.fn`": 1e3 * big.ms("trace_fn"),
        "`DictToArrayBijection.map`": 1e3 * big.ms("map"),
        "`DictToArrayBijection.rmap`": 1e3 * big.ms("rmap"),
        "the rest of `ArrayStepShared.step`":
            1e3 * (rollup(big)["pymc_step"] - big.ms("map") - big.ms("rmap")),
        "the loop": 1e3 * (rollup(big)["pymc_loop"] - big.ms("record") - big.ms("progress")
                           - big.ms("warnings")),
    }
    largest = max(items, key=items.get)
    stores = {k: each(lambda c, k=k: c.inline[k]) for k in TRACE_STORE}
    first, last = by_size[sizes[0]], by_size[sizes[-1]]
    grown = glue_rest(last) - glue_rest(first)
    grown_alone = cuttable(last) - cuttable(first)
    in_run = (f"From {sizes[0]:,} to {sizes[-1]:,} sites the rest row grows by {grown:.0f} us "
              f"where the timed-alone O(N) parts grow by {grown_alone:.0f} us")
    if grown > 1.2 * grown_alone:
        in_run = (f"In the run they cost more: {in_run[0].lower()}{in_run[1:]} "
                  f"({grown / max(grown_alone, 1e-9):.1f}x: cold caches after the kernel's "
                  "sweep over the lattice, a fresh array for the copy).")
    else:
        in_run += "."
    largest_note = (f"The largest PyMC item at {sizes[-1]:,} sites is {largest}: "
                    f"{items[largest]:.0f} us per draw of PyMC's {sum(items.values()):.0f} us")
    text = "\n".join(_case_finding(c) for c in cases)
    text += f"""

What is whose (values "a / b" are at {at} sites; "timed alone" values are from the table
above, the others from the wrapped BlockedGibbs runs unless said):

- **The kernel is most of a draw**: {each_case(lambda c: pct(c, ("kernel",)))}. In
  BlockedGibbs' kernel {kernel_note}.
- **PyMC's share** of a draw (step wrapper, trace, loop): {pymc_shares}.
  **Our glue** outside the kernel: {glue_shares}.
- **Ours, and what could be cut**: the rest row of `SiteBlockStep.astep`
  ({each(glue_rest)}) is a dozen small numpy calls and attribute lookups; its O(N) parts,
  timed alone: the state check `np.array_equal(state.x, x)` ({each(lambda c: c.inline["check"])}:
  every draw, although only a new chain or another writer of the block changes the
  block, and PyMC's `map` hands a new array every draw so identity cannot tell); the jump
  count `np.count_nonzero(state.x != start)` ({each(lambda c: c.inline["jump"])}: the
  kernels know which sites they changed); the copy of the result
  `values.astype(q0.data.dtype, copy=True)` ({each(lambda c: c.inline["copy"])}: redundant
  while PyMC's `rmap` copies again and the kernels replace `state.x` rather than write
  into it, but one of the two copies must stay); the three short-array reductions of the
  stats ({each(lambda c: c.inline["sums"], ".1f")}). Timed alone they add up to
  {each(cuttable)} per draw. {in_run} Cutting them would save
  up to the rest's growth plus the fixed Python, i.e. at most {each(glue_rest)} per draw
  with BlockedGibbs; as a share of the draw, the whole rest row is
  {each_case(lambda c: 100 * 1e-3 * glue_rest(c) / rollup(c)["draw"])}.
  `_with_progress`, `_record_tuning` and the tuner are a few us, independent of N.
- **PyMC's, named**: `pymc.sampling.mcmc._iter_sample` calls, every draw,
  `ArrayStepShared.step` (`pymc/step_methods/arraystep.py`), which converts the point
  with `DictToArrayBijection.map` (`np.concatenate` of the raveled values: a copy even of
  one variable) and back with `DictToArrayBijection.rmap` (`.reshape(shape).astype(dtype)`:
  a second copy, even when the dtype matches); then `NDArray.record` of the default trace
  (`pymc/backends/ndarray.py`), which calls the trace's compiled PyTensor function
  `self.fn(*point.values())` (the identity on this model: {each(lambda c: 1e3 * c.ms("trace_fn"))}),
  stores the draw into `self.samples[name][draw_idx]` and every stat by a Python loop over
  the stats dicts ({each(store)} for the stores; ALBP's runs {each(store, over=by_any)});
  then `log_warning_stats`, and `_sample` calls `MCMCProgressBarManager.update` (which
  returns at once with the bar off).
- **{largest_note}.** The trace's memory: storing a draw into the fresh `np.empty` array
  `NDArray.setup` allocates (int64: 8 bytes a 0/1 site) costs {stores["store_fresh"]} timed
  alone, against {stores["store_touched"]} into the same memory once written and
  {stores["store_int8"]} into a fresh int8 array: the cost is the first
  touch of every page of the trace (page faults), in proportion to the bytes stored. It
  varies with the OS's memory state (transparent huge pages on "madvise" here), so the
  in-run store time may differ from the timed-alone one.
- **Smallest changes to PyMC that remove its share**:
  1. The trace: store a bounded discrete variable in the smallest integer dtype that
     holds its support (int8 for Bernoulli and small Categorical) in `NDArray.setup`, or
     pre-touch the trace arrays at set-up: per draw it would save most of the stores
     (timed alone, fresh int64 against fresh int8: {int8_saving}).
     And skip `self.fn` in `NDArray.record` when the traced variables are the value
     variables themselves (no transforms, no deterministics: `fn` is the identity), storing
     the point's arrays directly: {each(lambda c: 1e3 * c.ms("trace_fn"))} per draw.
  2. `DictToArrayBijection.rmap`: `.astype(dtype, copy=False)`; `map` of a one-variable
     point: `value.ravel()` instead of `np.concatenate`: saves {each(saving_copies)} per
     draw (timed alone against the views) with no change to any step. Removing the round
     trip (a step alone on its block keeps its `RaveledVars` from draw to draw, and
     `ArrayStepShared.step` maps only when another step changed the point) saves the whole
     step wrapper, {each(lambda c: 1e3 * rollup(c)["pymc_step"])} per draw.
  3. Sampler stats: record them into preallocated arrays by position (or in batches)
     rather than a dict per draw looped over by name; the progress bar: update it every
     k draws or every 0.1 s, not every draw."""
    if progress is not None:
        bar, on, off = progress
        text += (f"\n- **Progress bar** (PyMC's default `progressbar=True`; stdout is not a "
                 f"terminal here): `MCMCProgressBarManager.update` (rich's update, and our "
                 f"`_make_progressbar_update_functions`) takes {1e3 * bar:.0f} us per draw "
                 f"with BlockedGibbs at {sizes[0]:,} sites ({100 * bar / on:.0f}% of a draw). "
                 f"The whole draw takes {on:.3f} ms with the bar and {off:.3f} ms without "
                 f"({1e3 * (on - off):+.0f} us; {WRAPPED_RUNS} wrapped runs of each, "
                 "alternating)")
        if on - off > 2 * bar:
            text += (": more than the update call explains, so part of the bar's cost runs "
                     "elsewhere, e.g. in rich's refresh thread holding the GIL")
        else:
            text += (": the update's own time is the number to go by, the whole-draw "
                     "difference being within the run-to-run noise")
        text += ". The benchmarks run with the bar off."
    text += (f"\n- **The wrappers** cost {1e9 * per_call:.0f} ns per wrapped call (an empty "
             "function called directly and through one, best of 5); their estimated total "
             "per draw is in the summary table next to the measured difference between the "
             "wrapped runs and the unwrapped ones, whose range shows the run-to-run noise. "
             "Each wrapper's cost lands in its parent's rest row.")
    return text


def main(quick: bool = False) -> None:
    """Measure and write the ``stages`` section of RESULTS.md."""
    began = time.perf_counter()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = COMMAND + (" --quick" if quick else "")
    sizes = QUICK if quick else FULL
    per_call = wrapper_cost()
    cases: list[Case] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for label, make in ((BLOCKED, registered_step), (ALBP, albp_step)):
            for size in sizes:
                print(f"  Ising {size.side}x{size.side}: {label}", flush=True)
                cases.append(run_case(size.side, label, make, size))
        print("  progress bar", flush=True)
        progress = progressbar_cost(cases[0])
    minutes = (time.perf_counter() - began) / 60
    problems = [f"{c.label} at {c.n:,} sites: the wrapped run's draws or stats differ from "
                "the unwrapped ones" for c in cases if not c.identical]
    built = {c.label: c.step_name for c in cases}
    tables = "\n\n".join(
        f"### {label}: {built[label]}\n\n" + stage_table([c for c in cases if c.label == label])
        for label in dict.fromkeys(c.label for c in cases))
    lengths = ", ".join(f"{s.side}x{s.side}: {s.tune} tuning + {s.draws} draws "
                        f"(warm-up run {s.warmup} + {s.warmup})" for s in sizes)
    quick_note = " With `--quick` the lattices are small and the runs short: a smoke test." \
        if quick else ""
    sites = " and ".join(f"{s.side * s.side:,}" for s in sizes)
    text = f"""## Stages: where a draw's time goes (Ising C2, {sites} sites)

Produced by `{command}` on {stamp} (the run took {minutes:.1f} min).
Machine: {machine_description()}.

Issue 20, item 4. Ising C2 through a real `pm.sample(chains=1, cores=1,
progressbar=False)` with the seed {SEED} and a random start, for the step `register()`
builds ({built[BLOCKED]}) and ALBP's compiled loop (`pmd.ALBP(weight="sqrt",
steps_per_draw={ALBP_STEPS}, compiled_loop=True)`). Runs: {lengths}; times are per
iteration, tuning included. Every stage is a call site wrapped for the run with
`time.perf_counter` accumulators (module globals, class attributes or instance attributes
monkeypatched, restored after); the whole draw is `pymc.sampling.mcmc._sample` (one call
per chain) over the iterations. A "rest" row is its parent minus the stages timed inside
it. "whose": PyMC's code, ours (pymc-discrete) or PyTensor's (the compiled model).
Each configuration ran {2 * WRAPPED_RUNS + 1} times with the same seed, unwrapped (only
`_sample` timed) and wrapped in turn (U W U W U): the stage times add up the
{WRAPPED_RUNS} wrapped runs, and the draws and stats of all the runs are compared.{quick_note}

### Summary: whose time

{summary_table(cases, per_call)}

{tables}

### Array operations timed alone

The inline operations of `SiteBlockStep.astep` and the copies inside PyMC's
`DictToArrayBijection`, each timed alone (best of 5) on the wrapped run's last draw
(int64), next to their no-copy alternatives.

{inline_table([c for c in cases if c.label == BLOCKED])}

### Findings

{findings(cases, progress, per_call)}
"""
    if problems:
        text += "\nProblems seen in this run:\n\n" + "\n".join(f"- {p}" for p in problems) + "\n"
    print(text)
    write_section("stages", text)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
