"""The simulated-RL example runs offline and its policy learns from the simulated rewards."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.examples import quick_check, run_example


def _curve(output: str) -> list[float]:
    """The mean reward of each update, as the script prints it."""
    return [float(r) for r in re.findall(r"^update +\d+: mean reward (\S+)", output, re.M)]


def test_the_example_policy_improves_on_the_scripted_backend(tmp_path: Path) -> None:
    """On os, the default, whose rewards are for actions: an answer needs an observation that
    showed it, which the placeholder never gives (search, the default before, pays 0 offline,
    so the default run learned nothing)."""
    args = ("--updates", "30", "--num-envs", "8")  # os by default: search paid 0 offline
    curve = _curve(run_example("simulated_rl.py", *args, cwd=tmp_path))
    assert len(curve) == 30 and all(0.0 <= r <= 1.0 for r in curve)
    assert sum(curve[-5:]) / 5 > sum(curve[:5]) / 5 + 0.15
    assert _curve(run_example("simulated_rl.py", *args, cwd=tmp_path)) == curve


def test_the_quick_check_learns_something_visible(tmp_path: Path) -> None:
    """At least one episode, a reward that is not 0 everywhere (a non-zero REINFORCE step),
    preferences that moved."""
    output = run_example("simulated_rl.py", *quick_check("simulated_rl.py"), cwd=tmp_path)
    learned = re.search(r"learned from (\d+) episodes: (\d+) action preferences moved", output)
    assert learned and int(learned[1]) >= 1 and int(learned[2]) > 0
    assert any(_curve(output))
