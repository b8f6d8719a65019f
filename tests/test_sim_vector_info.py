"""batch_infos builds exactly the vector info that Gymnasium's per-env ``_add_info`` builds."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.sim.vector_info import batch_infos


class _Reference(gym.vector.VectorEnv):
    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs


def _gymnasium_layout(infos: list[dict[str, Any] | None], num_envs: int) -> dict[str, Any]:
    reference, batched = _Reference(num_envs), {}
    for i, info in enumerate(infos):
        if info is not None:
            batched = reference._add_info(batched, info, i)
    return batched


def _assert_same(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        if isinstance(value, dict):
            _assert_same(ours[key], value)
        else:
            assert ours[key].dtype == value.dtype and ours[key].shape == value.shape, key
            if value.dtype.kind in "fc":  # NaN (a None in a float key) equals itself here
                np.testing.assert_array_equal(ours[key], value, err_msg=key)
            else:
                assert ours[key].tolist() == value.tolist(), key


def test_mixed_infos_match_gymnasium() -> None:
    infos = [
        {"turn": 1, "flags": (), "world_model": {"ok": True, "tokens": 3}, "score": 0.5},
        None,
        {"final_obs": "bye", "final_info": {"turn": 2, "flags": ("fault",)}, "turn": 0,
         "extra": np.arange(2), "score": 1, "code": np.int32(7)},
        {"world_model": {"ok": False}, "flags": ("a", "b"), "code": np.int32(2)},
    ]
    _assert_same(batch_infos(infos, 5), _gymnasium_layout(infos, 5))


def test_vector_env_step_infos_match_gymnasium_through_an_autoreset() -> None:
    envs = gym.make_vec("AgentWorld/Search-v0", num_envs=3, backend="scripted",
                        max_episode_steps=2, reveal_reference=True)
    vector = envs.unwrapped
    envs.reset(seed=0)
    call = '{"name": "web_search", "arguments": {"queries": ["x"]}}'
    envs.step([call, "The answer.", call])  # sub-env 1 ends and is reset
    step, captured = vector.sim.step, []
    vector.sim.step = lambda *args: captured.extend(step(*args)) or captured
    *_, infos = envs.step([call, call, call])  # sub-envs 0 and 2 hit the budget
    expected = [{"final_obs": r.observation, "final_info": r.info,
                 **vector.episodes[i].first_observation()[1]} if r.closes_episode else r.info
                for i, r in enumerate(captured)]
    _assert_same(infos, _gymnasium_layout(expected, 3))
    assert infos["_final_obs"].tolist() == [True, False, True]
    assert infos["final_info"]["termination"][[0, 2]].tolist() == ["step_budget_exhausted"] * 2



_VALUES = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False), st.booleans(),
                    st.text(max_size=3), st.none(), st.tuples(st.text(max_size=2)),
                    st.sampled_from([np.int32(3), np.float32(1.5)]))
_INFO = st.fixed_dictionaries({}, optional={
    "a": _VALUES, "b": _VALUES,
    "nested": st.fixed_dictionaries({}, optional={"x": _VALUES, "y": _VALUES})})


@given(st.lists(st.one_of(st.none(), _INFO), min_size=1, max_size=6))
@settings(max_examples=150, deadline=None)
def test_any_infos_match_gymnasium_or_fail_alike(infos: list[dict[str, Any] | None]) -> None:
    """Keys every sub-env has take the one-loop path, the others the per-env one; both agree
    with Gymnasium, and fail where a later value does not fit the first value's dtype."""
    try:
        theirs = _gymnasium_layout(infos, len(infos))
    except (TypeError, ValueError, OverflowError):
        with pytest.raises((TypeError, ValueError, OverflowError)):
            batch_infos(infos, len(infos))
        return
    _assert_same(batch_infos(infos, len(infos)), theirs)
