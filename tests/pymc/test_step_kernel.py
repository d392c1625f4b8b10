"""Every site step exposes its algorithm as one record (``step.kernel``), built when the
step is built: ``run`` is the same chain as repeated ``step`` calls with one generator,
and a step that changes algorithm builds a new record."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_discrete as pmd
from pymc_discrete.pymc.steps.step_kernel import StepKernel


def _coupled_model() -> pm.Model:
    with pm.Model() as model:
        x = pm.Bernoulli("x", np.array([0.3, 0.5, 0.6, 0.7, 0.4, 0.2]), shape=6)
        pm.Potential("pairs", 0.8 * (x[:-1] * x[1:]).sum())
    return model


STEPS = {
    "albp": lambda model: pmd.ALBP([model["x"]], model=model),
    "albp-exact": lambda model: pmd.ALBP([model["x"]], model=model, proposal="exact"),
    "arwm": lambda model: pmd.ARWM([model["x"]], model=model),
    "pas": lambda model: pmd.PAS([model["x"]], model=model),
    "gibbs": lambda model: pmd.BlockedGibbs([model["x"]], model=model),
    "joint": lambda model: pmd.JointGibbs([model["x"]], model=model),
}


@pytest.mark.parametrize("name", sorted(STEPS))
def test_run_is_the_chain_of_repeated_steps(name):
    model = _coupled_model()
    step = STEPS[name](model)
    kernel = step.kernel
    assert isinstance(kernel, StepKernel)
    x = np.zeros(6, dtype=np.int64)
    scale = float(step.scale)
    state, info = kernel.run(kernel.init(x), scale, 5, np.random.default_rng(3))
    assert len(info.accept_prob) == 5
    rng = np.random.default_rng(3)
    stepped = kernel.init(x)
    for _ in range(5):
        stepped, _ = kernel.step(stepped, scale, rng)
    np.testing.assert_array_equal(state.x, stepped.x)
    assert state.logp == stepped.logp


def test_public_views_of_the_step():
    model = _coupled_model()
    gibbs = pmd.BlockedGibbs([model["x"]], model=model, sweeps_per_draw=2)
    assert gibbs.kernel.proposal == "conditionals"
    assert gibbs.exact_ratios is gibbs.kernel.target
    assert gibbs.exact_ratios.structure.n_colours == 2
    assert gibbs.draw_steps == 2
    arwm = pmd.ARWM([model["x"]], model=model)
    assert arwm.exact_ratios is None and arwm.kernel.proposal == "random walk"
    # nothing tunes a Gibbs step's scale: no target, no tuner to carry
    assert gibbs.target_accept is None and not gibbs.adapter.adapt


def test_a_switch_to_exact_ratios_builds_a_new_kernel():
    model = _coupled_model()
    step = pmd.ALBP([model["x"]], model=model, proposal="gradient")
    before = step.kernel
    assert before.proposal == "gradient"
    step._use_exact_ratios(None)
    assert step.kernel is not before
    assert step.kernel.proposal == "exact" and step.kernel.target is step.exact_ratios
    step._switched_to_exact = False  # a restored state of a chain that did not switch
    assert step.kernel.proposal == "gradient" and step.kernel.target is before.target
