"""Steps driven by local log-ratios (ALBP, PAS): where the ratios come from.

:class:`InformedStep` compiles the ratio source once at construction: the gradient of a
continuous relaxation (:mod:`~pymc_discrete.pymc.compiled`), exact ratios from the
model's elementwise terms (:mod:`~pymc_discrete.pymc.exact`), or the relaxation built for
the compiled loop. It falls back to exact ratios when the model cannot be relaxed, checks
the relaxation against the exact log density at the start, measures whether the ratios
are exact, and switches to exact ratios when a gradient proposal never moved during
tuning.
"""

from __future__ import annotations

import warnings

import numpy as np

from pymc_discrete.kernels.common import StepsInfo
from pymc_discrete.kernels.weights import weight_code
from pymc_discrete.pymc.block_step import SiteBlockStep
from pymc_discrete.pymc.compiled import compile_gradient_ratios
from pymc_discrete.pymc.exact import ExactRatios
from pymc_discrete.pymc.exceptions import RelaxationError, RelaxationWarning
from pymc_discrete.pymc.validation import check_choice

__all__ = ["InformedStep"]


class InformedStep(SiteBlockStep):
    """A step whose proposal is driven by local log-ratios (gradient or exact)."""

    def _choose_proposal(self, weight: str, proposal: str) -> None:
        """Check and record the weight function and the source of the local ratios."""
        self.weight = check_choice("weight", weight, ("barker", "sqrt"))
        self.proposal = check_choice("proposal", proposal, ("gradient", "exact"))
        self.fallback_reason: str | None = None
        self._code = weight_code(self.weight)

    def _compile_ratios(self, compile_kwargs: dict | None, numba_loop: bool = False) -> None:
        """Compile ``x -> (logp, local log-ratios)`` for the proposal asked for, falling back
        from the gradient to exact ratios when the model cannot be relaxed. With
        ``numba_loop`` a binary block's function is built in PyTensor's NUMBA mode
        (:class:`~pymc_discrete.pymc.compiled.CompiledRatios`)."""
        self._compile_kwargs = compile_kwargs
        shared = self._shared_vars()
        if self.proposal == "gradient":
            try:
                self._logp_and_ratios = compile_gradient_ratios(
                    self.model, self.vars, self.shapes, self._categorical, self._counts,
                    shared, compile_kwargs, numba_loop=numba_loop,
                )
            except RelaxationError as err:
                self._fall_back_to_exact(str(err), stacklevel=4)
            else:
                if self._start_checked:
                    self._check_relaxation(self._initial_point, self._initial_logp)
        if self.proposal == "exact":
            self._compile_exact_ratios()
        self.ratios_are_exact = self._ratios_match_flips()

    def _compile_exact_ratios(self) -> None:
        self._logp_and_ratios = ExactRatios(
            self.model, self.vars, self._initial_point, self._shared_vars(),
            self._compile_kwargs, n_categories=None if self.is_binary else self.n_categories,
        )

    def _fall_back_to_exact(self, reason: str, stacklevel: int) -> None:
        """Use exact local ratios from now on, saying why."""
        self.fallback_reason = reason
        self.proposal = "exact"
        warnings.warn(
            f"{type(self).__name__} cannot use gradient proposals for {self.var_names}: "
            f"{reason}. Falling back to proposal='exact'.",
            RelaxationWarning,
            stacklevel=stacklevel,
        )

    def _check_start(self, x: np.ndarray, logp: float) -> None:
        """The relaxation check, deferred to the first point of positive probability."""
        super()._check_start(x, logp)
        if self.proposal == "gradient":
            self._check_relaxation(self._current_point(x), None)

    def _check_relaxation(self, point: dict, exact: float | None) -> None:
        """The relaxed logp must equal the exact logp at an (integer) point of positive
        probability (``exact``: the model's log density there, computed if None)."""
        saved = {name: s.get_value() for name, s in self.shared.items()}
        try:
            for name, s in self.shared.items():
                s.set_value(point[name])
            x0 = np.concatenate([np.ravel(point[v.name]) for v in self.vars]).astype(np.int64)
            relaxed, _ = self._logp_and_ratios(x0)
        finally:
            for name, s in self.shared.items():
                s.set_value(saved[name])
        if exact is None:
            exact = float(sum(self.model.point_logps(point, round_vals=12).values()))
        # PyMC may evaluate some terms in float32 (constants such as p=0.5 are stored as
        # float32), so agreement is required to single precision, not to the last bit; a
        # wrong relaxation is off by O(1)
        if not np.isclose(relaxed, exact, rtol=1e-6, atol=1e-6):
            raise RuntimeError(
                f"the relaxed log density {relaxed!r} differs from the exact one {exact!r} at "
                "the initial point; the model has a term this relaxation does not cover"
            )

    def _ratios_match_flips(self, max_sites: int = 200) -> bool:
        """Compare the proposal's log-ratios with single flips (exact log densities) at the
        initial point, and again with the other continuous variables moved to random
        values (a coefficient at exactly 0 can make a first-order estimate look exact)."""
        point = self._initial_point
        rng = np.random.default_rng(0)
        x0 = np.concatenate([np.ravel(point[v.name]) for v in self.vars]).astype(np.int64)
        if x0.size == 0:
            return True  # an empty block: nothing to estimate
        sites = np.arange(x0.size)
        if x0.size > max_sites:
            sites = np.sort(rng.choice(x0.size, max_sites, replace=False))
        try:
            for perturb in (False, True):
                for name, s in self.shared.items():
                    value = np.asarray(point[name])
                    if perturb and np.issubdtype(value.dtype, np.floating):
                        value = value + rng.normal(0.0, 1.0, value.shape).astype(value.dtype)
                    s.set_value(value)
                logp0, ratios = self._logp_and_ratios(x0)
                if not np.isfinite(logp0):
                    return False  # no point of positive probability to compare at
                table = np.asarray(ratios).reshape(x0.size, -1)
                for i in sites:
                    for v in range(self.n_categories[i]):
                        if v == x0[i]:
                            continue
                        y = x0.copy()
                        y[i] = v if not self.is_binary else 1 - y[i]
                        flip = self._logp_and_ratios(y)[0] - logp0
                        estimate = table[i, 0] if self.is_binary else table[i, v]
                        if not np.isclose(estimate, flip, rtol=1e-7, atol=1e-7) and not (
                            np.isneginf(flip) and np.isneginf(estimate)
                        ):
                            return False
            return True
        finally:
            for name, s in self.shared.items():
                s.set_value(point[name])

    def _stuck_advice(self) -> str | None:
        if self.proposal == "gradient" and not self.ratios_are_exact:
            return "The gradient's estimates of the local ratios may be poor: try proposal='exact'."
        return None  # exact ratios at the smallest scale: the target is just this sharp

    def _record_tuning(self, info: StepsInfo) -> None:
        super()._record_tuning(info)
        if self.proposal == "gradient" and self._stuck():
            self._switch_to_exact()

    def _switch_to_exact(self) -> None:
        """Replace a gradient proposal that never moved by exact ratios, and restart tuning
        for what is left of the tune phase."""
        n_steps = self._tune_steps
        self._fall_back_to_exact(
            f"none of its first {n_steps} gradient proposals was accepted (the first-order "
            "estimates of the local ratios are far from the exact ones here, e.g. near "
            "values of zero probability)",
            stacklevel=5,
        )
        self.compiled_loop = False
        self._compile_exact_ratios()
        self.ratios_are_exact = True
        self._state = None
        self._on_proposal_changed()
        remaining = self._tuning_updates()
        if remaining is not None:
            remaining = max(remaining - n_steps, 1)
        self.adapter.start(remaining)
        self._reset_tuning_record()

    def _on_proposal_changed(self) -> None:
        """Hook: adjust what depends on the proposal after a switch to exact ratios."""

    def _has_possible_move(self, state) -> bool:
        weights = getattr(state, "site_weights", None)
        if weights is None:
            weights = state.weights
        return bool(np.any(np.asarray(weights) > 0.0))
