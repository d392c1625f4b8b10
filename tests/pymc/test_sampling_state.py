"""The steps' state as PyMC saves it (``sampling_state``): it round-trips, sequential chains
start from the constructed state, ``reset_tuning`` restarts tuning, and a run saved in a
``ZarrTrace`` resumes with its frozen scale."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pymc as pm
import pytest
from pymc.step_methods.state import equal_dataclass_values

import pymc_discrete as pmd


@pytest.fixture(scope="module")
def chain_model():
    with pm.Model() as model:
        x = pm.Bernoulli("x", 0.3, shape=12)
        pm.Potential("chain", 0.6 * (x[1:] * x[:-1]).sum())
    return model


STEPS = {
    "albp": lambda m: pmd.ALBP([m["x"]], model=m),
    "albp-exact": lambda m: pmd.ALBP([m["x"]], proposal="exact", model=m),
    "albp-compiled-loop": lambda m: pmd.ALBP([m["x"]], compiled_loop=True, steps_per_draw=3,
                                             model=m),
    "arwm": lambda m: pmd.ARWM([m["x"]], model=m),
    "pas": lambda m: pmd.PAS([m["x"]], model=m),
    "blocked-gibbs": lambda m: pmd.BlockedGibbs([m["x"]], model=m),
}


def _draws(step, point, n):
    """``n`` draws of ``step`` from ``point``: the block's values and the scales used."""
    values, scales = [], []
    for _ in range(n):
        point, stats = step.step(point)
        values.append(np.array(point["x"]))
        scales.append(stats[0]["scaling"])
    return np.array(values), np.array(scales), point


@pytest.mark.parametrize("kind", list(STEPS))
def test_sampling_state_round_trips_and_continues_the_same_chain(chain_model, kind):
    step = STEPS[kind](chain_model)
    step.setup_chain(np.random.default_rng(3), tune=40, draws=40)
    step.reset_tuning()
    point = chain_model.initial_point()
    _, _, point = _draws(step, point, 25)  # in the middle of tuning
    saved = step.sampling_state
    first = _draws(step, point, 30)  # through the end of tuning (stop_tuning not called)
    assert not equal_dataclass_values(step.sampling_state, saved)
    step.sampling_state = saved
    assert equal_dataclass_values(step.sampling_state, saved)
    again = _draws(step, point, 30)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])


def test_a_state_only_goes_back_into_a_step_with_the_same_settings(chain_model):
    """A state of a step built otherwise is refused before anything is overwritten."""
    saved = pmd.ALBP([chain_model["x"]], model=chain_model).sampling_state
    other = pmd.ALBP([chain_model["x"]], target_accept=0.4, initial_scale=3.0,
                     model=chain_model)
    before = other.sampling_state
    with pytest.raises(ValueError, match="target_accept"):
        other.sampling_state = saved
    fixed = pmd.ALBP([chain_model["x"]], adapt=False, initial_scale=2.0, model=chain_model)
    with pytest.raises(ValueError, match="tuner differs"):
        fixed.sampling_state = saved
    assert equal_dataclass_values(other.sampling_state, before)
    assert other.adapter.target_accept == 0.4 and other.scale == 3.0


def test_a_reused_step_without_tuning_samples_at_its_initial_scale(chain_model):
    """After a tuned run, a run with tune=0 of the same step object starts from the
    initial scale whatever the number of cores of the first run (with one core the step
    object ran the chains, with two it did not): the same seed, the same draws."""
    runs = {}
    for cores in (1, 2):
        step = pmd.ALBP([chain_model["x"]], model=chain_model)
        with chain_model:
            pm.sample(step=step, draws=20, tune=100, chains=2, cores=cores, random_seed=3,
                      progressbar=False, compute_convergence_checks=False)
            runs[cores] = pm.sample(step=step, draws=30, tune=0, chains=2, cores=1,
                                    random_seed=4, progressbar=False,
                                    compute_convergence_checks=False)
        assert np.all(runs[cores].sample_stats["scaling"].values == 1.0)
        assert np.all(np.isnan(runs[cores].sample_stats["target_accept"].values))
    np.testing.assert_array_equal(runs[1].posterior["x"].values, runs[2].posterior["x"].values)


def test_resume_refuses_a_state_saved_during_tuning(chain_model):
    step = pmd.ALBP([chain_model["x"]], model=chain_model)
    step.setup_chain(np.random.default_rng(0), tune=50, draws=10)
    point = chain_model.initial_point()
    for _ in range(5):
        point, _ = step.step(point)
    with pytest.raises(ValueError, match="middle of tuning"):
        pmd.ALBP([chain_model["x"]], model=chain_model).resume(step.sampling_state)


def test_samcmc_sampling_state_round_trips():
    with pm.Model() as model:
        pm.Normal("a", 0.0, 1.0, shape=2)
    step = pmd.SAMCMC(model=model, n_points=8, steps_per_draw=2)
    step.setup_chain(np.random.default_rng(1), tune=10, draws=10)
    point = model.initial_point()
    for _ in range(5):
        point, _ = step.step(point)
    saved = step.sampling_state

    def run(start):
        draws = []
        for _ in range(5):
            start, _ = step.step(start)
            draws.append(start["a"])
        return np.array(draws)

    first = run(point)
    step.sampling_state = saved
    assert equal_dataclass_values(step.sampling_state, saved)
    np.testing.assert_array_equal(first, run(point))


def test_reset_tuning_restarts_from_the_initial_scale(chain_model):
    step = pmd.ALBP([chain_model["x"]], initial_scale=1.0, model=chain_model)
    step.setup_chain(np.random.default_rng(0), tune=200, draws=10)
    point = chain_model.initial_point()
    for _ in range(200):
        point, _ = step.step(point)
    step.stop_tuning()
    tuned = step.scale
    assert tuned > 1.5  # a weakly coupled chain of 12 sites accepts well above 0.574 at R=1
    step.reset_tuning()
    assert step.scale == 1.0 and step.adapter.tuning and step.tune


def test_sequential_chains_each_start_from_the_constructed_state():
    """A chain that switched from the gradient to exact ratios (its gradient proposal
    never moved) leaves the next sequential chain the gradient it was built with, as
    parallel chains have: each of the two chains switches, and warns, on its own."""
    with pm.Model() as model:
        x = pm.Bernoulli("x", np.array([0.3, 0.5, 0.6, 0.7]), shape=4)
        pm.Potential("pair", 0.8 * x[0] * x[1])
    step = pmd.ALBP([x], proposal="gradient", model=model)
    honest = step._logp_and_ratios

    def broken(y):  # the log density is right, the ratios say no move is possible
        logp, ratios = honest(y)
        return logp, np.full_like(ratios, np.nan)

    step._logp_and_ratios = broken
    step._rebuild_kernel()
    with model, pytest.warns(pmd.RelaxationWarning, match="none of its first 50") as caught:
        pm.sample(step=step, draws=20, tune=100, chains=2, cores=1, random_seed=5,
                  progressbar=False, compute_convergence_checks=False)
    switches = [w for w in caught if "none of its first 50" in str(w.message)]
    assert len(switches) == 2
    # the state of a chain that switched puts the switch back, and the constructed state
    # undoes it
    assert step._switched_to_exact and step.proposal == "exact"
    switched = step.sampling_state
    step._switched_to_exact = False
    assert step.proposal == "gradient" and step._logp_and_ratios is broken
    step.sampling_state = switched
    assert step.proposal == "exact" and step.ratios_are_exact


#: zarr 2 and the numcodecs it works with, installed apart from the environment's zarr 3
ZARR_2 = Path(sys.prefix) / "zarr2"


def _in_a_process_with_zarr_2(nodeid: str) -> None:
    """Run one test in a fresh process whose imports find zarr 2 first."""
    assert (ZARR_2 / "zarr").is_dir(), (
        f"zarr 2 is not installed in {ZARR_2}: `make venv` installs it (PyMC 6.4's ZarrTrace "
        "needs it beside nutpie's zarr 3)")
    root = Path(__file__).resolve().parents[2]
    # zarr 3's pytest plugin would not load beside zarr 2: no plugins but the test's own
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": os.pathsep.join(
        [str(ZARR_2), str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           nodeid], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-2000:]


@pytest.fixture
def trusted_pickles(monkeypatch):
    """PyMC 6.4's ZarrTrace keeps each chain's sampling state as a pickled object, and
    numcodecs >= 0.15.2 refuses to unpickle unless told the data is trusted (it is ours)."""
    import numcodecs.pickles

    monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`return_inferencedata=False` is deprecated:FutureWarning")
@pytest.mark.parametrize("make_step", [
    lambda x: pmd.ALBP([x]),
    lambda x: pmd.ARWM([x]),
    lambda x: pmd.PAS([x]),
], ids=["albp", "arwm", "pas"])
def test_a_zarr_trace_run_resumes_with_its_frozen_scale(chain_model, trusted_pickles,
                                                        make_step, request):
    """Tune and sample into a ZarrTrace; a new step given the state it stored continues
    without tuning at the scale the first run froze, the same with one core or two.

    PyMC 6.4's ZarrTrace needs zarr 2, and the nutpie that PyMC 6.4 accepts (>= 0.16.10)
    needs zarr >= 3.1, so the two cannot share an environment: where zarr 3 is
    installed, the test runs in a process that finds zarr 2 first (``make`` installs it
    into ``.venv/zarr2``)."""
    from pymc.backends import zarr as pymc_zarr

    if not pymc_zarr._zarr_available:
        _in_a_process_with_zarr_2(request.node.nodeid)
        return
    from pymc.backends.zarr import ZarrTrace

    with chain_model:
        step = make_step(chain_model["x"])
        trace = ZarrTrace()
        # PyMC 6.4's ZarrTrace -> InferenceData conversion fails with the installed
        # xarray/zarr 2 pair; the trace itself (draws and states) is what is resumed
        pm.sample(step=step, draws=60, tune=150, chains=2, cores=1, random_seed=11,
                  progressbar=False, trace=trace, return_inferencedata=False,
                  compute_convergence_checks=False)
    states = trace._sampling_state.sampling_state[:]
    frozen = [state._tuner["scale"] for state in states]
    assert all(not state._tuner["tuning"] for state in states)
    assert frozen[0] != step.adapter.initial_scale
    last = np.asarray(trace.posterior["x"][0, -1])
    resumed = {}
    for cores in (1, 2):
        with chain_model:
            step = make_step(chain_model["x"])
            assert step.scale == step.adapter.initial_scale
            step.resume(states[0])
            resumed[cores] = pm.sample(step=step, draws=40, tune=0, chains=1, cores=cores,
                                       random_seed=12, initvals={"x": last},
                                       progressbar=False, compute_convergence_checks=False)
        np.testing.assert_array_equal(resumed[cores].sample_stats["scaling"].values, frozen[0])
    np.testing.assert_array_equal(resumed[1].posterior["x"].values,
                                  resumed[2].posterior["x"].values)
