"""Joint distributions of small discrete blocks: enumeration from the model's own log
density, and the comparison of a sample's joint frequencies with it, chain by chain."""

from __future__ import annotations

import itertools

import arviz as az
import numpy as np
import pymc as pm

#: frequencies must lie within this many Monte Carlo standard errors
N_MCSE = 4.0
#: states below this probability are compared as one pooled event (a per-state
#: comparison of thousands of rare states would test the tails of the MCSE estimate)
RARE = 0.01


def enumerate_block(
    model: pm.Model, names: list[str], ranges: dict[str, tuple[int, int]] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Every joint value of the discrete variables ``names`` (the model's only free
    variables) and its probability, from ``model.compile_logp()``.

    ``ranges`` gives the (lowest, highest) value of the integer variables that are
    neither Bernoulli nor Categorical (every site of such a variable shares the range).

    Returns
    -------
    states : ndarray of int64, shape (S, N)
        The values of all sites, raveled and concatenated in the order of ``names``.
    probs : ndarray, shape (S,)
    """
    ranges = ranges or {}
    point = model.initial_point()
    shapes = [np.shape(point[name]) for name in names]
    values = []
    for name, shape in zip(names, shapes):
        rv = model[name]
        op = rv.owner.op
        if name in ranges:
            lower, upper = ranges[name]
            site_values = range(lower, upper + 1)
        elif isinstance(op, pm.Bernoulli.rv_type):
            site_values = range(2)
        else:
            site_values = range(int(rv.owner.inputs[-1].shape[-1].eval()))  # constant p
        values += [site_values] * int(np.prod(shape, dtype=int))
    logp = model.compile_logp()
    states = np.array(list(itertools.product(*values)), dtype=np.int64)
    logps = np.empty(len(states))
    for s, state in enumerate(states):
        start = 0
        for name, shape in zip(names, shapes):
            size = int(np.prod(shape, dtype=int))
            point[name] = state[start : start + size].reshape(shape)
            start += size
        logps[s] = logp(point)
    probs = np.exp(logps - np.max(logps))
    return states, probs / probs.sum()


def draws_of(idata, names: list[str]) -> np.ndarray:
    """The draws of ``names`` as (chain, draw, sites), raveled in the order of ``names``."""
    parts = []
    for name in names:
        values = idata.posterior[name].values
        parts.append(values.reshape(values.shape[0], values.shape[1], -1))
    return np.concatenate(parts, axis=-1).astype(np.int64)


def assert_joint_frequencies_match(idata, names, states, probs, n_mcse: float = N_MCSE):
    """Per chain: states of probability zero are never visited, and the frequency of
    every state of probability >= :data:`RARE` (and of all rarer ones pooled) lies within
    ``n_mcse`` Monte Carlo standard errors of its probability.

    The MCSE is ArviZ's for the chain's indicator of the state, floored at the binomial
    standard error of the chain's smallest effective sample size over the indicators
    (a state a chain never visits has an estimated MCSE of 0). Checking each chain alone
    catches a reducible chain whose chains sit in
    different classes while their pooled frequencies look right.
    """
    draws = draws_of(idata, names)
    index = {tuple(s): i for i, s in enumerate(states)}
    common = np.flatnonzero(probs >= RARE)
    rare = probs < RARE
    for chain in range(draws.shape[0]):
        visited = np.array([index[tuple(d)] for d in draws[chain]])
        n = visited.size
        impossible = probs[visited] == 0.0
        assert not impossible.any(), f"chain {chain} visited states of probability zero"
        indicators = np.stack(
            [visited == i for i in common] + [rare[visited]], axis=-1
        ).astype(float)
        truth = np.r_[probs[common], probs[rare].sum()]
        freq = indicators.mean(axis=0)
        mcse = np.asarray(az.mcse(indicators[None]))
        # a state the chain rarely or never visits has an unreliable (or zero) MCSE:
        # floor it at the standard error of the chain's effective number of draws, the
        # smallest ESS of the indicators it does visit
        varying = indicators.std(axis=0) > 0
        ess = np.asarray(az.ess(indicators[None][..., varying])) if varying.any() else [n]
        n_eff = max(2.0, min(float(np.nanmin(ess)), n))
        mcse = np.maximum(mcse, np.sqrt(truth * (1.0 - truth) / n_eff))
        bad = np.abs(freq - truth) > n_mcse * mcse + 1e-12
        assert not bad.any(), (
            f"chain {chain}: states {[states[i].tolist() for i in common[bad[:-1]]]}"
            f"{' and the rare states' if bad[-1] else ''}: frequency {freq[bad]} against "
            f"{truth[bad]} (MCSE {mcse[bad]})"
        )
