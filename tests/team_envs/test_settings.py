"""Bad settings of the team envs give one ValueError that names the setting."""

from __future__ import annotations

import numpy as np
import pettingzoo
import pytest

import team_envs  # noqa: F401


@pytest.mark.parametrize(("env_id", "kwargs", "match"), [
    ("arithmetic_chain", {"rounds": True}, "rounds must be an integer >= 1, got True"),
    ("arithmetic_chain", {"steps": True}, "steps must be an integer from 1 to 32, got True"),
    ("countdown", {"max_cycles": False}, "max_cycles must be an integer >= 1, got False"),
    ("logic_grid", {"attributes": True}, "attributes must be an integer from 1 to 3, got True"),
    ("floor_team", {"executor_turns": True}, "executor_turns must be an integer >= 0"),
    ("floor_team", {"tasks": 5}, "tasks must be a task id or a list of them, got 5"),
    ("floor_team", {"tasks": [None, 5]}, r"unknown AgentFloor task ids \[None, 5\]"),
    ("floor_team", {"tasks": [["A1"]]}, r"unknown AgentFloor task ids \[\['A1'\]\]"),
    ("arithmetic_chain", {"roles": ["solver", 3]}, "roles must be role names"),
    ("compositional", {"roles": ["add", ["sub"]]}, "roles must be role names"),
    ("arithmetic_chain", {"role_prompts": {"solver": 5}}, "role_prompts must map role names"),
    ("logic_grid", {"role_prompts": "be brief"}, "role_prompts must map role names"),
    ("reasoning", {"config": "abc"}, "config must be a dict of basic_arithmetic's settings"),
    ("reasoning", {"config": [1]}, "config must be a dict"),
])
def test_a_bad_setting_is_named_in_a_value_error(env_id: str, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        pettingzoo.make("aec", f"team_envs/{env_id}-v0", **kwargs)


def test_a_task_that_is_not_a_name_gets_no_did_you_mean_hint() -> None:
    with pytest.raises(ValueError, match="not None") as error:
        pettingzoo.make("aec", "team_envs/reasoning-v0", task=None)
    assert "did you mean" not in str(error.value)


def test_numpy_integers_are_integers_for_every_integer_setting() -> None:
    env = pettingzoo.make("aec", "team_envs/arithmetic_chain-v0", n_agents=np.int64(2),
                          rounds=np.int64(2), max_message_chars=np.int32(50))
    env.reset(seed=0)
    env.step("x" * 100)
    assert env.unwrapped.episode.transcript[-1]["content"] == "x" * 50
    assert env.unwrapped.task.max_messages == 4


@pytest.mark.parametrize("task_id", ["", 0, []])
def test_a_floor_task_id_option_that_names_no_task_is_refused(task_id: object) -> None:
    env = pettingzoo.make("aec", "team_envs/floor_team-v0", tasks=["A1", "C3"])
    with pytest.raises(ValueError, match="options\\['task_id'\\] must be one of"):
        env.reset(seed=0, options={"task_id": task_id})
    env.reset(seed=0, options={"task_id": None})  # None: drawn, as without the option
    assert env.unwrapped.episode.problem.details["task_id"] in ("A1", "C3")
