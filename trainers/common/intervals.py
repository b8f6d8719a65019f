"""Intervals that cover both the seeds and the held-out items of an experiment.

A result scored on held-out items over several training seeds varies with both: a bootstrap
over seeds alone treats a small item set as exact (20 of 24 items solved on every seed gives a
zero-width interval), and one over items alone ignores how training varies.

Every seed is scored on the same held-out items, so the seeds and the items are crossed, not
nested: an item that is hard is hard for every seed. The bootstrap here is the two-way
(pigeonhole) bootstrap for crossed designs: each draw resamples the seeds, and resamples the
item columns once, the same columns for every drawn seed. Redrawing the items afresh within
each drawn seed (a hierarchical bootstrap, right only where each seed has items of its own)
averages the item draws over the seeds and shrinks the item variance by up to the square root
of the number of seeds: three identical seeds would get a narrower interval than one alone.
Here a row repeated adds nothing: its interval is the single row's.

Example:
    >>> import numpy as np
    >>> table = np.array([[1.0, 1.0, 0.0, 1.0]] * 3)  # three seeds, the same four items
    >>> low, high = seed_item_interval(table)
    >>> bool(low < 0.75 < high)
    True
    >>> seed_item_interval(table) == seed_item_interval(table[:1])  # repeats add nothing
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["INTERVAL", "seed_item_interval"]

INTERVAL = ("95% two-way (crossed) percentile bootstrap: each draw resamples the seeds and, "
            "once, the held-out items, the same items for every drawn seed (4,000 draws, "
            "seeded)")


def seed_item_interval(table: np.ndarray, groups: Sequence[Sequence[int]] | None = None,
                       draws: int = 4000, seed: int = 0) -> tuple[float, float]:
    """The 95% two-way bootstrap interval of the mean of ``table`` (seeds x items), for a
    crossed design: every seed scored on the same items (the columns).

    Each draw resamples the rows (seeds) with replacement and, independently, the columns
    (items) with replacement, once, within each group when ``groups`` is given; the same drawn
    columns score every drawn row. A paired difference of two methods scored on the same seeds
    and items is passed as the table of differences: each draw then takes the same seeds and
    items for both methods.

    Args:
        table: One row of item scores per seed (a paired difference works too).
        groups: Item columns scored as the mean of group means (balanced success: a policy
            blind to the observation gets at most the share of one group); each group's
            columns are resampled within it. One group of every item when None.
        draws: Bootstrap draws.
        seed: Seeds the draws, so the interval is reproducible.

    Raises:
        ValueError: a table that is not seeds x items, holds a score that is not finite (its
            interval would be NaN), a group with no column or one outside the table, or no
            draws.
    """
    table = np.asarray(table, dtype=float)
    if table.ndim != 2 or not table.size:
        raise ValueError(f"table must be seeds x items with at least one of each, "
                         f"not of shape {table.shape}")
    if not np.isfinite(table).all():
        seed_row, item = np.argwhere(~np.isfinite(table))[0]
        raise ValueError(f"table holds {np.count_nonzero(~np.isfinite(table))} scores that are "
                         f"not finite (first: seed row {seed_row}, item {item}: "
                         f"{table[seed_row, item]})")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    columns = [np.asarray(g, dtype=int) for g in groups] if groups is not None else [
        np.arange(table.shape[1])]
    if any(not len(g) for g in columns):
        raise ValueError("every group needs at least one item column")
    if any(((g < 0) | (g >= table.shape[1])).any() for g in columns):
        raise ValueError(f"group columns must lie in 0 to {table.shape[1] - 1}, the table's "
                         f"items")
    # the seeds' and the items' draws from streams of their own, so the items drawn do not
    # depend on the number of seeds
    seed_rng, item_rng = (np.random.default_rng(s)
                          for s in np.random.SeedSequence(seed).spawn(2))
    n_seeds = len(table)
    # how often each seed is drawn, per draw (draws x seeds)
    rows = seed_rng.integers(n_seeds, size=(draws, n_seeds))
    row_counts = np.stack([np.bincount(r, minlength=n_seeds) for r in rows])
    means = np.zeros(draws)
    for g in columns:
        # how often each of the group's columns is drawn, per draw: one draw of columns,
        # applied to every drawn seed
        cols = item_rng.integers(len(g), size=(draws, len(g)))
        col_counts = np.stack([np.bincount(c, minlength=len(g)) for c in cols])
        block = table[:, g]
        means += np.einsum("ds,si,di->d", row_counts, block, col_counts) / (n_seeds * len(g))
    means /= len(columns)
    return (round(float(np.percentile(means, 2.5)), 3),
            round(float(np.percentile(means, 97.5)), 3))
