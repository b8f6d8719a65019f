"""The crossed seeds x items interval refuses inputs whose interval would mean nothing (a NaN
score, a column outside the table) instead of returning a NaN or wrapped interval."""

from __future__ import annotations

import numpy as np
import pytest

from trainers.common.intervals import seed_item_interval


@pytest.mark.parametrize(("table", "options", "message"), [
    (np.array([[1.0, 0.0], [0.0, np.nan]]), {}, r"1 scores that are not finite \(first: "
                                                r"seed row 1, item 1: nan\)"),
    (np.array([[1.0, 0.0, 1.0]]), {"groups": [[0, 1], [-1]]}, r"in 0 to 2"),
    (np.array([[1.0, 0.0, 1.0]]), {"groups": [[0, 3]]}, r"in 0 to 2"),
])
def test_an_input_with_no_meaningful_interval_is_refused(table: np.ndarray,
                                                         options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        seed_item_interval(table, **options)
