"""The compiled ALBP loop: the same chain as albp_step, step for step, and its one- and
several-step transition probabilities against the exact matrices."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from pymc_discrete.kernels import albp_step, init_lb_state, weight_code
from pymc_discrete.kernels.albp_loop import (
    albp_steps,
    first_class_albp_loop,
    init_compiled_lb_state,
    specialise_albp_categorical_loop,
    specialise_albp_loop,
)
from pymc_discrete.kernels.first_class import FirstClassTarget
from tests.compiled_targets import make_categorical_target, make_target, potts_table, quadratic
from tests.exact import albp_matrix, assert_frequencies_match, mixture_matrix, state_index

CASES = {  # name -> (target kind, sites, seed, start)
    "quadratic6": ("quadratic", 6, 1, [0, 1, 1, 0, 1, 0]),
    "gaussian6": ("gaussian", 6, 3, [1, 0, 0, 1, 1, 0]),
    "forbidden5": ("forbidden", 5, 4, [0, 1, 1, 1, 0]),
}
_LOOPS: dict = {}


def _case(name):
    kind, n, seed, x0 = CASES[name]
    target, extra, numpy_target = make_target(kind, n, seed)
    if target not in _LOOPS:
        _LOOPS[target] = specialise_albp_loop(target)
    return _LOOPS[target], extra, numpy_target, np.array(x0, dtype=np.int64), target


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("weight", ["barker", "sqrt"])
@pytest.mark.parametrize("scale", [1.0, 2.6, 6.0])
def test_loop_follows_albp_step_exactly(name, weight, scale):
    """400 steps in one loop = 400 calls of albp_step with the same generator: same
    points, log densities, weights and step records, bit for bit (scale 6 on the pinned
    target asks for more movable sites than exist: empty proposals)."""
    loop, extra, numpy_target, x0, target = _case(name)
    code = weight_code(weight)
    state = init_compiled_lb_state(x0, target, extra, code)
    reference = init_lb_state(x0, numpy_target, code)
    np.testing.assert_array_equal(state.weights, reference.weights)

    looped, info = albp_steps(state, scale, np.random.default_rng(5), 400, loop, extra, code)
    rng = np.random.default_rng(5)
    steps = []
    for _ in range(400):
        reference, step = albp_step(reference, scale, rng, numpy_target, code)
        steps.append(step)
    np.testing.assert_array_equal(looped.x, reference.x)
    assert looped.logp == reference.logp
    np.testing.assert_array_equal(looped.weights, reference.weights)
    assert looped.log_scale == reference.log_scale
    np.testing.assert_array_equal(info.accept_prob, [s.accept_prob for s in steps])
    np.testing.assert_array_equal(info.accepted, [s.accepted for s in steps])
    np.testing.assert_array_equal(info.n_proposed, [s.n_proposed for s in steps])
    if name == "forbidden5" and scale == 6.0:
        # only 4 movable sites: a step that draws R = 5 proposes nothing
        assert (info.accept_prob[info.n_proposed == 5] == 0).all()
        assert (info.n_proposed == 5).any()
    else:
        assert 0 < info.accepted.sum() < 400


@pytest.mark.parametrize(
    "name,weight,r,n_steps",
    [("quadratic6", "sqrt", 2, 1), ("gaussian6", "barker", 3, 1), ("gaussian6", "sqrt", 2, 3),
     ("forbidden5", "barker", 2, 3)],
)
@pytest.mark.slow
def test_loop_transition_frequencies_match_the_matrix(name, weight, r, n_steps):
    """From a fixed start, the point after ``n_steps`` looped steps at a fixed R is
    distributed as the start's row of P^n_steps (exact ALBP matrix), within 5 standard
    errors: the loop carries its state from step to step correctly."""
    loop, extra, numpy_target, x0, target = _case(name)
    n = x0.size
    code = weight_code(weight)
    one_step = mixture_matrix(lambda k: albp_matrix(numpy_target, n, k, weight), float(r), n)
    P = np.linalg.matrix_power(one_step, n_steps)
    state = init_compiled_lb_state(x0, target, extra, code)
    rng = np.random.default_rng(r + 10 * n_steps)
    counts = np.zeros(2**n)
    for _ in range(20_000):
        new, _ = albp_steps(state, float(r), rng, n_steps, loop, extra, code)
        counts[state_index(new.x)] += 1
    assert_frequencies_match(counts, P[state_index(x0)])


@pytest.mark.parametrize("weight", ["barker", "sqrt"])
@pytest.mark.parametrize("scale", [1.0, 2.6, 6.0])
def test_categorical_loop_follows_albp_step_exactly(weight, scale):
    """Categorical sites (5 sites, 3 values, one value of site 0 impossible): 400 steps
    in one loop = 400 calls of albp_step with the same generator, bit for bit."""
    target, extra, numpy_target = make_categorical_target(5, 3, seed=2)
    loop = specialise_albp_categorical_loop(target)
    x0 = np.array([0, 2, 1, 1, 0], dtype=np.int64)
    code = weight_code(weight)
    state = init_compiled_lb_state(x0, target, extra, code)
    reference = init_lb_state(x0, numpy_target, code)
    np.testing.assert_array_equal(state.weights, reference.weights)

    looped, info = albp_steps(state, scale, np.random.default_rng(5), 400, loop, extra, code)
    rng = np.random.default_rng(5)
    steps = []
    for _ in range(400):
        reference, step = albp_step(reference, scale, rng, numpy_target, code)
        steps.append(step)
    np.testing.assert_array_equal(looped.x, reference.x)
    assert looped.logp == reference.logp
    np.testing.assert_array_equal(looped.weights, reference.weights)
    np.testing.assert_array_equal(looped.site_weights, reference.site_weights)
    assert looped.log_scale == reference.log_scale
    np.testing.assert_array_equal(info.accept_prob, [s.accept_prob for s in steps])
    np.testing.assert_array_equal(info.accepted, [s.accepted for s in steps])
    np.testing.assert_array_equal(info.n_proposed, [s.n_proposed for s in steps])
    assert 0 < info.accepted.sum() < 400
    assert not (looped.x[0] == 2)  # the impossible value


@numba.njit
def _packed_quadratic(*args):
    """The quadratic target with every argument star-args, as PyTensor's NUMBA-mode
    functions take theirs (what :class:`FirstClassTarget` calls)."""
    x, h, J = args
    return quadratic(x, h, J)


@numba.njit
def _packed_potts(*args):
    x, h, J = args
    return potts_table(x, h, J)


@pytest.mark.parametrize("categorical", [False, True])
def test_first_class_loop_gives_the_specialised_loops_chain(categorical):
    """The loop that calls the target through a pointer (cached on disk) and the loop
    with the target built in: the same points, log densities and step records."""
    if categorical:
        _, extra, _ = make_categorical_target(5, 3, 2)
        target, specialise = _packed_potts, specialise_albp_categorical_loop
        x0 = np.array([0, 2, 1, 1, 0], dtype=np.int64)
    else:
        _, extra, _ = make_target("quadratic", 6, 1)
        target, specialise = _packed_quadratic, specialise_albp_loop
        x0 = np.array([0, 1, 1, 0, 1, 0], dtype=np.int64)
    code = weight_code("sqrt")
    state = init_compiled_lb_state(x0, target, extra, code)
    runs = []
    for loop in (first_class_albp_loop(target, x0, extra, categorical), specialise(target)):
        runs.append(albp_steps(state, 2.3, np.random.default_rng(9), 300, loop, extra, code))
    (a, info_a), (b, info_b) = runs
    np.testing.assert_array_equal(a.x, b.x)
    assert a.logp == b.logp
    np.testing.assert_array_equal(info_a.accept_prob, info_b.accept_prob)
    np.testing.assert_array_equal(info_a.n_proposed, info_b.n_proposed)
    assert 0 < info_a.accepted.sum() < 300


def test_first_class_target_refuses_a_target_with_positional_arguments():
    _, extra, _ = make_target("quadratic", 6, 1)
    with pytest.raises(RuntimeError, match="no compiled signature"):
        FirstClassTarget(quadratic, np.zeros(6), extra)


_CACHE_SCRIPT = """
import numpy as np, pymc as pm, pymc_discrete as pmd
from pymc_discrete.kernels import albp_loop
with pm.Model() as model:
    x = pm.Bernoulli("x", 0.4, shape=7)
    pm.Potential("pair", 0.8 * (x[1:] * x[:-1]).sum())
    step = pmd.ALBP([x], compiled_loop=True, proposal="gradient", steps_per_draw=2)
    pm.sample(draws=20, tune=10, chains=1, step=step, random_seed=1, progressbar=False,
              compute_convergence_checks=False)
stats = albp_loop._albp_loop_cached.stats
print("hits", sum(stats.cache_hits.values()), "misses", sum(stats.cache_misses.values()))
"""


def test_the_compiled_loop_is_loaded_from_the_disk_cache_in_a_new_process():
    """The loop is compiled at most once per machine and argument types: a second
    process loads it (numba's cache hit) instead of compiling it."""
    import subprocess
    import sys

    outputs = [subprocess.run([sys.executable, "-c", _CACHE_SCRIPT], capture_output=True,
                              text=True, check=True, timeout=600).stdout
               for _ in range(2)]
    last = outputs[1].strip().splitlines()[-1]
    assert last == "hits 1 misses 0", outputs
