"""The crossed bootstrap's decision groups must hold every item column exactly once: a group list
that leaves columns out, or names one twice, scored another statistic than the table's mean of
group means, silently (half the items left out gave (1.0, 1.0) for a table whose mean is 0.5)."""

from __future__ import annotations

import numpy as np
import pytest

from trainers.common.intervals import seed_item_interval

TABLE = np.array([[1.0, 1.0, 0.0, 0.0]] * 3)


@pytest.mark.parametrize("groups", [
    [[0, 1]],                   # columns 2 and 3 in no group
    [[0, 1], [1, 2, 3]],        # column 1 in two groups
    [[0, 0, 1, 2, 3]],          # column 0 twice in one group
])
def test_groups_that_do_not_partition_the_items_are_refused(groups: list[list[int]]) -> None:
    with pytest.raises(ValueError, match="every item column exactly once"):
        seed_item_interval(TABLE, groups)
    # a partition, in any order, is accepted
    low, high = seed_item_interval(TABLE, [[3, 0], [2, 1]])
    assert low <= 0.5 <= high
    assert seed_item_interval(TABLE, [[0, 1, 2, 3]]) == seed_item_interval(TABLE)
