"""The compiled PAS/PAFS loop: the same chain as pafs_step and pas_step with the same
generator, step for step and bit for bit, on binary and categorical targets (impossible
moves and states included), and the generator left where the Python steps leave it."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_discrete.kernels import init_path_state, pafs_step, pas_step, weight_code
from pymc_discrete.kernels.pas_loop import (
    init_compiled_path_state,
    pas_steps,
    specialise_pas_loop,
)
from tests.compiled_targets import make_categorical_target, make_target

CASES = {  # name -> (make the target, start)
    "quadratic6": (lambda: make_target("quadratic", 6, 1), [0, 1, 1, 0, 1, 0]),
    "gaussian6": (lambda: make_target("gaussian", 6, 3), [1, 0, 0, 1, 1, 0]),
    # site 0 pinned at 0 and the all-ones state forbidden: impossible moves and proposals
    "forbidden5": (lambda: make_target("forbidden", 5, 4), [0, 1, 1, 1, 0]),
    # 3 values, value 2 of site 0 impossible: the general (N, K) walk
    "potts5x3": (lambda: make_categorical_target(5, 3, seed=2), [0, 2, 1, 1, 0]),
    # a categorical table of two values (site 0 pinned): the binary walk on a table
    "potts4x2": (lambda: make_categorical_target(4, 2, seed=5), [0, 1, 1, 0]),
}
_BUILT: dict = {}


def _case(name):
    if name not in _BUILT:
        make, x0 = CASES[name]
        target, extra, numpy_target = make()
        _BUILT[name] = (target, extra, numpy_target, specialise_pas_loop(target),
                        np.array(x0, dtype=np.int64))
    return _BUILT[name]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("linearised", [True, False], ids=["pafs", "pas"])
@pytest.mark.parametrize("weight,scale", [("sqrt", 1.5), ("barker", 3.3)])
def test_loop_follows_the_python_steps_exactly(name, linearised, weight, scale):
    """300 steps in one loop = 300 calls of pafs_step / pas_step with the same generator:
    same points, log densities, potentials, weights and step records, bit for bit, and
    the generator in the same state afterwards."""
    target, extra, numpy_target, loop, x0 = _case(name)
    code = weight_code(weight)
    state = init_compiled_path_state(x0, target, extra, code)
    reference = init_path_state(x0, numpy_target, code)
    np.testing.assert_array_equal(state.site_weights, reference.site_weights)

    rng = np.random.default_rng(5)
    looped, info = pas_steps(state, scale, rng, 300, loop, extra, code, linearised)
    rng_reference = np.random.default_rng(5)
    step = pafs_step if linearised else pas_step
    steps = []
    for _ in range(300):
        reference, record = step(reference, scale, rng_reference, numpy_target, code)
        steps.append(record)
    np.testing.assert_array_equal(looped.x, reference.x)
    assert looped.logp == reference.logp
    np.testing.assert_array_equal(looped.potentials, reference.potentials)
    np.testing.assert_array_equal(looped.site_weights, reference.site_weights)
    assert looped.log_scale == reference.log_scale
    for field in ("accept_prob", "accepted", "n_proposed", "distance"):
        np.testing.assert_array_equal(getattr(info, field),
                                      [getattr(s, field) for s in steps], err_msg=field)
    assert rng.integers(0, 2**62) == rng_reference.integers(0, 2**62)  # same place
    assert 0 < info.accepted.sum() < 300


def test_loop_of_zero_steps_and_bad_generator():
    target, extra, _, loop, x0 = _case("quadratic6")
    state = init_compiled_path_state(x0, target, extra, 1)
    rng = np.random.default_rng(0)
    same, info = pas_steps(state, 2.0, rng, 0, loop, extra, 1, True)
    np.testing.assert_array_equal(same.x, state.x)
    assert info.accept_prob.size == 0
    assert rng.random() == np.random.default_rng(0).random()  # nothing drawn
    with pytest.raises(TypeError, match="Generator"):
        pas_steps(state, 2.0, np.random.RandomState(0), 1, loop, extra, 1, True)
    with pytest.raises(ValueError, match="n_steps"):
        pas_steps(state, 2.0, rng, -1, loop, extra, 1, True)
