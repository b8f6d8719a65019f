"""The simulated-RL example runs offline and its policy learns from the simulated rewards."""

from __future__ import annotations

import re

import pytest

from tests.helpers.examples import load_example
from tests.test_examples import quick_check


def test_the_example_policy_improves_on_the_scripted_backend() -> None:
    """On os, whose rewards are for actions: an answer needs an observation that showed it,
    which the placeholder never gives (search pays 0 offline)."""
    module = load_example("simulated_rl")
    curve = module.main(["--domain", "os", "--updates", "30", "--num-envs", "8"])
    assert len(curve) == 30 and all(0.0 <= r <= 1.0 for r in curve)
    assert sum(curve[-5:]) / 5 > sum(curve[:5]) / 5 + 0.15
    assert module.main(["--domain", "os", "--updates", "30", "--num-envs", "8"]) == curve


def test_the_quick_check_learns_something_visible(capsys: pytest.CaptureFixture[str]) -> None:
    """At least one episode, a reward that is not 0 everywhere (a non-zero REINFORCE step),
    preferences that moved."""
    curve = load_example("simulated_rl").main(quick_check("simulated_rl.py"))
    learned = re.search(r"learned from (\d+) episodes: (\d+) action preferences moved",
                        capsys.readouterr().out)
    assert learned and int(learned[1]) >= 1 and int(learned[2]) > 0
    assert any(curve)
