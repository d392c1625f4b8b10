"""The trace a registered ``pm.sample`` records with: PyMC's ``NDArray`` backend, its
traced values computed without one function of every variable, the same draws, dtypes
and layout as PyMC's own trace, chain by chain."""

from __future__ import annotations

import copy

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.backends.ndarray import NDArray

from pymc_discrete.pymc.choosing import scalar_trace, summed_route
from pymc_discrete.pymc.choosing.scalar_trace import TracedValues, with_recording_trace
from tests.pymc.per_variable import per_variable


def _model() -> pm.Model:
    """Scalar sites, a transformed scale, Deterministics of sites and parameters."""
    with pm.Model(coords={"k": range(3)}) as model:
        mu = pm.Normal("mu", [-1.0, 0.0, 1.0], 1.0, dims="k")
        sigma = pm.HalfNormal("sigma", 1.0)
        sites = [pm.Categorical(f"z_{t}", np.ones(3) / 3) for t in range(5)]
        for t, z in enumerate(sites):
            pm.Normal(f"y_{t}", mu[z], sigma, observed=0.3 * t)
        pm.Deterministic("occupied", pt.stack(sites).sum())
        pm.Deterministic("spread", sigma * 2.0)
    return model


@pytest.mark.parametrize("order", ["pymc", "reversed", "values only"])
def test_traced_values_are_pymcs(order):
    """PyMC's order (the values a slice of the arguments), another order and the value
    variables alone (picked one by one) give what PyMC's trace function gives."""
    model = _model()
    traced = {"pymc": model.unobserved_value_vars,
              "reversed": model.unobserved_value_vars[::-1],
              "values only": model.value_vars}[order]
    ours = TracedValues(model, traced)
    assert (ours._leading is not None) == (order != "reversed")
    pymcs = model.compile_fn(traced, inputs=model.value_vars, point_fn=False,
                             on_unused_input="ignore")
    rng = np.random.default_rng(1)
    start = model.initial_point()
    for _ in range(3):
        point = {name: np.asarray(rng.integers(0, 3) if name.startswith("z_")
                                  else rng.normal(size=np.shape(value)), dtype=value.dtype)
                 for name, value in start.items()}
        by_position = ours(*point.values())
        by_name = ours(**point)
        for got, named, expected in zip(by_position, by_name, pymcs(*point.values()),
                                        strict=True):
            assert np.asarray(got).dtype == np.asarray(expected).dtype
            np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(named, expected)


def test_a_registered_run_records_what_pymcs_trace_records(registered, monkeypatch):
    """Two chains, warm-up kept: the same draws of every variable and Deterministic as
    with PyMC's own trace, and the same groups, variables and dtypes."""

    def run():
        with _model():
            return pm.sample(draws=30, tune=20, chains=2, cores=1, random_seed=4,
                             discard_tuned_samples=False, progressbar=False,
                             compute_convergence_checks=False)

    ours = run()
    monkeypatch.setattr(summed_route, "with_recording_trace", lambda model, kwargs: kwargs)
    pymcs = run()
    assert set(ours.children) == set(pymcs.children)
    for group in ("posterior", "warmup_posterior"):
        assert set(ours[group].data_vars) == set(pymcs[group].data_vars)
        for name in pymcs[group].data_vars:
            assert ours[group][name].dtype == pymcs[group][name].dtype
            np.testing.assert_array_equal(ours[group][name].values,
                                          pymcs[group][name].values)
    assert not np.array_equal(ours.posterior["mu"].values[0], ours.posterior["mu"].values[1])


def test_the_trace_is_left_to_pymc_where_its_rule_reads_it():
    """An all-continuous model (PyMC picks nutpie only without a trace), a trace or
    var_names given, an external NUTS: the arguments are left as they are."""
    with pm.Model() as continuous:
        pm.Normal("x")
    assert "trace" not in with_recording_trace(continuous, {})
    model = per_variable("hmm", 4)
    assert isinstance(with_recording_trace(model, {})["trace"], scalar_trace.ChainTraces)
    for given in ({"var_names": ["mu"]}, {"nuts_sampler": "nutpie"}, {"trace": "x"}):
        assert with_recording_trace(model, given) == given


def test_scalar_variables_recorded_a_row_at_a_time_hold_pymcs_values():
    """The scalar variables of one dtype are the columns of one array, written a row a
    draw: every variable's draws and dtype equal those of PyMC's ``NDArray`` given the
    same points, through a second set-up (PyMC's concatenation, its own recording)."""
    model = _model()
    ours = copy.copy(scalar_trace.recording_trace(model))
    pymcs = NDArray(model=model, vars=model.unobserved_value_vars)
    rng = np.random.default_rng(2)
    start = model.initial_point()

    def points(n):
        for _ in range(n):
            yield {name: np.asarray(rng.integers(0, 3) if name.startswith("z_")
                                    else rng.normal(size=np.shape(value)), dtype=value.dtype)
                   for name, value in start.items()}

    for draws in (4, 3):  # the second set-up appends to the first chain's arrays
        ours.setup(draws, chain=0)
        pymcs.setup(draws, chain=0)
        assert (ours._rows is not None) == (draws == 4)
        if ours._rows is not None:
            assert sorted(block.dtype.name for block, _ in ours._rows) == ["float64", "int64"]
        for point in points(draws):
            ours.record(point, in_warmup=False)
            pymcs.record(point, in_warmup=False)
        for name in pymcs.varnames:
            expected = pymcs.get_values(name)
            assert ours.get_values(name).dtype == expected.dtype
            np.testing.assert_array_equal(ours.get_values(name), expected)
    assert len(ours) == len(pymcs) == 7
