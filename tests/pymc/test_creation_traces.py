"""The package builds its graphs without PyTensor's creation stacks, leaving a user's own
limit and the configuration after the call as they were
(pymc_discrete/pymc/model/creation_traces.py)."""

import pytensor.tensor as pt
import pytest
from pytensor import config

from pymc_discrete.pymc.model.creation_traces import untraced, without_creation_traces


@untraced
def _doubled(x):
    return 2 * x, config.traceback__limit


@untraced
def _fails():
    raise RuntimeError("inside")


def test_nodes_made_inside_record_no_stack_and_the_limit_is_restored():
    x = pt.dscalar("x")
    assert config.traceback__limit == 8  # PyTensor's default, in the tests
    doubled, limit = _doubled(x)
    assert limit == 0 and doubled.tag.trace == []
    assert config.traceback__limit == 8
    assert (3 * x).tag.trace  # outside: recorded as PyTensor does
    with pytest.raises(RuntimeError, match="inside"):
        _fails()
    assert config.traceback__limit == 8


@pytest.mark.parametrize("limit", [-1, 3])
def test_a_limit_the_user_set_is_left_as_it_is(limit):
    with config.change_flags(traceback__limit=limit):
        with without_creation_traces():
            assert config.traceback__limit == limit
        doubled, seen = _doubled(pt.dscalar("x"))
        assert seen == limit and doubled.tag.trace


def test_overlapping_entries_restore_the_limit_found_by_the_first():
    """Entries that overlap (nested calls, or threads whose calls interleave) leave the
    limit at 0 until the last exits, which restores the default, not the 0 it saw."""
    import threading

    first, second = without_creation_traces(), without_creation_traces()
    first.__enter__()
    second.__enter__()  # sees 0: it must not restore 0
    first.__exit__(None, None, None)
    assert config.traceback__limit == 0  # the second is still inside
    second.__exit__(None, None, None)
    assert config.traceback__limit == 8

    inside, release = threading.Event(), threading.Event()

    def builder():
        with without_creation_traces():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=builder)
    thread.start()
    inside.wait(10)
    with without_creation_traces():
        assert config.traceback__limit == 0
    assert config.traceback__limit == 0  # the other thread is still inside
    release.set()
    thread.join(10)
    assert config.traceback__limit == 8
