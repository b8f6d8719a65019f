"""Reset options that ask for a held-out item the env would not give are refused, not
silently replaced by a training draw (options the env does not know are still ignored, as
PettingZoo's api_test requires)."""

from __future__ import annotations

import pytest

from team_envs.text import arithmetic, countdown, logic_grid


def test_a_held_out_index_without_the_test_split_is_refused() -> None:
    pytest.importorskip("reasoning_gym")
    from team_envs.text import reasoning

    env = reasoning.env(task="basic_arithmetic", n_agents=2, held_out=4, size=50)
    with pytest.raises(ValueError, match=r"options\['split'\] = 'test'"):
        env.reset(seed=0, options={"index": 2})
    env.reset(seed=0, options={"split": "test", "index": 2})
    assert env.unwrapped.episode.problem.details == {
        **env.unwrapped.episode.problem.details, "split": "test", "index": 2}
    env.reset(seed=0, options={"split": "train", "unknown": 1})
    assert env.unwrapped.episode.problem.details["split"] == "train"


@pytest.mark.parametrize("module", [arithmetic, countdown, logic_grid])
def test_a_test_split_is_refused_where_no_items_are_held_out(module) -> None:
    env = module.env(n_agents=2)
    with pytest.raises(ValueError, match="keeps no held-out split"):
        env.reset(seed=0, options={"split": "test", "index": 0})
    env.reset(seed=0, options={"split": "train", "options": 1})
    assert env.agent_selection == "agent_0"
