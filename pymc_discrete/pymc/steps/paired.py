"""PairedFlip: a binary indicator flipped together with the coefficient it switches.

The kernel's mathematics is in :mod:`pymc_discrete.kernels.paired`; the pairing is read
off the model by :mod:`pymc_discrete.pymc.model.pairing`; this module runs the moves as a
PyMC step.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.pytensorf import make_shared_replacements
from pymc.stats.convergence import SamplerWarning
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.util import get_value_vars_from_user_vars
from pytensor.gradient import jacobian
from pytensor.graph.replace import clone_replace

from pymc_discrete.kernels.paired import (
    MAX_NEWTON_STEPS,
    GaussianFit,
    log_density,
    metropolis_log_ratio,
    newton_ascent,
)
from pymc_discrete.pymc.model.pairing import binary_indicator, switched_coefficients
from pymc_discrete.pymc.model.reproducible import compile_function
from pymc_discrete.pymc.model.validation import block_value_vars
from pymc_discrete.pymc.steps.albp import ALBP
from pymc_discrete.pymc.steps.scalar_point import ScalarSitesMapping
from pymc_discrete.pymc.steps.stall import StallWatch

__all__ = ["PairedFlip"]

#: default swaps per draw: one per site up to this many. Swaps pay where few sites must
#: trade correlated predictors; with many sites the flips already trade them, and every
#: further swap only adds a fit to the draw (docs/algorithms.md gives the figures)
MAX_DEFAULT_SWAPS = 10



class PairedFlip(ScalarSitesMapping, ArrayStepShared):
    """Flips of a binary indicator, each with a fresh draw of the coefficients it switches.

    For spike-and-slab models written as ``g * beta``: a flip of ``g_j`` alone proposes
    to switch on a coefficient that has wandered under its prior, and is nearly always
    refused (and with correlated predictors, so is a flip that keeps the other
    coefficients where they are). Every draw, PairedFlip visits the sites in random order
    and proposes, for each, to flip ``g_j`` and draw the whole of ``beta`` from a Gaussian
    fitted (Newton steps from a fixed anchor) to its conditional given the flipped
    indicators and the other variables, accepted by Metropolis-Hastings with the fit at
    the current indicators as the reverse move (see :mod:`pymc_discrete.kernels.paired`).
    The move is exact whatever the model; where ``beta``'s conditional is Gaussian (a
    linear regression given the noise scale) it is a collapsed Gibbs update of the
    indicators, ``beta`` integrated out; elsewhere (a logistic or Poisson regression)
    the fit is the conditional's Laplace approximation, Newton ascent to its mode. Pair
    it with NUTS on the continuous variables (``beta`` included); ``pmd.register()`` does
    so when it finds the pairing (:func:`switched_coefficients`).

    Parameters
    ----------
    vars : random variable or list of one
        The indicator: one binary variable with values 0 and 1.
    coefficients : random variable, optional
        The continuous variable whose element ``j`` site ``j`` switches (default: the one
        :func:`switched_coefficients` finds; an error if none).
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        As for PyMC's steps. The fits start from a fixed anchor: ``coefficients``' value
        at ``initial_point`` where the log density is quadratic in them, else their
        conditional mode there with every indicator on.
    newton_steps : int, optional
        Most Newton steps per fit (an evaluation of the gradient and Hessian each).
        Default: one where the log density is quadratic in the coefficients (checked at
        construction: the fit is then exact), else
        :data:`~pymc_discrete.kernels.paired.MAX_NEWTON_STEPS`, the ascent stopping at
        the conditional's mode (a Laplace fit): a fit short of the mode can be a
        proposal the flips practically never accept.
    refresh : bool
        Before the flips, also propose the coefficients afresh from the fit at the
        current indicators (no extra evaluation: that fit is the reverse move of the
        first flip; for a Gaussian conditional an exact Gibbs draw of the coefficients).
    swaps : int, optional
        Swap proposals per draw after the flips (default: one per site, at most
        :data:`MAX_DEFAULT_SWAPS`): an included
        site and an excluded one, each chosen uniformly, exchange their states, with the
        coefficients drawn afresh as for a flip. The size of the model is kept, so a swap
        trades one predictor for a correlated one in one move where two flips would pass
        through a model with both or neither, each unlikely (each swap costs one fit, as
        a flip does; docs/algorithms.md gives the figures). The choice is symmetric (a
        swap keeps the numbers of included and excluded sites), so the
        Metropolis-Hastings ratio is a flip's.

    Notes
    -----
    Cost per draw: one fit per proposal (the refresh, one per site, one per swap), each
    one evaluation of the gradient and Hessian with respect to ``coefficients`` (p x p
    for p coefficients) and a Cholesky factorisation per Newton step (one for a
    quadratic log density, as many as the ascent to the mode takes otherwise), and one
    log density evaluation. Sampler
    statistics: ``accept`` (mean acceptance probability of the draw's flips and swaps) and
    ``jump_distance`` (sites whose state changed over the draw's moves, counted per move).

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_discrete as pmd
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> with pm.Model():
    ...     g = pm.Bernoulli("g", 0.5, shape=3)
    ...     beta = pm.Normal("beta", 0, 1, shape=3)
    ...     y = pm.Normal("y", pm.math.dot(X, g * beta), 1.0, observed=X[:, 0])
    ...     step = pmd.PairedFlip([g])
    >>> step.coefficients_name
    'beta'
    """

    name = "paired_flip"
    stats_dtypes_shapes = {"accept": (np.float64, []), "jump_distance": (np.int64, []),
                           "warning": (SamplerWarning, None)}
    #: what to try when no indicator moved for many draws after tuning
    _stall_advice = (
        "The fitted proposal of the coefficients may not suit this likelihood: try "
        "pmd.JointGibbs or pmd.BlockedGibbs for the indicators with NUTS for the "
        "coefficients, or pm.sample's default steps."
    )

    def __init__(self, vars=None, coefficients=None, *, model=None, initial_point=None,
                 compile_kwargs: dict | None = None, newton_steps: int | None = None,
                 refresh: bool = True, swaps: int | None = None, rng=None,
                 blocked: bool = True) -> None:
        model = modelcontext(model)
        if initial_point is None:
            initial_point = model.initial_point()
        block = block_value_vars(model, vars, "PairedFlip", ALBP.competence)
        if len(block) != 1:
            raise ValueError("PairedFlip takes one indicator variable, got "
                             f"{[v.name for v in block]}")
        g = block[0]
        n = binary_indicator(model, g, initial_point, "PairedFlip")
        if coefficients is None:
            beta, why = switched_coefficients(model, g, initial_point)
            if beta is None:
                raise ValueError(f"PairedFlip found nothing to pair with {g.name}: {why}; pass "
                                 "coefficients= (or sample the block with pmd.BlockedGibbs)")
        else:
            [beta] = get_value_vars_from_user_vars([coefficients], model)
            if beta not in model.continuous_value_vars:
                raise TypeError(f"PairedFlip's coefficients must be continuous; {beta.name} "
                                "is not")
        if newton_steps is not None and newton_steps < 1:
            raise ValueError(f"newton_steps must be at least 1, got {newton_steps}")
        shape = np.shape(initial_point[beta.name])
        shared = make_shared_replacements(initial_point, [g, beta], model)
        flat = pt.vector(f"{beta.name}_flat", dtype=beta.dtype)
        logp = clone_replace(model.logp(), {**shared, beta: flat.reshape(shape)},
                             rebuild_strict=False)
        kwargs = compile_kwargs or {}
        self._logp = compile_function([g, flat], logp, **kwargs)
        self._g_shape, self._g_dtype = np.shape(initial_point[g.name]), np.dtype(g.dtype)
        self._b_dtype = np.dtype(beta.dtype)
        self._anchor = np.ravel(initial_point[beta.name]).astype(float)
        self._n = n
        gradient = pt.grad(logp, flat)
        hessian = jacobian(gradient, flat, vectorize=True)
        #: most Newton steps per fit: one where the log density is quadratic in the
        #: coefficients (the fit is then exact), else MAX_NEWTON_STEPS (to the mode)
        self.newton_steps = int(newton_steps or (
            1 if self._quadratic(compile_function([g, flat], hessian, **kwargs))
            else MAX_NEWTON_STEPS))
        chol = pt.linalg.cholesky(-0.5 * (hessian + hessian.T), lower=True, on_error="nan")
        step = pt.linalg.cho_solve((chol, True), gradient)
        normal = pt.vector("normal", dtype=self._b_dtype, shape=(self._anchor.size,))
        start = pt.vector("start", dtype=self._b_dtype, shape=(self._anchor.size,))
        self._propose = compile_function(
            [g, start, normal], self._proposal_graph(logp, flat, step, chol, start, normal),
            **kwargs)
        self._logp.trust_input = self._propose.trust_input = True
        # the ascent's steps before the last (which the proposal takes): (g, b) -> (log
        # density, gradient, Newton step), the step nan where -Hessian is not positive
        # definite
        self._newton = None
        if self.newton_steps > 1:
            self._newton = compile_function([g, flat], [logp, gradient, step], **kwargs)
            self._newton.trust_input = True
            # the anchor moves to the conditional's mode with every indicator on (the
            # other variables at the initial point), fixed from here on: near the modes
            # of all indicators (an excluded coefficient's conditional is its prior
            # alone), so a fit takes a few steps, where the initial value (often 0) can be
            # many standard deviations from them
            on = self._g(np.ones(n, dtype=np.int64))
            self._anchor = newton_ascent(
                lambda b: self._newton(on, b.astype(self._b_dtype)), self._anchor,
                self.newton_steps)
        self.refresh = bool(refresh)
        if swaps is not None and swaps < 0:
            raise ValueError(f"swaps must be at least 0, got {swaps}")
        #: swap proposals per draw
        self.swaps = int(min(n, MAX_DEFAULT_SWAPS) if swaps is None else swaps)
        #: the name of the paired continuous variable's value variable
        self.coefficients_name = beta.name
        super().__init__([g, beta], shared, blocked, rng=rng)
        self._stall_watch = StallWatch("PairedFlip", [g.name], self._stall_advice)
        self._n_tune, self._draw = 0, 0

    def _proposal_graph(self, logp, flat, step, chol, start, normal) -> list:
        """``(g, start, z) -> (b', log p(g, b'), log q(b' | g), the fit's mean, Cholesky
        factor of its precision and log normaliser)``: the fit's last Newton step, from
        ``start`` (the anchor, or where :func:`newton_ascent` stopped) on the log density
        in the coefficients at the indicators ``g``, then ``b' = mean + L^-T z``.

        Where the step is not finite or ``P = -Hessian`` not positive definite at
        ``start`` (a Cholesky factor with a positive diagonal), the fit is ``start`` with
        unit precision (the move stays exact, only its acceptance suffers)."""
        p = self._anchor.size
        step_mean, step_chol = clone_replace([flat + step, chol], {flat: start})
        alive = (pt.all(pt.isfinite(step_mean)) & pt.all(pt.isfinite(step_chol))
                 & pt.all(pt.diag(step_chol) > 0))
        mean = pt.switch(alive, step_mean, start)
        precision_chol = pt.switch(alive, step_chol, pt.eye(p, dtype=self._b_dtype))
        scale = pt.linalg.solve_triangular(precision_chol, pt.eye(p, dtype=self._b_dtype),
                                           lower=True, trans="T")
        proposal = mean + scale @ normal
        log_norm = pt.log(pt.diag(precision_chol)).sum() - 0.5 * p * np.log(2.0 * np.pi)
        log_q = log_norm - 0.5 * (normal**2).sum()
        return [proposal, clone_replace(logp, {flat: proposal}), log_q, mean,
                precision_chol, log_norm]

    def _quadratic(self, hessian_fn, seed: int = 0) -> bool:
        """Whether the Hessian in the coefficients is the same at the anchor and at two
        random points, with the indicators all on (then one Newton step is exact)."""
        rng = np.random.default_rng(seed)
        on = self._g(np.ones(self._n, dtype=np.int64))
        first = hessian_fn(on, self._anchor.astype(self._b_dtype))
        for _ in range(2):
            b = self._anchor + rng.normal(0.0, 1.0, self._anchor.size)
            other = hessian_fn(on, b.astype(self._b_dtype))
            if not (np.all(np.isfinite(first)) and np.allclose(other, first, rtol=1e-8,
                                                                atol=1e-10)):
                return False
        return True

    def _g(self, g: np.ndarray) -> np.ndarray:
        return g.reshape(self._g_shape).astype(self._g_dtype)

    def _log_density(self, g: np.ndarray, b: np.ndarray) -> float:
        logp = float(self._logp(self._g(g), b.astype(self._b_dtype)))
        return logp if np.isfinite(logp) else -np.inf  # nan: an impossible state

    def proposal(self, g: np.ndarray, normal: np.ndarray) -> tuple[np.ndarray, float, float,
                                                                    GaussianFit]:
        """The coefficients proposed with the indicators ``g`` from standard normal
        variates: ``(b', log p(g, b'), log q(b' | g), the fit q(. | g))``, the other
        variables at their current values."""
        g = self._g(g)
        start = self._anchor.astype(self._b_dtype)
        if self._newton is not None:
            # from the fixed anchor, never the current coefficients: the fit is then a
            # function of g and the other variables alone, the same when it serves as
            # the reverse move
            start = newton_ascent(lambda b: self._newton(g, b.astype(self._b_dtype)),
                                  start, self.newton_steps).astype(self._b_dtype)
        b, logp, log_q, mean, chol, log_norm = self._propose(
            g, start, np.asarray(normal, dtype=self._b_dtype))
        logp = float(logp)
        return (np.asarray(b, dtype=float), logp if np.isfinite(logp) else -np.inf,
                float(log_q), GaussianFit(np.asarray(mean, dtype=float),
                                          np.asarray(chol, dtype=float), float(log_norm)))

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain: new generator; the stall watch counts the draws after ``tune``."""
        super().setup_chain(rng, tune, draws)
        self._stall_watch.start_chain(self.rng, draws)
        self._n_tune, self._draw = int(tune), 0

    def astep(self, q0: RaveledVars) -> tuple[RaveledVars, list[dict]]:
        n = self._n
        g = np.rint(q0.data[:n]).astype(np.int64)
        b = np.asarray(q0.data[n:], dtype=float).copy()
        logp = self._log_density(g, b)
        # the fit at the current indicators (the reverse move of every flip) comes with a
        # refresh proposal of the coefficients, made first
        b_new, logp_new, log_q_new, fit = self.proposal(g, self.rng.standard_normal(b.size))
        if self.refresh:
            log_ratio = metropolis_log_ratio(logp, logp_new, log_density(b, fit), log_q_new)
            if np.log(self.rng.random()) < log_ratio:
                b, logp = b_new, logp_new
        accept, moved = 0.0, 0
        for j in self.rng.permutation(n):
            g_new = g.copy()
            g_new[j] = 1 - g[j]
            g, b, logp, fit, probability = self._metropolis(g, b, logp, fit, g_new)
            accept += probability
            moved += int(g[j] == g_new[j])
        for _ in range(self.swaps):
            g_new = self._swap(g)
            if g_new is None:
                continue
            g, b, logp, fit, probability = self._metropolis(g, b, logp, fit, g_new)
            accept += probability
            moved += 2 * int(np.array_equal(g, g_new))
        data = np.concatenate([g.astype(q0.data.dtype), b.astype(q0.data.dtype)])
        tuning = self._draw < self._n_tune
        self._draw += 1
        warning = self._stall_watch.record(moved > 0, tuning)
        return RaveledVars(data, q0.point_map_info), [
            {"accept": accept / max(n + self.swaps, 1), "jump_distance": moved,
             "warning": warning}]

    def _metropolis(self, g, b, logp, fit, g_new):
        """One Metropolis-Hastings move to the indicators ``g_new`` with coefficients
        drawn from the fit there; returns the state after it (indicators, coefficients,
        log density, fit) and the acceptance probability."""
        b_new, logp_new, log_q_new, fit_new = self.proposal(
            g_new, self.rng.standard_normal(b.size))
        log_ratio = metropolis_log_ratio(logp, logp_new, log_density(b, fit), log_q_new)
        probability = float(np.exp(min(log_ratio, 0.0)))
        if np.log(self.rng.random()) < log_ratio:
            return g_new, b_new, logp_new, fit_new, probability
        return g, b, logp, fit, probability

    def _swap(self, g: np.ndarray) -> np.ndarray | None:
        """``g`` with an included and an excluded site, each chosen uniformly, exchanged
        (None where all sites are in or all out: the move is then the identity). The
        choice is symmetric: the swapped pattern has as many included and excluded sites,
        so the reverse swap is chosen with the same probability."""
        included, excluded = np.flatnonzero(g == 1), np.flatnonzero(g == 0)
        if not (included.size and excluded.size):
            return None
        swapped = g.copy()
        swapped[included[self.rng.integers(included.size)]] = 0
        swapped[excluded[self.rng.integers(excluded.size)]] = 1
        return swapped
