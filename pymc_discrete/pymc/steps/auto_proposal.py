"""``proposal="auto"``: one policy for ALBP and PAS, gradient or exact local ratios.

:func:`choose_proposal` decides, once, at construction, after the gradient of the
relaxation compiled:

1. A gradient whose single-site ratios are exact for the model (checked against
   single-site moves) is kept by ALBP at once: it costs one call per step. PAS still
   weighs it, since a linearised path uses the expansion at its start for every move.
2. Otherwise the exact ratios are compiled and the gradient is refused, without any trial,
   when its proposal would practically never offer a move the target allows, at states
   drawn from the exact conditionals (:func:`exact_trial_starts`,
   :mod:`~pymc_discrete.pymc.steps.reachability`): this depends on the model alone (seeded
   draws, no timings), while a mean acceptance can look good with a few sites frozen.
3. Otherwise short trials of both kernels decide by the step's own criterion: ALBP by
   acceptance per unit of cost (:func:`acceptance_per_cost`), PAS by expected jump per
   unit of cost (:func:`jump_per_cost`), each in the setting of the other variables
   (initial, or moved around it) where the gradient does worse.

Nothing is timed: the trials run on seeded generators and their cost is counted in
evaluations of the model (:mod:`~pymc_discrete.pymc.model.step_cost`), so the same model and
step give the same choice, and the same seed the same chain, in any process and under
any load.
"""

from __future__ import annotations

import numpy as np

from pymc_discrete.kernels.gibbs import GibbsState, blocked_gibbs_sweep
from pymc_discrete.kernels.weights import log_g
from pymc_discrete.pymc.model.step_cost import GRADIENT_CALL, STEP_OVERHEAD, CountedCalls
from pymc_discrete.pymc.steps.reachability import move_log_probabilities, underweighted_moves

__all__ = [
    "AUTO_REACHABILITY_SWEEPS",
    "AUTO_TRIAL_PATH_LENGTH",
    "AUTO_TRIAL_STEPS",
    "acceptance_per_cost",
    "choose_proposal",
    "exact_trial_starts",
    "jump_per_cost",
]

#: Metropolis-Hastings steps of each proposal in a trial
AUTO_TRIAL_STEPS = 25
#: sweeps of the exact conditionals run on from each trial start, comparing the
#: gradient's proposal with the exact one move by move at the start and after every
#: sweep (the states a chain visits, not only the start)
AUTO_REACHABILITY_SWEEPS = 4
#: mean path length X of PAS's trials: long enough that the paths differ from single
#: moves (at X = 1.5 most paths are one move long)
AUTO_TRIAL_PATH_LENGTH = 4.0

#: why a gradient with exact single-site ratios is kept by ALBP
EXACT_GRADIENT_REASON = (
    "the relaxation's gradient gives the exact local ratios for this model (checked "
    "against single-site moves), at one logp+gradient call per draw"
)


def choose_proposal(step) -> None:
    """Settle ``proposal="auto"`` on an :class:`~pymc_discrete.pymc.steps.informed_step.InformedStep`
    whose gradient compiled: set its ratio source, ``proposal`` and ``proposal_reason``
    (module docstring).

    Parameters
    ----------
    step : InformedStep
        The step being built (its ``_logp_and_ratios`` is the gradient's source); its
        ``_auto_criterion`` is :func:`acceptance_per_cost` or :func:`jump_per_cost`.
    """
    gradient = step._logp_and_ratios
    x0 = step._sites_of(step._initial_point)
    if step.ratios_are_exact and not step._trial_exact_gradient:
        step.proposal_reason = EXACT_GRADIENT_REASON
        return
    if step.ratios_are_exact:
        exact, starts, settings = gradient, None, None
    else:
        step._compile_exact_ratios()
        exact = step._logp_and_ratios  # their compiled target with a compiled loop
        starts, settings, refusal = exact_trial_starts(step, x0, gradient)
        if refusal is not None:
            _use(step, exact, "exact", refusal)
            return
    keep, summary = step._auto_criterion(step, gradient, exact, x0, starts, settings)
    if keep:
        _use(step, gradient, "gradient", f"{summary}: the gradient is kept")
    else:
        _use(step, exact, "exact", f"{summary}: exact ratios are used")
        if exact is gradient:  # PAS: exact ratios evaluated by the gradient along the path
            step._exact_from_gradient = True


def _use(step, source, proposal: str, reason: str) -> None:
    step._logp_and_ratios = source
    step.proposal = proposal
    step.proposal_reason = reason
    if proposal == "exact":
        step.ratios_are_exact = True


# ---- criteria of the trials -------------------------------------------------------------
def acceptance_per_cost(step, gradient, exact, x0, starts, settings) -> tuple[bool, str]:
    """ALBP's criterion: both kernels run :data:`AUTO_TRIAL_STEPS` steps at the smallest
    scale from each start (a draw of the exact conditionals: the initial point itself is
    rarely typical), with the other variables as they were drawn. A step's cost is
    counted (:mod:`~pymc_discrete.pymc.model.step_cost`): its overhead and one call of its
    ratio source, a gradient call or a batch of the exact ratios' rows. The gradient is
    kept when its mean acceptance per unit of cost is at least the exact proposal's."""
    trials = []
    try:
        for start, values in zip(starts, settings):
            put_other_variables(step, values)
            trials.append((trial_acceptance(step, gradient, "gradient", start),
                           trial_acceptance(step, exact, "exact", start)))
    finally:
        put_other_variables(step, None)
    cost = ((STEP_OVERHEAD + _call_evaluations(step, exact, gradient))
            / (STEP_OVERHEAD + GRADIENT_CALL))
    # the setting where the gradient does worst against exact ratios decides
    accept_gradient, accept_exact = min(trials, key=lambda t: t[0] * cost - t[1])
    summary = (
        f"in {AUTO_TRIAL_STEPS} trial steps the gradient proposal accepted "
        f"{accept_gradient:.2f} on average and the exact one {accept_exact:.2f} (the "
        "worse of the initial and perturbed continuous values), and a step with exact "
        f"ratios costs {cost:.1f} gradient steps (counted evaluations)"
    )
    return accept_gradient * cost >= accept_exact, summary


def jump_per_cost(step, gradient, exact, x0, starts, settings) -> tuple[bool, str]:
    """PAS's criterion: both kernels run :data:`AUTO_TRIAL_STEPS` steps at X =
    :data:`AUTO_TRIAL_PATH_LENGTH` (within both proposals' bounds), with the other
    variables at their initial values and again moved around them, from the exact
    conditionals' draws where the exact ratios were compiled; the expected jump
    (acceptance probability x sites changed) per counted evaluation decides
    (:mod:`~pymc_discrete.pymc.model.step_cost`: each step's overhead, its calls of the ratio
    source as made, and the linearised walk's moves). Where the gradient's single-site
    ratios are exact, the exact proposal evaluates the gradient at every point of the
    path (exact there too, and cheaper than the model's batched terms)."""
    scale = min(AUTO_TRIAL_PATH_LENGTH, step._max_scale(step.n_sites, "exact"),
                step._max_scale(step.n_sites, "gradient"))
    rng = np.random.default_rng(0)
    costs = {"gradient": GRADIENT_CALL, "exact": _call_evaluations(step, exact, gradient)}
    trials = []
    try:
        for k, perturb in enumerate((False, True)):
            set_other_variables(step, perturb, rng)
            start = x0 if starts is None else starts[k]
            trials.append(tuple(trial_jumps(step, source, name, start, scale, costs[name])
                                for source, name in ((gradient, "gradient"), (exact, "exact"))))
    finally:
        set_other_variables(step, False, rng)

    def rate(trial):
        jump, cost = trial
        return jump / cost

    # the setting where the gradient does worst against exact ratios decides
    (jump_g, cost_g), (jump_e, cost_e) = min(trials, key=lambda t: rate(t[0]) - rate(t[1]))
    source = ("the gradient evaluated at every point of the path (its single-site "
              "ratios are exact for this model)" if exact is gradient
              else "the model's exact ratios")
    summary = (
        f"in {AUTO_TRIAL_STEPS} trial steps at X = {scale:g} the gradient "
        f"proposal (PAFS) jumped {jump_g:.2f} sites per step at {cost_g:.1f} evaluations "
        f"a step and exact ratios along the path (PAS, {source}) {jump_e:.2f} at "
        f"{cost_e:.1f} (counted evaluations; the worse of the initial and perturbed "
        "continuous values for the gradient)"
    )
    return rate((jump_g, cost_g)) >= rate((jump_e, cost_e)), summary


def _call_evaluations(step, exact, gradient) -> float:
    """Evaluations of one call of the exact source: a gradient call where the gradient
    serves as exact ratios, else the exact ratios' batch."""
    if exact is gradient:
        return GRADIENT_CALL
    return step._exact_source.evaluations_per_call


def trial_acceptance(step, source, proposal: str, x: np.ndarray) -> float:
    """Mean acceptance probability of a short run of the step's kernel built on the
    ratio source ``source``, at the smallest scale (its own generator: the chain's is
    left untouched)."""
    kernel = step._make_kernel(source, proposal)
    rng = np.random.default_rng(1)
    state = kernel.init(x)
    if not np.isfinite(state.logp):
        return 0.0
    total = 0.0
    for _ in range(AUTO_TRIAL_STEPS):
        state, info = kernel.step(state, step._min_scale(), rng)
        total += info.accept_prob
    return total / AUTO_TRIAL_STEPS


def trial_jumps(step, source, proposal: str, x: np.ndarray, scale: float,
                call_evaluations: float) -> tuple[float, float]:
    """Mean expected jump per step and counted evaluations per step of a short run of
    the step's kernel built on the ratio source ``source`` (one call costing
    ``call_evaluations``), at mean path length ``scale`` (its own generator: the chain's
    is left untouched). A linearised path's walk adds ``step._move_cost`` per move."""
    counted = CountedCalls(source)
    kernel = step._make_kernel(counted, proposal)
    rng = np.random.default_rng(1)
    state = kernel.init(x)
    if not np.isfinite(state.logp):
        return 0.0, 1.0
    counted.calls = 0
    jump, moves = 0.0, 0
    for _ in range(AUTO_TRIAL_STEPS):
        state, info = kernel.step(state, scale, rng)
        jump += info.accept_prob * info.distance
        moves += info.n_proposed
    walk = moves * step._move_cost if proposal == "gradient" else 0.0
    cost = STEP_OVERHEAD * AUTO_TRIAL_STEPS + counted.calls * call_evaluations + walk
    return jump / AUTO_TRIAL_STEPS, cost / AUTO_TRIAL_STEPS


# ---- reachability -----------------------------------------------------------------------
def exact_trial_starts(step, x0: np.ndarray,
                       gradient) -> tuple[list[np.ndarray], list[dict], str | None]:
    """Starts of the trials, the other variables' values they were drawn with, and why
    the gradient must be refused (None: it may be kept).

    A start is one sweep of the exact conditionals from ``x0`` (rarely typical itself),
    with the other variables at their initial values and moved to random values around
    them. In each of these two settings the gradient's proposal is compared with the
    exact one at the start and after each of :data:`AUTO_REACHABILITY_SWEEPS` further
    sweeps (:func:`~pymc_discrete.pymc.steps.reachability.underweighted_moves`): a move the
    target allows that the gradient would offer more than a thousand times less often
    than exact ratios do, at any of these states, refuses the gradient (the chain could
    leave a site at one value for the whole run). Everything is drawn from seeded
    generators: the result depends on the model, not on timings; the further sweeps have
    their own generator, so that the starts are those drawn without the check.
    """
    source = step._exact_source
    sites = source.colour_sites()
    rng = np.random.default_rng(0)
    check_rng = np.random.default_rng(1)
    starts, settings = [], []
    misses: dict[int, tuple] = {}
    n_states = 0
    try:
        for perturb in (False, True):
            set_other_variables(step, perturb, rng)
            settings.append({name: s.get_value() for name, s in step.shared.items()})
            state, _ = blocked_gibbs_sweep(
                GibbsState(x0, 0.0), rng, source.colour_conditionals, sites, exact=True,
            )
            starts.append(state.x)
            for sweep in range(AUTO_REACHABILITY_SWEEPS + 1):
                if sweep:
                    state, _ = blocked_gibbs_sweep(
                        state, check_rng, source.colour_conditionals, sites, exact=True,
                    )
                n_states += _record_underweighted(step, gradient, state.x, misses)
    finally:
        put_other_variables(step, None)
    return starts, settings, _unreachable_reason(step, misses, n_states)


def _record_underweighted(step, gradient, x: np.ndarray, misses: dict) -> int:
    """Compare the gradient's proposal with the exact one at ``x``; record in ``misses``
    (site -> (log-probability gap, value, gradient's log-ratio, exact log-ratio), the
    worst seen) every move the gradient underweights. Returns 1 if the state was
    compared (0 where its log density is not finite)."""
    logp, exact = step._exact_source(x)
    if not np.isfinite(logp):
        return 0
    code = step._code
    estimated = np.asarray(gradient(x)[1], dtype=np.float64).reshape(np.shape(exact))
    exact = np.asarray(exact, dtype=np.float64)
    flagged = underweighted_moves(estimated, exact, code)
    if not flagged.any():
        return 1
    gap = move_log_probabilities(exact, code) - move_log_probabilities(estimated, code)
    for move in zip(*np.nonzero(flagged)):
        site = int(move[0])
        value = int(move[1]) if exact.ndim == 2 else 1 - int(x[site])
        if site not in misses or gap[move] > misses[site][0]:
            misses[site] = (float(gap[move]), value, float(estimated[move]),
                            float(exact[move]))
    return 1


def _unreachable_reason(step, misses: dict, n_states: int) -> str | None:
    """``proposal_reason`` of a gradient refused for the moves in ``misses`` (None if
    there are none), naming the sites."""
    if not misses:
        return None
    worst = sorted(misses, key=lambda i: -misses[i][0])
    shown = ", ".join(_site_name(step, i) for i in sorted(worst[:8]))
    if len(worst) > 8:
        shown += f" and {len(worst) - 8} more"
    gap, value, estimated, exact = misses[worst[0]]
    to = "" if step.is_binary else f" to {value + step.offsets[worst[0]]}"
    how_rarely = (f"proposed {np.exp(gap):.2g} times less often than by exact ratios"
                  if gap < 700.0 else "never proposed")
    # the move's own weight, or its share beside moves whose estimates are far too high
    # (they take the proposal's mass, the more so with sqrt weights): say so when the
    # share loses more than the weight
    own = log_g(exact, step._code) - log_g(estimated, step._code)
    why = (", mostly crowded out by moves whose estimates are far too high"
           if own < gap / 2 else "")
    return (
        f"at {n_states} states drawn from the exact conditionals the gradient's "
        f"proposal would practically never move {shown} (e.g. {_site_name(step, worst[0])}"
        f"{to}: estimated local log-ratio {estimated:.1f}, exact {exact:.1f}, "
        f"{how_rarely}{why}), although the target allows those moves: exact ratios are "
        "used"
    )


def _site_name(step, site: int) -> str:
    """``name[index]`` of a site of the block (raveled index ``site``)."""
    start = 0
    for name, shape in zip(step.var_names, step.shapes):
        size = int(np.prod(shape, dtype=int))
        if site < start + size:
            if not shape:
                return name
            index = np.unravel_index(site - start, shape)
            return f"{name}[{', '.join(str(int(i)) for i in index)}]"
        start += size
    return f"site {site}"


# ---- the other variables during the trials ----------------------------------------------
def set_other_variables(step, perturb: bool, rng: np.random.Generator) -> None:
    """Put the model's other variables at their initial values, or (``perturb``) their
    continuous ones at standard normal offsets from them: initial values are often
    atypical (coefficients at 0, cluster means on top of each other), where a first-order
    estimate can look exact or good."""
    for name, shared in step.shared.items():
        value = np.asarray(step._initial_point[name])
        if perturb and np.issubdtype(value.dtype, np.floating):
            value = value + rng.normal(0.0, 1.0, value.shape).astype(value.dtype)
        shared.set_value(value)


def put_other_variables(step, values: dict | None) -> None:
    """Put the model's other variables at ``values`` (name -> value, as recorded by
    :func:`exact_trial_starts`), or at their initial values (None)."""
    for name, shared in step.shared.items():
        shared.set_value(np.asarray(
            step._initial_point[name] if values is None else values[name]))
