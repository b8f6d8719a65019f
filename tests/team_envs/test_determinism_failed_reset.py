"""A team env's refused reset changes nothing: the next episodes are those of a run without it."""

from __future__ import annotations

import pytest

from team_envs.symbolic import relay
from team_envs.text import arithmetic, floor_team

CASES = [  # the module, and a reset it refuses
    (floor_team, {"options": {"task_id": "C3", "variant": "v99"}}),  # refused after two draws
    (floor_team, {"seed": 5, "options": {"task_id": "no-such-task"}}),
    (arithmetic, {"seed": 5, "options": {"split": "test"}}),
    (relay, {"seed": 5, "options": {"split": "test"}}),
]


def _next_episodes(module, refused: dict | None) -> list[str]:
    """The text of two unseeded episodes after ``reset(seed=0)``, with ``refused`` tried
    between."""
    env = module.env()
    env.reset(seed=0)
    first = env.observe(env.agent_selection)["text"]
    if refused is not None:
        with pytest.raises(ValueError):
            env.reset(**refused)
        assert env.observe(env.agent_selection)["text"] == first  # the episode goes on
    texts = []
    for _ in range(2):
        env.reset()
        texts.append(env.observe(env.agent_selection)["text"])
    return texts


@pytest.mark.parametrize("module, refused", CASES,
                         ids=["floor_team-variant", "floor_team-seeded", "arithmetic", "relay"])
def test_a_refused_reset_leaves_the_random_stream_as_it_was(module, refused: dict) -> None:
    assert _next_episodes(module, refused) == _next_episodes(module, None)
