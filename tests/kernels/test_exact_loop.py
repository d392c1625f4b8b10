"""The compiled terms' checks: a value per row, or one value for the whole batch (a check
that reads no site), set the rows where a check failed to -inf."""

import numpy as np
import pytest

from pymc_discrete.kernels.exact_loop import set_failed_rows


@pytest.mark.parametrize(("held", "failed_rows"), [
    (np.array([True, False, True]), [1]),
    (np.array([True, True, True]), []),
    (np.array(True), []),
    (np.array(False), [0, 1, 2]),
])
def test_failed_rows_are_minus_inf(held, failed_rows):
    terms = np.arange(6.0).reshape(3, 2)
    all_held = set_failed_rows(terms, held)
    assert all_held is (not failed_rows)
    for r in range(3):
        expected = -np.inf if r in failed_rows else np.arange(2.0 * r, 2.0 * r + 2)
        np.testing.assert_array_equal(terms[r], expected)
