"""Team envs at their edges: conflicting settings, turn text, Parallel actions, the end of an
episode, and copies made mid-episode."""

from __future__ import annotations

import copy
import importlib
import pickle

import pettingzoo
import pytest

import team_envs
from team_envs.core import ResetNeeded
from team_envs.symbolic.compositional import CompositionalTask
from team_envs.text.floor_team import FloorTeamTask

TEXT_ROLES = {  # the text teams that take roles (floor_team's are fixed), with some kwargs
    "team_envs/arithmetic_chain-v0": {},
    "team_envs/logic_grid-v0": {},
    "team_envs/countdown-v0": {},
    "team_envs/reasoning-v0": {"task": "chain_sum", "held_out": 2, "size": 40},
}
TEXT_IDS = [env_id for env_id in team_envs.ENV_IDS if ".text." in team_envs.ENV_MODULES[env_id]]
SMALL = {"team_envs/reasoning-v0": TEXT_ROLES["team_envs/reasoning-v0"],
         "team_envs/floor_team-v0": {"tasks": ["A1"]}}
"""Quick settings of the envs that are slow to build with their defaults."""


def test_every_text_env_is_covered() -> None:
    assert set(TEXT_ROLES) | {"team_envs/floor_team-v0"} == set(TEXT_IDS)


@pytest.mark.parametrize("env_id", TEXT_ROLES)
def test_text_teams_refuse_an_n_agents_other_than_the_number_of_roles(env_id: str) -> None:
    roles = ["solver", "solver", "answerer"]
    with pytest.raises(ValueError, match="n_agents=5 but 3 roles"):
        pettingzoo.make("aec", env_id, n_agents=5, roles=roles, **TEXT_ROLES[env_id])
    agreeing = pettingzoo.make("aec", env_id, n_agents=3, roles=roles, **TEXT_ROLES[env_id])
    roles_only = pettingzoo.make("aec", env_id, roles=roles, **TEXT_ROLES[env_id])
    assert len(agreeing.possible_agents) == len(roles_only.possible_agents) == 3
    assert len(pettingzoo.make("aec", env_id, **TEXT_ROLES[env_id]).possible_agents) == 3


def test_floor_team_has_a_fixed_team() -> None:
    with pytest.raises(TypeError, match="n_agents"):
        pettingzoo.make("aec", "team_envs/floor_team-v0", n_agents=5)


@pytest.mark.parametrize("env_id", [*TEXT_ROLES, "team_envs/compositional-v0"])
def test_an_empty_list_of_roles_is_refused(env_id: str) -> None:
    with pytest.raises(ValueError, match="roles must name 2 to 8 roles"):
        pettingzoo.make("aec", env_id, roles=[], **TEXT_ROLES.get(env_id, {}))


def test_compositional_team_size_is_not_replaced_by_the_default() -> None:
    with pytest.raises(ValueError, match="n_agents must be an integer from 2 to 8, got 0"):
        CompositionalTask(n_agents=0)
    assert CompositionalTask(roles=["sub", "relay"]).roles == ("sub", "relay")


def test_floor_team_refuses_an_empty_task_list() -> None:
    with pytest.raises(ValueError, match="tasks is empty"):
        FloorTeamTask(tasks=[])
    assert len(FloorTeamTask().tasks) == 30


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_only_the_speaker_is_told_it_is_its_turn(env_id: str) -> None:
    env = pettingzoo.make("parallel", env_id, **SMALL.get(env_id, {}))
    observations, infos = env.reset(seed=0)
    speaker = next(name for name in env.agents if infos[name]["active"])
    role = env.unwrapped.task.roles[int(speaker.split("_")[1])]
    for name, observation in observations.items():
        last_line = observation["text"].splitlines()[-1]
        expected = "It is your turn." if name == speaker else f"It is {speaker}'s turn ({role})."
        assert last_line.endswith(expected), (name, last_line)
    while env.agents:
        env.step({})
    for name in env.possible_agents:
        assert env.aec_env.observe(name)["text"].endswith("The conversation has ended.")


@pytest.mark.parametrize("env_id", ["team_envs/relay-v0", "team_envs/arithmetic_chain-v0"])
def test_parallel_step_takes_a_dict_keyed_by_agent_names(env_id: str) -> None:
    env = pettingzoo.make("parallel", env_id)
    env.reset(seed=0)
    for actions in (None, ["a"], "a", 3):
        with pytest.raises(TypeError, match="actions must be a dict"):
            env.step(actions)
    for actions in ({"agent_99": "a"}, {"Agent_0": "a"}, {0: "a"}):
        with pytest.raises(ValueError, match="actions for unknown agents"):
            env.step(actions)
    assert env.aec_env.observe("agent_0")["turn"] == 0  # nothing was played
    speaker = env.aec_env.agent_selection
    others = {name: "ignored" for name in env.agents if name != speaker}
    _, _, _, _, infos = env.step(others)  # known non-speakers: ignored, the speaker is missing
    assert infos[speaker]["invalid_action"] is True


@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_last_after_the_episode_ended_raises_reset_needed(env_id: str) -> None:
    env = pettingzoo.make("aec", env_id, **SMALL.get(env_id, {}))
    env.reset(seed=0)
    for _ in env.agent_iter():
        env.step(None)
    for last in (env.last, env.unwrapped.last):
        with pytest.raises(ResetNeeded, match="episode has ended"):
            last()
    env.reset(seed=1)
    assert env.last()[1] == 0.0


def _actions(env_id: str, env: pettingzoo.AECEnv, turn: int):
    """A deterministic message for ``turn``: the answer in the last turns of an arithmetic
    chain (so that the reward is 1), the action space's samples elsewhere."""
    episode = env.unwrapped.episode
    if env_id == "team_envs/arithmetic_chain-v0":
        return f"ANSWER: {episode.problem.answer}"
    space = env.action_space(env.agent_selection)
    space.seed(turn)
    return space.sample()


def _play_aec(env_id: str, env: pettingzoo.AECEnv, turn: int) -> tuple[float, str]:
    rewards = {}
    for name in env.agent_iter():
        _, rewards[name], terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else _actions(env_id, env, turn))
        turn += 1
    return rewards["agent_0"], env.unwrapped.episode.render()


COPIES = {"deepcopy": copy.deepcopy, "pickle": lambda env: pickle.loads(pickle.dumps(env))}


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_an_aec_copy_made_mid_episode_goes_on_with_it(env_id: str, how: str) -> None:
    env = pettingzoo.make("aec", env_id, **SMALL.get(env_id, {}))
    env.reset(seed=3)
    env.step(_actions(env_id, env, 0))
    clone = COPIES[how](env)
    assert clone.agent_selection == env.agent_selection
    assert repr(clone.observe(clone.agent_selection)) == repr(env.observe(env.agent_selection))
    copied = _play_aec(env_id, clone, 1)
    assert _play_aec(env_id, env, 1) == copied
    if env_id == "team_envs/arithmetic_chain-v0":
        assert copied[0] == 1.0


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_a_parallel_copy_made_mid_episode_goes_on_with_it(env_id: str, how: str) -> None:
    module = importlib.import_module(team_envs.ENV_MODULES[env_id])
    env = module.parallel_env(**SMALL.get(env_id, {}))
    env.reset(seed=3)

    def play(parallel, turn: int) -> tuple[float, str]:
        rewards = {}
        while parallel.agents:
            speaker = parallel.aec_env.agent_selection
            _, rewards, *_ = parallel.step({speaker: _actions(env_id, parallel.aec_env, turn)})
            turn += 1
        return rewards["agent_0"], parallel.aec_env.episode.render()

    speaker = env.aec_env.agent_selection
    env.step({speaker: _actions(env_id, env.aec_env, 0)})
    clone = COPIES[how](env)
    assert clone.agents == env.agents
    copied = play(clone, 1)
    assert play(env, 1) == copied
    if env_id == "team_envs/arithmetic_chain-v0":
        assert copied[0] == 1.0


def test_a_copy_is_independent_of_its_original() -> None:
    env = pettingzoo.make("aec", "team_envs/arithmetic_chain-v0")
    env.reset(seed=3)
    clone = copy.deepcopy(env)
    clone.step("mine")
    assert env.unwrapped.episode.transcript == []
    assert clone.unwrapped.episode.transcript[0]["content"] == "mine"
