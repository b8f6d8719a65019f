"""Bad settings of the simulated envs fail at once, naming what is wrong."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.registration import env_id
from agentworld_envs.sim.env import AgentWorldEnv
from agentworld_envs.sim.vector import AgentWorldVectorEnv


@pytest.mark.parametrize("max_steps", [0, -1, 2.5, True, "3"])
def test_a_step_budget_that_is_no_positive_integer_is_refused(max_steps) -> None:
    """``0`` was taken as "not given" (the domain's budget) and ``-1`` truncated at step 1."""
    with pytest.raises(ValueError, match="max_steps must be an integer >= 1"):
        AgentWorldEnv("terminal", max_steps=max_steps, backend="scripted")
    with pytest.raises(ValueError, match="max_steps must be an integer >= 1"):
        AgentWorldVectorEnv("terminal", num_envs=2, max_steps=max_steps, backend="scripted")
    if max_steps != -1:  # gym.make's "no TimeLimit" (below)
        with pytest.raises(ValueError, match="max_episode_steps must be an integer >= 1"):
            AgentWorldVectorEnv("terminal", num_envs=2, max_episode_steps=max_steps,
                                backend="scripted")


def test_a_numpy_integer_budget_is_a_budget() -> None:
    env = AgentWorldEnv("terminal", max_steps=np.int64(2), backend="scripted")
    assert env.max_steps == 2 and type(env.max_steps) is int


@pytest.mark.parametrize(("mask", "error", "message"), [
    ([0, 2], TypeError, "dtype bool"),  # indices, once read as the mask [False, True, False]
    ([1, 0, 1], TypeError, "dtype bool"),
    ([True], ValueError, r"shape \(3,\)"),  # once reset sub-env 0 alone
    ([True] * 5, ValueError, r"shape \(3,\)"),  # once an IndexError
    (np.ones((3, 1), dtype=bool), ValueError, r"shape \(3,\)"),
])
def test_a_reset_mask_must_be_one_boolean_per_sub_env(mask, error, message) -> None:
    envs = gym.make_vec(env_id("search"), num_envs=3, backend="scripted")
    _, first = envs.reset(seed=0)
    with pytest.raises(error, match=message):
        envs.reset(seed=7, options={"reset_mask": mask})
    _, info = envs.reset(seed=7, options={"reset_mask": np.array([True, False, True])})
    assert list(info["_scenario_id"]) == [True, False, True]
    assert envs.unwrapped.episodes[1].scenario.id == first["scenario_id"][1]


def test_a_prompt_directory_without_the_domains_prompt_fails_at_make_time(tmp_path) -> None:
    """It failed at the first reset, past ``gym.make`` (and a vector env's construction)."""
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "system_prompt.txt").write_text("You simulate {tool_definitions}.")
    with pytest.raises(ValueError, match=r"has no mcp/system_prompt\.txt"):
        gym.make(env_id("mcp"), backend="scripted", prompts=str(tmp_path))
    with pytest.raises(ValueError, match=r"has no mcp/system_prompt\.txt"):
        gym.make_vec(env_id("mcp"), num_envs=2, backend="scripted", prompts=tmp_path)
    env = gym.make(env_id("search"), backend="scripted", prompts=str(tmp_path))
    env.reset(seed=0)  # the domain it has is served
    gym.make(env_id("floor"), backend="scripted", prompts=str(tmp_path))  # floor's is ours


def test_an_empty_prompts_setting_is_refused_not_read_as_the_current_directory(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "system_prompt.txt").write_text("You simulate {tool_definitions}.")
    monkeypatch.chdir(tmp_path)  # once the silent choice
    with pytest.raises(ValueError, match="empty prompts setting"):
        gym.make(env_id("mcp"), backend="scripted", prompts="")
    monkeypatch.setenv("AGENTWORLD_PROMPTS", "")  # an empty variable is unset, as before
    assert gym.make(env_id("mcp"), backend="scripted").unwrapped.sim.prompts.is_builtin


def test_max_episode_steps_minus_one_leaves_the_domains_budget_as_gym_make_does() -> None:
    """It was taken as a budget of -1: every episode truncated at its first step."""
    budget = gym.spec(env_id("terminal")).max_episode_steps
    envs = gym.make_vec(env_id("terminal"), num_envs=2, backend="scripted", max_episode_steps=-1)
    single = gym.make(env_id("terminal"), backend="scripted", max_episode_steps=-1)
    assert envs.unwrapped.max_steps == single.unwrapped.max_steps == budget
    envs.reset(seed=0)
    _, _, terminated, truncated, _ = envs.step(['[{"keystrokes": "", "duration": 1}]'] * 2)
    assert not (terminated.any() or truncated.any())


def test_get_and_set_attr_reach_each_sub_envs_generator_as_sync_vector_envs_do() -> None:
    """``get_attr("np_random")`` raised AttributeError; ``set_attr`` stored the generator on the
    sub-env view, where no reset read it."""
    def ids(envs) -> list[str]:
        envs.set_attr("np_random", [np.random.default_rng(5), np.random.default_rng(5)])
        return list(envs.reset()[1]["scenario_id"])

    native = gym.make_vec(env_id("search"), num_envs=2, backend="scripted")
    sync = gym.vector.SyncVectorEnv(
        [lambda: gym.make(env_id("search"), backend="scripted")] * 2,
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    for envs in (native, sync):
        envs.reset(seed=0)
    assert native.get_attr("np_random")[0] is native.unwrapped.episodes[0].rng
    assert ids(native) == ids(sync) and len(set(ids(native))) == 1
