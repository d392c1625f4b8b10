"""A registered ``pm.sample`` runs with rarer full garbage collections and restores the
collector's thresholds when it returns, even on an error; higher thresholds of the
user's are left as they are."""

from __future__ import annotations

import gc

import pymc as pm
import pytest

from pymc_discrete.pymc.choosing.gc_thresholds import (
    FULL_COLLECTION_THRESHOLD,
    fewer_full_collections,
)


@pytest.fixture
def thresholds():
    kept = gc.get_threshold()
    yield kept
    gc.set_threshold(*kept)


def test_the_last_threshold_is_raised_within_and_restored_after(thresholds):
    gc.set_threshold(700, 10, 10)
    with fewer_full_collections():
        assert gc.get_threshold() == (700, 10, FULL_COLLECTION_THRESHOLD)
    assert gc.get_threshold() == (700, 10, 10)
    with pytest.raises(RuntimeError), fewer_full_collections():
        raise RuntimeError("in the block")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_of_the_users_is_left_alone(thresholds):
    gc.set_threshold(5000, 20, 5000)
    with fewer_full_collections():
        assert gc.get_threshold() == (5000, 20, 5000)
    assert gc.get_threshold() == (5000, 20, 5000)


def test_a_registered_run_samples_with_the_raised_threshold(registered, thresholds,
                                                            monkeypatch):
    gc.set_threshold(700, 10, 10)
    seen = []
    original = pm.Model.initial_point

    def spy(self, *args, **kwargs):
        seen.append(gc.get_threshold())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pm.Model, "initial_point", spy)
    with pm.Model():
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("z", p, shape=3)
        pm.sample(draws=5, tune=5, chains=1, random_seed=1, progressbar=False,
                  compute_convergence_checks=False)
    assert seen and all(t == (700, 10, FULL_COLLECTION_THRESHOLD) for t in seen)
    assert gc.get_threshold() == (700, 10, 10)
