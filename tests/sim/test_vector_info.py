"""The vector env's infos in Gymnasium's layout, through an autoreset, and info_at, their
inverse."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.sim.vector_info import batch_infos, info_at


def _assert_same(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        if isinstance(value, dict):
            _assert_same(ours[key], value)
        else:
            assert ours[key].dtype == value.dtype and ours[key].shape == value.shape, key
            assert ours[key].tolist() == value.tolist(), key


def test_vector_env_step_infos_are_gymnasiums_through_an_autoreset() -> None:
    envs = gym.make_vec("AgentWorld/Search-v0", num_envs=3, backend="scripted",
                        max_episode_steps=2, reveal_reference=True)
    vector = envs.unwrapped
    envs.reset(seed=0)
    call = '{"name": "web_search", "arguments": {"queries": ["x"]}}'
    envs.step([call, "The answer.", call])  # sub-env 1 ends and is reset
    advance, captured = vector.sim.advance, []
    vector.sim.advance = lambda *args: (captured.extend(advance(*args)[0]), (captured, None))[1]
    *_, infos = envs.step([call, call, call])  # sub-envs 0 and 2 hit the budget
    expected = [{"final_obs": r.observation, "final_info": r.info,
                 **vector.episodes[i].first_observation()[1]} if r.closes_episode else r.info
                for i, r in enumerate(captured)]
    _assert_same(infos, batch_infos(expected, 3))
    assert infos["_final_obs"].tolist() == [True, False, True]
    assert infos["final_info"]["termination"][[0, 2]].tolist() == ["step_budget_exhausted"] * 2



_INFO = st.fixed_dictionaries({}, optional={
    "turn": st.integers(-5, 5), "text": st.text(max_size=3),
    "flags": st.tuples(st.text(max_size=2)),
    "verdict": st.fixed_dictionaries({}, optional={"passed": st.booleans(), "score": st.floats(
        allow_nan=False)})})


@given(st.lists(st.one_of(st.none(), _INFO), min_size=1, max_size=6))
@settings(max_examples=150, deadline=None)
def test_info_at_gives_each_sub_envs_info_back(infos: list[dict[str, Any] | None]) -> None:
    batched = batch_infos(infos, len(infos))
    for index, info in enumerate(infos):
        own = info_at(batched, index)
        assert own == (info or {})
        assert not any(isinstance(v, np.generic) for v in own.values())
