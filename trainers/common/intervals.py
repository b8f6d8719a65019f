"""Intervals that cover both the seeds and the held-out items of an experiment.

A result scored on held-out items over several training seeds varies with both: a bootstrap
over seeds alone treats a small item set as exact (20 of 24 items solved on every seed gives a
zero-width interval), and one over items alone ignores how training varies. The hierarchical
bootstrap here resamples the seeds, then the items within each drawn seed.

Example:
    >>> import numpy as np
    >>> table = np.array([[1.0, 1.0, 0.0, 1.0]] * 3)  # three seeds, the same four items
    >>> low, high = seed_item_interval(table)
    >>> bool(low < 0.75 < high)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["INTERVAL", "seed_item_interval"]

INTERVAL = ("95% hierarchical percentile bootstrap: the seeds resampled, then the held-out "
            "items within each drawn seed (4,000 draws, seeded)")


def seed_item_interval(table: np.ndarray, groups: Sequence[Sequence[int]] | None = None,
                       draws: int = 4000, seed: int = 0) -> tuple[float, float]:
    """The 95% hierarchical bootstrap interval of the mean of ``table`` (seeds x items).

    Args:
        table: One row of item scores per seed (a paired difference works too).
        groups: Item columns scored as the mean of group means (balanced success: a policy
            blind to the observation gets at most the share of one group); one group of
            every item when None.
        draws: Bootstrap draws.
        seed: Seeds the draws, so the interval is reproducible.
    """
    table = np.asarray(table, dtype=float)
    if table.ndim != 2 or not table.size:
        raise ValueError(f"table must be seeds x items with at least one of each, "
                         f"not of shape {table.shape}")
    columns = [np.asarray(g) for g in groups] if groups is not None else [
        np.arange(table.shape[1])]
    rng = np.random.default_rng(seed)
    means = np.empty(draws)
    for n in range(draws):
        rows = table[rng.integers(len(table), size=len(table))]
        means[n] = np.mean([np.mean([row[rng.choice(g, size=len(g))].mean() for g in columns])
                            for row in rows])
    return (round(float(np.percentile(means, 2.5)), 3),
            round(float(np.percentile(means, 97.5)), 3))
