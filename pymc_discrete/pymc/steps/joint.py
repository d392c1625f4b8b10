"""JointGibbs: a small block drawn exactly from its joint conditional, as a PyMC step
method.

The mathematics (enumeration, the draw) is in :mod:`pymc_discrete.kernels.joint`; this
module evaluates the model's terms that depend on the block at every joint state, in one
batched call of :class:`~pymc_discrete.pymc.model.exact.ExactRatios`, with the other variables
at their current values.
"""

from __future__ import annotations

import numpy as np
from pymc.step_methods.compound import Competence

from pymc_discrete.kernels.joint import (
    JOINT_MAX_STATES,
    JointState,
    count_joint_states,
    describe_count,
    init_joint_state,
    joint_gibbs_step,
)
from pymc_discrete.kernels.joint import joint_states as enumerate_joint_states
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.steps.block_step import SiteBlockStep
from pymc_discrete.pymc.steps.step_kernel import StepKernel, python_run

__all__ = ["JOINT_MAX_STATES", "JointGibbs"]


class JointGibbs(SiteBlockStep):
    """Exact draws of a small block of discrete variables from their joint conditional.

    At construction every joint state of the block is listed (the product of the sites'
    numbers of values, at most :data:`~pymc_discrete.kernels.joint.JOINT_MAX_STATES`).
    Each draw evaluates the terms of the log density that depend on the block at all of
    them, in one batched evaluation with the other variables at their current values
    (they change between draws when NUTS samples them), and draws the new joint state
    from the normalised conditional. The draw does not depend on the current state: the
    chain jumps between any two states of positive probability in one step, however
    improbable the states between them. Single-site moves (and the colour classes of
    :class:`~pymc_discrete.BlockedGibbs`) must pass through those states: explaining-away
    structures, where two causes of one observed effect each explain it alone but rarely
    occur together, leave them stuck in one explanation. Where nothing outside the block
    changes between draws, the conditional is evaluated once and every draw reuses it.

    States whose log density is -inf or NaN (a parameter check that fails, an impossible
    observation) have probability zero.

    Parameters
    ----------
    vars : list of random variables, optional
        Bernoulli, Categorical and finite integer variables (DiscreteUniform, Binomial,
        BetaBinomial) to sample as one block (default: all free variables of those
        kinds).
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        Passed by ``pm.sample`` when it builds the step itself.
    exact_ratios : ExactRatios, optional
        The block's terms, already compiled (by :func:`~pymc_discrete.recommend`): the
        step then reads the model's other variables through its shared variables.

    Attributes
    ----------
    n_joint_states : int
        Number of joint states of the block (evaluated at every draw).
    joint_states : ndarray of int64, shape (n_joint_states, n_sites)
        The block's joint states as values of its sites, raveled and concatenated in
        block order, in the order of ``itertools.product`` (the last site fastest).

    Raises
    ------
    ValueError
        At construction, if the block has more than
        :data:`~pymc_discrete.kernels.joint.JOINT_MAX_STATES` joint states; at a draw,
        if no joint state has positive probability given the other variables (or one
        has log density +inf).

    Notes
    -----
    Sampler statistics per draw, as for the other steps: ``accept`` and ``accepted``
    (1: the draw is exact), ``scaling`` (the number of joint states), ``n_proposed`` and
    ``jump_distance`` (sites changed by the draw), ``steps_per_draw`` (1).
    Every step also reports ``target_accept`` (NaN: nothing is tuned) and, for PyMC's
    progress bar, ``mean_accept`` and ``mean_jump`` (running means over the draws of the
    phase, tuning then sampling) and ``stalled`` (consecutive draws that left the block
    unchanged; the bar turns red at 100, which for this step means that the conditional
    is concentrated on one state).

    Examples
    --------
    Rain or the sprinkler wets the grass; given wet grass, both together are unlikely.

    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model() as model:
    ...     rain = pm.Bernoulli("rain", 0.2)
    ...     sprinkler = pm.Bernoulli("sprinkler", pm.math.switch(rain, 0.01, 0.4))
    ...     p_wet = pm.math.switch(rain, pm.math.switch(sprinkler, 0.99, 0.8),
    ...                            pm.math.switch(sprinkler, 0.9, 0.0))
    ...     wet = pm.Bernoulli("wet", p_wet, observed=1)
    ...     step = pmd.JointGibbs([rain, sprinkler])
    >>> step.n_joint_states
    4
    >>> with model:
    ...     idata = pm.sample(step=step, progressbar=False)  # doctest: +SKIP
    """

    name = "joint_gibbs"
    # the draw does not depend on the current state, so the chain may start anywhere (the
    # model's initial point may be impossible, as no rain and no sprinkler is given wet
    # grass); only a conditional without any possible state is an error (_init_state)
    _refuses_impossible_start = False
    _competence_level = Competence.COMPATIBLE  # register() chooses it by structure
    _scale_parameter = "n_joint_states"
    _scale_bounds_reason = "the number of joint states is fixed by the block"

    def __init__(
        self,
        vars=None,
        *,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
        exact_ratios: ExactRatios | None = None,
    ) -> None:
        self._prebuilt = exact_ratios
        super().__init__(
            vars,
            target_accept=None,  # nothing is tuned: the scale is the number of states
            initial_scale=None,
            adapt=False,
            # every draw is already independent of the last: a second one in the same
            # draw would only cost another evaluation when the others have changed
            steps_per_draw=1,
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
            shared=None if exact_ratios is None else exact_ratios.shared,
        )

    def _build_proposal(self, compile_kwargs: dict | None) -> None:
        # refused before anything is compiled
        self.n_joint_states = count_joint_states(self.n_categories)
        if self.n_joint_states > JOINT_MAX_STATES:
            raise ValueError(self._too_many_states_message())
        self._states = enumerate_joint_states(self.n_categories)
        # an empty block has no terms to evaluate
        exact = (self._block_exact_ratios(compile_kwargs)
                 if self._prebuilt is not None or self.n_sites else None)
        self._exact = exact

    def _too_many_states_message(self) -> str:
        parts, start = [], 0
        for name, shape in zip(self.var_names, self.shapes):
            size = int(np.prod(shape, dtype=int))
            count = count_joint_states(self.n_categories[start : start + size])
            parts.append(f"{name}: {describe_count(count)}")
            start += size
        return (
            f"JointGibbs draws its block from the joint conditional by evaluating the log "
            f"density at every joint state, and the block {list(self.var_names)} has "
            f"{describe_count(self.n_joint_states)} joint states ({', '.join(parts)}), more "
            f"than JOINT_MAX_STATES = {JOINT_MAX_STATES:,}. Give JointGibbs a smaller block "
            "(the few strongly coupled variables) and the rest to another step, or sample "
            "this block with BlockedGibbs or ALBP."
        )

    @property
    def joint_states(self) -> np.ndarray:
        """The block's joint states as values (site index plus offset), one per row."""
        return self._states + self.offsets

    def _resolve_initial_scale(self, initial_scale) -> float:
        return float(self.n_joint_states)

    def _max_scale(self, n_sites: int) -> float:
        return float(max(1, getattr(self, "n_joint_states", 1)))

    def _state_logps(self) -> np.ndarray:
        """The log density (the block's terms) at every joint state, the other
        variables at their current values: one batched evaluation."""
        return self._exact.batch_terms(self._states).sum(axis=1)

    def _init_state(self, x: np.ndarray) -> JointState:
        """The joint conditional at the other variables' current values, refused when it
        has no state of positive probability or an improper one."""
        logps = self._state_logps()
        given = (f" given the current values of the other variables "
                 f"({', '.join(self.shared)})" if self.shared else "")
        if np.any(logps == np.inf):
            state = self._states[int(np.flatnonzero(logps == np.inf)[0])] + self.offsets
            raise ValueError(
                f"JointGibbs on {list(self.var_names)}: the log density is +inf at the joint "
                f"state {state.tolist()}{given}: the conditional is improper"
            )
        if not np.any(logps > -np.inf):  # -inf or NaN everywhere
            raise ValueError(
                f"JointGibbs on {list(self.var_names)}: every one of the "
                f"{self.n_joint_states} joint states has log density -inf or NaN{given}, "
                "so the conditional has no state of positive probability. The model gives "
                "these values zero probability whatever the block's state: check the "
                "model, or start from other values (pm.sample(initvals=...))"
            )
        return init_joint_state(x, logps, self.n_categories)

    def _make_kernel(self) -> StepKernel:
        """An exact draw from the joint conditional: every joint state evaluated in one
        batched call (reused while the other variables stay put)."""
        states = self._states

        def step(state, scale, rng):
            return joint_gibbs_step(state, rng, states)

        return StepKernel("joint", self._exact, self._init_state, step, python_run(step))

    @property
    def exact_ratios(self) -> ExactRatios | None:
        """The block's batched terms (None for an empty block)."""
        return self._exact

    def _stuck(self) -> bool:
        # exact draws that never change the block say the conditional is concentrated on
        # one state, not that the sampler failed
        return False

    def _stall_warning(self, moved: bool, state) -> None:
        # a run of draws that repeat one state is the conditional's own weight on that
        # state (exact, independent draws): nothing failed to move, nothing to report
        return None
