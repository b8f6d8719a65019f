"""GRPO advantages use the group's sample std by default, as the reference's verl code and TRL
do."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainers.common.objectives import group_advantages


def test_group_advantages_divide_by_the_bessel_corrected_std_of_the_group() -> None:
    """(R − μ)/(σ + 1e-6) with torch's std (verl's ``compute_grpo_outcome_advantage``, TRL's
    ``GRPOTrainer``); the population std made every advantage √(G/(G−1)) too large (1.15× at
    the default group of 4)."""
    rewards = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.2, 0.9])
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    expected = []
    for group in (0, 1, 2):
        values = torch.tensor(rewards[groups == group])
        expected += ((values - values.mean()) / (values.std() + 1e-6)).tolist()
    assert group_advantages(rewards, groups, clip=5.0) == pytest.approx(expected, rel=1e-9)
    assert group_advantages(rewards, groups, clip=5.0)[:4] == pytest.approx(
        [1.5, -0.5, -0.5, -0.5], rel=1e-5)


def test_the_population_std_is_a_setting() -> None:
    """``ddof=0`` (``Args.adv_std_ddof``), with which the committed TeamTR figures were
    measured, divides by the population std."""
    rewards, groups = np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(4)
    assert group_advantages(rewards, groups, clip=5.0, ddof=0) == pytest.approx(
        [np.sqrt(3), -1 / np.sqrt(3), -1 / np.sqrt(3), -1 / np.sqrt(3)], rel=1e-5)


def test_a_group_of_one_or_of_equal_rewards_gets_advantage_zero() -> None:
    rewards = np.array([0.7, 0.3, 0.3])
    with np.errstate(all="raise"):  # no 0/0 for the group of one
        advantages = group_advantages(rewards, np.array([0, 1, 1]), clip=5.0)
    assert advantages.tolist() == [0.0, 0.0, 0.0]
