"""SAMCMC: Sample Adaptive MCMC as a PyMC step method for all-continuous models."""

from __future__ import annotations

from dataclasses import field

import numpy as np
from pymc.blocking import RaveledVars, StatsType
from pymc.model import modelcontext
from pymc.pytensorf import compile as compile_pytensor
from pymc.pytensorf import join_nonshared_inputs
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_value_vars_from_user_vars
from rich.progress import TextColumn
from rich.table import Column

from pymc_discrete.pymc.model.validation import check_choice, check_positive_int
from pymc_discrete.pymc.steps.block_step import STALLED_DRAWS_FAILING
from pymc_discrete.samcmc.kernel import (
    COVARIANCES,
    PROPOSALS,
    init_population,
    samcmc_step,
)

__all__ = ["SAMCMC", "SAMCMCState"]


@dataclass_state
class SAMCMCState(StepMethodState):
    """A SAMCMC chain's state as PyMC saves it: the population (None before the first
    draw), the last point reported and its slot."""

    tune: bool
    _population: object
    _last: np.ndarray | None
    _slot: int
    _phase_draws: int
    _phase_accept_sum: float
    _stalled: int
    n_points: int = field(metadata={"frozen": True})
    steps_per_draw: int = field(metadata={"frozen": True})


class SAMCMC(ArrayStepShared):
    """Sample Adaptive MCMC (Zhu, 2019): a tuning-free, gradient-free step method for
    models whose free variables are all continuous.

    The chain's state is a population of N points on PyMC's transformed (unconstrained)
    space. Each iteration proposes a point from a Gaussian or Student-t with the
    population's mean and covariance, evaluates the model once, and substitutes it for at
    most one point, with the probabilities of the paper's Algorithm 1; the population's
    target is the product of N copies of the posterior. Each PyMC draw runs
    ``steps_per_draw`` iterations and reports one point of the population, chosen at
    random. There is no scale to tune: the proposal adapts through the population, and
    PyMC's tune phase serves as burn-in (``tune * steps_per_draw`` iterations).

    SAMCMC must own every free variable of the model and cannot be combined with other
    step methods: another step updating some variables given one reported point would
    change the conditional targets of the other points and break the product target.

    Parameters
    ----------
    vars : list of random variables, optional
        Must be all free variables of the model (the default).
    n_points : int, optional
        Population size N (at least ``d + 2`` for a full covariance, 3 for a diagonal
        one), d being the number of unconstrained dimensions. Default ``max(20, 10 d)``:
        a population much smaller than 10 d estimates the covariance too poorly and the
        acceptance rate collapses. The cost of an iteration is O(N d^2) for a full
        covariance.
    steps_per_draw : int, optional
        Iterations (and log density evaluations) per draw. Default ``N // 5``: enough
        for ArviZ to see the draws' autocorrelation, so its ESS and MCSE are honest (see
        Notes).
    proposal : {"gaussian", "student_t"}
        Proposal family; the Student-t (``dof`` degrees of freedom) has heavier tails.
    covariance : {"full", "diagonal"}
        Full covariance (O(N d^2) per iteration) or its diagonal (O(N d)). On a correlated
        target a diagonal Gaussian has lighter tails than the target along its long
        axes, and the chain converges slowly (the paper's condition q / pi >= a fails):
        pair ``"diagonal"`` with ``proposal="student_t"``.
    init_spread : float
        The initial population is the initial point plus independent normal noise of this
        standard deviation in every unconstrained coordinate (points of zero density are
        redrawn). Default 3. Too wide costs little (points of low density are the first to
        be replaced); too narrow, with the posterior several spreads from the initial
        point, makes the burn-in slow: the proposal has the population's covariance, so a
        narrow population takes small steps toward a distant posterior.
    dof : float
        Degrees of freedom of the Student-t proposal.
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        Passed by ``pm.sample`` when it builds the step itself.

    Notes
    -----
    *Which point a draw reports, and how often.* The population's stationary
    distribution ``pi^N`` is exchangeable, so a point chosen uniformly at random,
    independently of the values, is a draw of the posterior. Consecutive draws are
    different points, correlated through the population, which changes by at most one
    point per iteration: the correlation between draws t iterations apart is about
    ``(c / N) exp(-t a / N)`` (a the acceptance rate, c of order 1). Reported after
    every iteration, the draws have a correlation of order 1/N per lag over thousands of
    lags; ArviZ's ESS truncates such a faint, long tail, so it overstates the ESS and
    understates the MCSE (docs/algorithms.md). Reported every ``k = N / 5`` iterations,
    the tail spans a few draws and ArviZ estimates it. Reporting one fixed point of the
    population per chain would be honest too, but it repeats the same point until that
    point is replaced, and so carries far less information per evaluation.

    *Cost.* ESS per log density evaluation rises as k falls, while the MCSE stays honest
    only as long as ArviZ still sees the whole tail of the correlation. Lower
    ``steps_per_draw`` only with many draws per chain (the longer the chain, the fainter
    the correlation ArviZ can see); raise it to save storage.

    Sampler statistics per draw: ``accept`` (mean over the draw's iterations of the
    probability that the proposed point entered the population), ``accepted`` (fraction
    of the draw's iterations whose proposal entered), ``reported`` (the index of the
    reported point in the population) and ``changed`` (1.0 if the reported point differs
    from the previous draw's).

    Examples
    --------
    >>> import pymc as pm, pymc_discrete as pmd
    >>> with pm.Model():
    ...     x = pm.Normal("x", 0.0, 1.0, shape=3)
    ...     idata = pm.sample(step=pmd.SAMCMC(), chains=2, progressbar=False)  # doctest: +SKIP
    """

    name = "samcmc"
    default_blocked = True
    stats_dtypes_shapes = {
        "accept": (np.float64, []),
        "accepted": (np.float64, []),
        "reported": (np.int64, []),
        "changed": (np.float64, []),
        # running mean of accept over the phase (tuning, then sampling) and the number of
        # consecutive draws without an accepted substitution: the progress bar's fields
        "mean_accept": (np.float64, []),
        "stalled": (np.int64, []),
    }
    _state_class = SAMCMCState

    def __init__(
        self,
        vars=None,
        *,
        n_points: int | None = None,
        steps_per_draw: int | None = None,
        proposal: str = "gaussian",
        covariance: str = "full",
        init_spread: float = 3.0,
        dof: float = 5.0,
        model=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        rng=None,
        blocked: bool = True,
    ) -> None:
        model = modelcontext(model)
        self.proposal = check_choice("proposal", proposal, PROPOSALS)
        self.covariance = check_choice("covariance", covariance, COVARIANCES)
        if vars is None:
            vars = model.free_RVs
        value_vars = get_value_vars_from_user_vars(vars, model)
        _check_owns_the_model(model, value_vars)
        if initial_point is None:
            initial_point = model.initial_point()
        self.n_dims = int(sum(np.size(initial_point[v.name]) for v in value_vars))
        d = self.n_dims
        if n_points is None:
            n_points = max(20, 10 * d)
        self.n_points = check_positive_int("n_points", n_points)
        smallest = d + 2 if self.covariance == "full" else 3
        if self.n_points < smallest:
            raise ValueError(
                f"n_points must be at least {smallest} for a {self.covariance} covariance in "
                f"{d} dimensions, got {self.n_points}"
            )
        if steps_per_draw is None:
            steps_per_draw = max(1, self.n_points // 5)
        self.steps_per_draw = check_positive_int("steps_per_draw", steps_per_draw)
        try:
            self.init_spread = float(init_spread)
            self.dof = float(dof)
        except (TypeError, ValueError):
            raise ValueError("init_spread and dof must be positive numbers") from None
        if not (self.init_spread > 0 and self.dof > 0):
            raise ValueError(
                f"init_spread and dof must be positive, got {init_spread!r} and {dof!r}"
            )
        [logp], joined = join_nonshared_inputs(initial_point, [model.logp()], value_vars, {})
        fn = compile_pytensor([joined], logp, **(compile_kwargs or {}))
        fn.trust_input = True
        self._logp_fn = fn
        self.model = model
        self._population = None
        self._slot = -1
        self._last = None
        self.tune = True
        self._reset_progress()
        super().__init__(value_vars, {}, blocked=blocked, rng=rng)

    def _logp(self, theta: np.ndarray) -> float:
        return float(self._logp_fn(np.asarray(theta, dtype=np.float64)))

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain: new generator, new population."""
        super().setup_chain(rng, tune, draws)
        self._population = None
        self._last = None
        self._slot = -1
        self._reset_progress()

    def reset_tuning(self) -> None:
        """Nothing to tune; a new chain starts from a new population."""
        self._population = None
        self._last = None
        self._slot = -1
        self._reset_progress()

    def _reset_progress(self) -> None:
        self._phase_draws = 0
        self._phase_accept_sum = 0.0
        self._stalled = 0

    def stop_tuning(self) -> None:
        """Nothing to freeze: SAMCMC has no tuning parameter."""
        self.tune = False
        self._reset_progress()

    def _initial_population(self, x0: np.ndarray):
        logp0 = self._logp(x0)
        if not np.isfinite(logp0):
            raise ValueError(
                f"SAMCMC: the initial point has log density {logp0}; start from a point of "
                "positive density"
            )
        points = [x0]
        logps = [logp0]
        tries = 0
        while len(points) < self.n_points:
            candidate = x0 + self.init_spread * self.rng.standard_normal(x0.size)
            value = self._logp(candidate)
            tries += 1
            if np.isfinite(value):
                points.append(candidate)
                logps.append(value)
            elif tries > 100 * self.n_points:
                raise ValueError(
                    "SAMCMC: most points drawn around the initial point have zero density; "
                    "lower init_spread"
                )
        return init_population(np.array(points), np.array(logps), self.covariance)

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, StatsType]:
        x = np.asarray(q0.data, dtype=np.float64)
        if self._population is None:
            self._population = self._initial_population(x)
        elif self._last is not None and not np.array_equal(x, self._last):
            raise RuntimeError(
                "SAMCMC: another step changed the variables between draws. SAMCMC must be "
                "the only step method of the model (its population targets the product of "
                "N copies of the posterior, which other steps would break)."
            )
        accept_prob = 0.0
        accepted = 0
        for _ in range(self.steps_per_draw):
            self._population, info = samcmc_step(
                self._population, self.rng, self._logp, self.proposal, self.covariance,
                self.dof,
            )
            accept_prob += info.accept_prob
            accepted += info.accepted
        # drawn independently of the points: at stationarity every slot holds a draw of
        # the posterior (pi^N is exchangeable)
        self._slot = int(self.rng.integers(self.n_points))
        out = self._population.points[self._slot].copy()
        changed = self._last is None or not np.array_equal(out, self._last)
        self._last = out
        stats = {
            "accept": accept_prob / self.steps_per_draw,
            "accepted": accepted / self.steps_per_draw,
            "reported": self._slot,
            "changed": float(changed),
        }
        self._phase_draws += 1
        self._phase_accept_sum += stats["accept"]
        self._stalled = 0 if accepted else self._stalled + 1
        stats["mean_accept"] = self._phase_accept_sum / self._phase_draws
        stats["stalled"] = self._stalled
        return RaveledVars(out.astype(q0.data.dtype), q0.point_map_info), [stats]

    @staticmethod
    def _progressbar_config(n_chains: int = 1) -> tuple[list, dict]:
        """PyMC's progress bar shows the chain's mean acceptance over the phase."""
        columns = [TextColumn("{task.fields[pmd_accept]:0.2f}",
                              table_column=Column("Accept", ratio=1))]
        return columns, {"pmd_accept": [0.0] * n_chains}

    @staticmethod
    def _make_progressbar_update_functions() -> tuple:
        """The draw's stats -> the bar's fields; a red bar after
        :data:`~pymc_discrete.pymc.steps.block_step.STALLED_DRAWS_FAILING` draws without an
        accepted substitution."""

        def update_stats(stats: dict) -> dict:
            return {"pmd_accept": stats["mean_accept"],
                    "failing": stats["stalled"] >= STALLED_DRAWS_FAILING}

        return (update_stats,)

    @staticmethod
    def competence(var, has_grad=False):
        """COMPATIBLE for continuous variables (never chosen automatically)."""
        if var.dtype.startswith("float"):
            return Competence.COMPATIBLE
        return Competence.INCOMPATIBLE


def _check_owns_the_model(model, value_vars) -> None:
    """SAMCMC must sample every free variable, all of them continuous."""
    discrete = [v.name for v in model.value_vars if not v.dtype.startswith("float")]
    if discrete:
        raise TypeError(
            f"SAMCMC needs a model whose free variables are all continuous; {discrete} "
            "are discrete"
        )
    missing = sorted({v.name for v in model.value_vars} - {v.name for v in value_vars})
    if missing:
        raise ValueError(
            f"SAMCMC must own every free variable of the model; {missing} are left to other "
            "steps, which would break its population's product target. Pass vars=None."
        )
