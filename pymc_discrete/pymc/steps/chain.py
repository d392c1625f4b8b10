"""ChainGibbs: a chain-structured block (a hidden Markov chain) drawn exactly by forward
filtering, backward sampling, as a PyMC step method.

The mathematics (the chain order, the tables, the draw) is in
:mod:`pymc_discrete.kernels.chain`; this module evaluates the model's terms that depend
on the block at the 2 K^2 states that fill the tables, in one batched call of
:class:`~pymc_discrete.pymc.model.exact.ExactRatios`, with the other variables at their current
values.
"""

from __future__ import annotations

import numpy as np
from pymc.step_methods.compound import Competence

from pymc_discrete.kernels.chain import (
    ChainLayout,
    ChainState,
    chain_gibbs_step,
    chain_logp,
    chain_order,
    chain_tables,
    pair_states,
    unary_states,
    unary_tables,
)
from pymc_discrete.pymc.model.exact import ExactRatios
from pymc_discrete.pymc.steps.block_step import SiteBlockStep
from pymc_discrete.pymc.steps.step_kernel import StepKernel, python_run

__all__ = ["ChainGibbs", "chain_layout"]


def chain_layout(exact: ExactRatios) -> ChainLayout | None:
    """The chain order of a block whose structure (read off the graph, so exact at every
    state) is a path or several, with at least one pair of linked sites; None
    otherwise."""
    if not exact.proven:
        return None
    s = exact.structure
    layout = chain_order(s.site_ptr, s.site_terms, exact.n_terms)
    if layout is None or not layout.linked.any():
        return None
    return layout


class ChainGibbs(SiteBlockStep):
    """Exact draws of a chain-structured block (a hidden Markov chain) from its joint
    conditional, by forward filtering, backward sampling.

    The block's sites must form a chain: every term of the log density that depends on
    the block touches one site or two neighbours of an order of the sites (a transition
    ``P[z[t - 1], z[t]]`` however it is written, emissions of each ``z[t]``), as read off
    the model's graph (:mod:`~pymc_discrete.pymc.model.dependencies`), so that the order holds
    at every state. Each draw evaluates the block's terms at 2 K^2 states in one batched
    call (the unary and pair tables, with the other variables at their current values)
    and draws the whole chain from its conditional in O(T K^2): however sticky the chain,
    a regime boundary moves anywhere in one draw, where single-site updates
    (:class:`~pymc_discrete.BlockedGibbs`) move it one site per draw. Several disjoint
    chains in one block are drawn together.

    Parameters
    ----------
    vars : list of random variables, optional
        Bernoulli, Categorical and finite integer variables to sample as one block
        (default: all free variables of those kinds).
    model : pymc.Model, optional
    initial_point, compile_kwargs, rng, blocked
        Passed by ``pm.sample`` when it builds the step itself.
    exact_ratios : ExactRatios, optional
        The block's terms, already compiled (by :func:`~pymc_discrete.recommend`).

    Attributes
    ----------
    layout : ChainLayout
        The sites in chain order and where each term goes.

    Raises
    ------
    ValueError
        At construction, if the block is not a chain (a term of three sites, a site
        with three neighbours, a cycle) or its structure could only be probed; at a
        draw, if no state has positive probability given the other variables.

    Notes
    -----
    Sampler statistics per draw: ``accept`` and ``accepted`` (1: the draw is exact),
    ``scaling`` (the chain's length), ``n_proposed`` and ``jump_distance`` (sites changed
    by the draw), ``steps_per_draw`` (1), and the progress bar's ``mean_accept``,
    ``mean_jump`` and ``stalled``.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pytensor.tensor as pt, pymc_discrete as pmd
    >>> P = np.log(np.array([[0.95, 0.05], [0.05, 0.95]]))
    >>> with pm.Model() as model:
    ...     z = pm.Categorical("z", np.ones(2) / 2, shape=50)
    ...     pm.Potential("chain", pt.sum(pt.as_tensor(P)[z[:-1], z[1:]]))
    ...     mu = pm.Normal("mu", 0, 3, shape=2)
    ...     y = pm.Normal("y", mu[z], 1.0, observed=np.r_[np.zeros(25), 3 * np.ones(25)])
    ...     step = pmd.ChainGibbs([z])
    >>> step.layout.order.size
    50
    """

    name = "chain_gibbs"
    # the draw does not depend on the current state: the chain may start anywhere
    _refuses_impossible_start = False
    _competence_level = Competence.COMPATIBLE  # register() chooses it by structure
    _scale_parameter = "chain_length"
    _scale_bounds_reason = "the chain's length is fixed by the block"

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
            target_accept=None,  # nothing is tuned
            initial_scale=None,
            adapt=False,
            steps_per_draw=1,  # every draw is already independent of the last
            model=model,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            rng=rng,
            blocked=blocked,
            shared=None if exact_ratios is None else exact_ratios.shared,
        )

    def _build_proposal(self, compile_kwargs: dict | None) -> None:
        exact = self._block_exact_ratios(compile_kwargs)
        layout = chain_layout(exact)
        if layout is None:
            why = ("its structure could only be probed, not read off the graph"
                   if not exact.proven else
                   "its terms do not link its sites into chains (a term of three sites, a "
                   "site with three neighbours, or a cycle)")
            raise ValueError(
                f"ChainGibbs needs a chain-structured block, and {list(self.var_names)} is "
                f"not one: {why}. Sample it with BlockedGibbs or ALBP."
            )
        self._exact = exact
        self.layout = layout
        self._tables: tuple[np.ndarray, np.ndarray] | None = None
        #: whether no pair term reads the model's other variables (transitions that
        #: are constants or functions of data): the pair table is then read once and
        #: each draw evaluates only the K states of the unary terms
        self.static_pairs = not np.any(exact.term_reads_others & layout.term_pair)
        self._static_pair_table: np.ndarray | None = None

    def _resolve_initial_scale(self, initial_scale) -> float:
        return float(max(1, self.n_sites))

    def _max_scale(self, n_sites: int) -> float:
        return float(max(1, n_sites))

    def _conditional_tables(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The unary and pair tables at the other variables' current values: the block's
        terms at the pair states, in one batched call (a row where a parameter check
        failed is evaluated again pair by pair, so that one impossible pair cannot
        hide the others)."""
        if self._static_pair_table is not None:
            return self._unary_table(x), self._static_pair_table
        states = pair_states(x, self.layout, self.n_categories)
        terms = self._exact.batch_terms(states)
        if not self._exact.checks_held:
            terms = self._terms_pair_by_pair(x, states, terms)
        unary, pair = chain_tables(terms, self.layout, self.n_categories)
        if self.static_pairs:
            self._static_pair_table = pair
        return unary, pair

    def _unary_table(self, x: np.ndarray) -> np.ndarray:
        """The unary table alone, from K states (a row whose checks failed is evaluated
        again site by site)."""
        states = unary_states(x, self.n_categories)
        terms = self._exact.batch_terms(states)
        if not self._exact.checks_held:
            order = self.layout.order
            unary_terms = ~self.layout.term_pair
            for row in np.flatnonzero(np.all(np.isneginf(terms), axis=1)):
                singles = np.repeat(np.asarray(x, dtype=np.int64)[None, :], order.size, 0)
                singles[np.arange(order.size), order] = states[row, order]
                values = self._exact.batch_terms(singles)  # row p: position p moved
                terms[row, unary_terms] = values[self.layout.term_position[unary_terms],
                                                 np.flatnonzero(unary_terms)]
        return unary_tables(terms, self.layout, self.n_categories)

    def _terms_pair_by_pair(self, x: np.ndarray, states: np.ndarray,
                            terms: np.ndarray) -> np.ndarray:
        """Rows whose checks failed somewhere, rebuilt from states that change one pair
        (or the one site) at a time: each term is then read where only its own sites
        took the row's values."""
        layout = self.layout
        n = layout.order.size
        k2 = states.shape[0] // 2
        failed = np.flatnonzero(np.all(np.isneginf(terms), axis=1))
        for row in failed:
            parity = row // k2
            starts = np.arange(parity, n - 1, 2) if n > 1 else np.array([0])
            for start in starts:
                sites = layout.order[start:start + 2]
                single = np.array(x, dtype=np.int64)
                single[sites] = states[row, sites]
                values = self._exact.batch_terms(single[None, :])[0]
                # the terms chain_tables reads from this pair's entries of the row: those
                # at its first position, and the last position's unary ones
                own = layout.term_position == start
                if start + 1 == n - 1:
                    own |= (layout.term_position == start + 1) & ~layout.term_pair
                terms[row, own] = values[own]
        return terms

    def _init_state(self, x: np.ndarray) -> ChainState:
        """The conditional's tables at the other variables' current values."""
        self._tables = self._conditional_tables(x)
        unary, pair = self._tables
        return ChainState(np.asarray(x, dtype=np.int64),
                          chain_logp(np.asarray(x)[self.layout.order], unary, pair))

    def _make_kernel(self) -> StepKernel:
        """An exact draw of the whole chain (the tables are rebuilt whenever the other
        variables change)."""
        layout = self.layout

        def step(state, scale, rng):
            unary, pair = self._tables
            try:
                return chain_gibbs_step(state, rng, unary, pair, layout)
            except ValueError as err:
                given = (f" given the current values of the other variables "
                         f"({', '.join(self.shared)})" if self.shared else "")
                raise ValueError(f"ChainGibbs on {list(self.var_names)}{given}: {err}") \
                    from None

        return StepKernel("chain", self._exact, self._init_state, step, python_run(step))

    @property
    def exact_ratios(self) -> ExactRatios:
        """The block's batched terms."""
        return self._exact

    def _stuck(self) -> bool:
        # exact draws that repeat a state say the conditional is concentrated on it
        return False

    def _stall_warning(self, moved: bool, state) -> None:
        return None
