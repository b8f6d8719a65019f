"""An agent message of any content never crashes a team env."""

from __future__ import annotations

import importlib

import gymnasium
import numpy as np
import pettingzoo
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import team_envs
from team_envs.core import ResetNeeded

MESSAGES = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=50),
    st.integers(min_value=-10**30, max_value=10**30),
    st.floats(allow_nan=True),
    st.none(),
    st.booleans(),
    st.lists(st.integers(min_value=-5, max_value=30), max_size=6),
    st.lists(st.text(max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.sampled_from([
        '{"name": "lookup_record", "arguments": {"record_id": "P104"}}',
        '<tool_call>{"name": "submit_decision", "arguments": {"decision": 7}}</tool_call>',
        '<tool_call>{"name": ', "ANSWER: " + "9" * 5000, "NEXT: agent_99", "NEXT:",
        "ANSWER: __import__('os').system('true')", "ANSWER: " + "(" * 1000,
        np.array([1, 2, 3]), np.array([[0]]), np.array(["a"]), np.float32(1.0),
        "x" * 100_000,
    ]),
)


@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(MESSAGES, min_size=1, max_size=12), seed=st.integers(0, 2**31 - 1))
def test_any_message_content_is_handled(env_id: str, messages: list, seed: int) -> None:
    env = pettingzoo.make("aec", env_id)
    env.reset(seed=seed)
    steps = 0
    for name in env.agent_iter(200):
        observation, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        assert observation in env.observation_space(name)
        env.step(messages[steps % len(messages)])
        steps += 1
    assert not env.agents
    assert isinstance(reward, float) and 0.0 <= reward <= 1.0


@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_invalid_messages_are_flagged(env_id: str) -> None:
    env = pettingzoo.make("aec", env_id)
    env.reset(seed=0)
    speaker = env.agent_selection
    env.step({"not": "a message"})
    assert env.infos[speaker]["invalid_action"] is True


@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_parallel_env_survives_missing_and_garbage_actions(env_id: str) -> None:
    env = pettingzoo.make("parallel", env_id)
    env.reset(seed=0)
    for turn in range(200):
        if not env.agents:
            break
        env.step({} if turn % 2 else {name: object() for name in env.agents})
    assert not env.agents


def _raw(env_id: str) -> pettingzoo.AECEnv:
    return importlib.import_module(team_envs.ENV_MODULES[env_id]).raw_env()


@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_use_before_reset_raises_reset_needed_in_every_form(env_id: str) -> None:
    raw, parallel = _raw(env_id), pettingzoo.make("parallel", env_id)
    calls = [lambda: raw.step("hello"), lambda: raw.observe("agent_0"), raw.last,
             lambda: parallel.step({"agent_0": "hello"})]
    for call in calls:
        with pytest.raises(ResetNeeded, match=r"reset\(\) needs to be called before"):
            call()
        with pytest.raises(AssertionError):  # PettingZoo's order-enforcing convention
            call()
        with pytest.raises(gymnasium.error.ResetNeeded):  # and Gymnasium's
            call()
    with pytest.raises(AssertionError, match="reset"):  # the wrapped AEC form, PettingZoo's own
        pettingzoo.make("aec", env_id).step("hello")
    with pytest.raises(AttributeError, match="before reset"):  # as PettingZoo's wrapped last()
        pettingzoo.make("aec", env_id).last()


@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_the_wrapped_last_is_the_envs_own(env_id: str) -> None:
    env = pettingzoo.make("aec", env_id)
    assert isinstance(env, pettingzoo.utils.wrappers.OrderEnforcingWrapper)
    env.reset(seed=2)
    env.step(None if env.terminations[env.agent_selection] else "a")
    wrapped, raw = env.last(), env.unwrapped.last()
    assert repr(wrapped) == repr(raw)
    assert env.last(observe=False) == (None, *raw[1:])


@pytest.mark.parametrize("env_id", team_envs.ENV_IDS)
def test_step_after_the_episode_ended_raises_reset_needed(env_id: str) -> None:
    parallel = pettingzoo.make("parallel", env_id)
    parallel.reset(seed=0)
    while parallel.agents:
        parallel.step({})
    with pytest.raises(ResetNeeded, match="episode has ended"):
        parallel.step({})
    raw = _raw(env_id)
    raw.reset(seed=0)
    while raw.agents:
        raw.step(None)
    with pytest.raises(ResetNeeded, match="episode has ended"):
        raw.step(None)
    parallel.reset(seed=1)  # and a reset makes either usable again
    assert parallel.agents and parallel.step({})[0]
