"""Bad settings of the simulated envs, through the Python API: one error that names the setting
and says what it takes, before anything is built; never a deep TypeError, never a silent value."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.registration import env_id
from agentworld_envs.sim.config import SimConfigError

TERMINAL = env_id("terminal")
OPENAI = {"name": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}


def _make_vec(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the scripted backend's placeholder warning
        return gym.make_vec(TERMINAL, **{"num_envs": 2, "backend": "scripted", **kwargs})


@pytest.mark.parametrize(("setting", "value", "message"), [
    # pydantic read True as 1: a one-character action limit, a one-second call, one fault
    ("max_action_chars", True, "setting max_action_chars: must be a number, got True"),
    ("timeout_s", True, "setting timeout_s: must be a number, got True"),
    ("max_faults", True, "setting max_faults: must be a number, got True"),
    ("max_observation_chars", False, "setting max_observation_chars: must be a number, got Fa"),
    # -5 stopped nothing, without a word (-1 is the flags' "never")
    ("max_faults", -5, "setting max_faults: must be at least -1, got -5"),
    # recorded nothing, without a word
    ("record_path", "", "setting record_path: must name a file"),
    # a backend's own setting was refused without saying whose: the env has a timeout_s too
    ("backend", {**OPENAI, "timeout_s": -1},
     "setting backend: backend 'openai': timeout_s must be a number > 0, not -1"),
    ("judge_backend", {**OPENAI, "timeout_s": -1},
     "setting judge_backend: backend 'openai': timeout_s must be a number > 0, not -1"),
    ("backend", {"model": "m"}, 'setting backend: a backend config needs a "name": one of '),
    ("backend", "nope", "setting backend: unknown backend 'nope'"),
])
def test_a_bad_env_setting_is_refused_naming_it(setting: str, value, message: str) -> None:
    kwargs = {"backend": "scripted", setting: value}
    with pytest.raises(SimConfigError, match=message):
        gym.make(TERMINAL, **kwargs)
    with pytest.raises(SimConfigError, match=message):
        _make_vec(**kwargs)


def test_minus_one_fault_budget_and_numpy_numbers_are_still_taken() -> None:
    env = gym.make(TERMINAL, backend="scripted", max_faults=-1, timeout_s=np.float64(5),
                   max_action_chars=np.int64(100))
    config = env.unwrapped.config
    assert (config.max_faults, config.timeout_s, config.max_action_chars) == (-1, 5.0, 100)


@pytest.mark.parametrize("num_envs", [None, "2", 2.0, True, [2]])
def test_a_sub_env_count_that_is_no_integer_is_refused_by_name(num_envs) -> None:
    """``'<' not supported``, ``'float' object cannot be interpreted as an integer``..."""
    with pytest.raises(ValueError, match=r"^num_envs must be an integer >= 1, got "):
        _make_vec(num_envs=num_envs)


@pytest.mark.parametrize(("streams", "error", "message"), [
    (3, TypeError, "sampling_streams must be a list of 2 integers >= 0, got 3"),
    ("12", TypeError, "sampling_streams must be a list of 2 integers"),  # was streams 1 and 2
    ([0.5, 1.5], ValueError, r"sampling_streams\[0\] must be an integer >= 0, got 0.5"),  # 0, 1
    ([0, -1], ValueError, r"sampling_streams\[1\] must be an integer >= 0, got -1"),
    ([0, None], ValueError, r"sampling_streams\[1\] must be an integer >= 0, got None"),
])
def test_sampling_streams_must_be_one_integer_per_sub_env(streams, error, message) -> None:
    with pytest.raises(error, match=message):
        _make_vec(sampling_streams=streams)


@pytest.mark.parametrize("seed", [2.0, "12", {"a": 1}, [0, "1"], True])
def test_a_vector_reset_seed_that_is_no_int_is_refused_by_name(seed) -> None:
    """``object of type 'float' has no len()``, or a str of two characters taken as two seeds."""
    envs = _make_vec()
    with pytest.raises(TypeError, match=r"^seed must be an int, None or a list of 2 ints"):
        envs.reset(seed=seed)


def test_a_vector_reset_takes_numpy_ints_in_a_seed_list_as_it_does_one() -> None:
    """A list of numpy ints failed in Gymnasium's seeding, while one numpy int was taken."""
    envs, twin = _make_vec(), _make_vec()
    listed = envs.reset(seed=[np.int64(3), np.int32(4)])
    assert listed[0] == twin.reset(seed=np.int64(3))[0]


@pytest.mark.parametrize("actions", ["ab", None, 3])
def test_vector_step_actions_must_be_one_per_sub_env(actions) -> None:
    """A str of ``num_envs`` characters was played as one character per sub-env."""
    envs = _make_vec()
    envs.reset(seed=0)
    with pytest.raises(TypeError, match="^actions must hold one action per sub-env, got "):
        envs.step(actions)
    assert all(len(episode.transcript) == 0 for episode in envs.unwrapped.episodes)


def test_an_unsupported_render_mode_says_which_are_supported() -> None:
    with pytest.raises(ValueError, match="unsupported render_mode 'human'; use 'ansi' or None"):
        gym.make(TERMINAL, backend="scripted", render_mode="human")
    with pytest.raises(ValueError, match="unsupported render_mode 3; use 'ansi' or None"):
        _make_vec(render_mode=3)


def test_a_malformed_scenario_in_reset_options_is_refused_in_one_line() -> None:
    """pydantic's report took one line per problem and a line of its link for each."""
    env = gym.make("AgentWorld/Search-v0", backend="scripted")
    with pytest.raises(ValueError) as refused:
        env.reset(seed=0, options={"scenario": {"id": "half", "max_steps": "many"}})
    message = str(refused.value)
    assert "\n" not in message and message.startswith(
        'options["scenario"] is no valid search scenario: '), message
    assert "instruction: " in message and "max_steps: " in message, message
