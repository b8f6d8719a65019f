"""RayVectorEnv's call, get_attr, set_attr and render on a real local Ray runtime: a
SyncVectorEnv's answers over the same env ids, in sub-env order across actors; errors and actor
faults raise, naming the actor."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from agentworld_envs.distributed import RayVectorEnv
from tests.distributed.test_ray_vector import (
    BOX,
    FLOOR,
    LOOKUP,
    MCP,
    BoxProbe,
    first_call,
    kill_and_wait,
)
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")


class CallProbe(BoxProbe):
    """:class:`BoxProbe` with a method taking arguments, a ``bonus`` its reward adds, a method
    that raises where ``fragile`` is set, and ``rgb_array`` frames too large for Ray to send
    inline."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}
    bonus, fragile = 0.0, False

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = super().step(action)
        return observation, reward + self.bonus, terminated, truncated, info

    def scaled(self, x: int, *, by: int = 1) -> float:
        return (self.turn + x) * by + float(self._observation()[0])

    def check(self) -> str:
        if self.fragile:
            raise ValueError("this sub-env is fragile")
        return "fine"

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return np.full((300, 400, 3), self.np_random.integers(256), np.uint8)


if "RayCallProbe/Call-v0" not in gym.registry:
    gym.register("RayCallProbe/Call-v0", entry_point=CallProbe)
CALL = "tests.distributed.test_ray_vector_calls:RayCallProbe/Call-v0"
"""The probe's id for actors, which import this module to register it."""


@contextlib.contextmanager
def beside_sync(env_id: str, actor_options: dict[str, Any] | None = None, **kwargs: Any
                ) -> Iterator[tuple[RayVectorEnv, gym.vector.VectorEnv]]:
    """Four sub-envs on 2 actors and the same in a SyncVectorEnv, both reset with seed 5."""
    envs = RayVectorEnv(env_id, 4, num_actors=2, actor_options=actor_options, **kwargs)
    sync = gym.make_vec(env_id.rpartition(":")[2], num_envs=4, vectorization_mode="sync",
                        **kwargs)
    try:
        envs.reset(seed=5)
        sync.reset(seed=5)
        yield envs, sync
    finally:
        envs.close()
        sync.close()


def test_call_get_attr_and_set_attr_answer_as_sync_vector_env() -> None:
    with beside_sync(CALL) as (envs, sync):
        assert envs.call("scaled", 2, by=3) == sync.call("scaled", 2, by=3)
        assert len(set(envs.call("scaled", 2, by=3))) == 4  # each sub-env's own answer
        assert envs.get_attr("turn") == sync.get_attr("turn") == (0, 0, 0, 0)
        for values in ([0.0, 1.0, 2.0, 3.0], 5.0, (6.0, 7.0, 8.0, 9.0)):
            envs.set_attr("bonus", values)
            sync.set_attr("bonus", values)
            assert envs.get_attr("bonus") == sync.get_attr("bonus")
        rewards = envs.step([0] * 4)[1]  # the sub-envs that step are the ones set
        assert rewards.tolist() == sync.step([0] * 4)[1].tolist() == [7.0, 8.0, 9.0, 10.0]
        for bad in ([1.0] * 3, [1.0] * 5):
            for vector in (envs, sync):
                with pytest.raises(ValueError, match=f"Got `{len(bad)}` values for 4 "):
                    vector.set_attr("bonus", bad)
        assert envs.get_attr("bonus") == (6.0, 7.0, 8.0, 9.0)
        envs.close()
        for use in (lambda: envs.call("scaled", 1), lambda: envs.get_attr("turn"),
                    lambda: envs.set_attr("bonus", 1.0), envs.render):
            with pytest.raises(gym.error.ClosedEnvironmentError):
                use()


@pytest.mark.parametrize(("env_id", "kwargs"), [MCP, FLOOR], ids=["mcp", "floor"])
def test_both_families_answer_and_render_as_sync_vector_env(env_id: str,
                                                            kwargs: dict[str, Any]) -> None:
    """Across 2 actors, in ``ansi`` mode: the candidate actions, the transcripts, the render
    mode and the metadata (those of the actors' own vector env: the native one for MCP)."""
    with beside_sync(env_id, render_mode="ansi", **kwargs) as (envs, sync):
        assert envs.render_mode == sync.render_mode == "ansi"
        in_process = gym.make_vec(env_id, num_envs=4, render_mode="ansi", **kwargs)
        assert envs.metadata == in_process.metadata
        in_process.close()
        candidates = envs.call("candidate_actions")
        assert candidates == sync.call("candidate_actions")
        actions = [first_call(c) for c in candidates] if env_id == MCP[0] else [LOOKUP] * 4
        envs.step(actions)
        sync.step(actions)
        renders = envs.render()
        assert renders == sync.render() and len(renders) == 4 and all(renders)
        assert envs.get_attr("render_mode") == sync.get_attr("render_mode") == ("ansi",) * 4


def test_large_frames_equal_sync_vector_envs_and_are_writable() -> None:
    with beside_sync(CALL, render_mode="rgb_array") as (envs, sync):
        assert envs.render_mode == sync.render_mode == "rgb_array"
        frames, expected = envs.render(), sync.render()
        assert len(frames) == 4
        for frame, want in zip(frames, expected, strict=True):
            assert np.array_equal(frame, want) and frame.flags.writeable


def test_without_a_render_mode_render_does_what_sync_vector_env_does() -> None:
    """AgentFloor envs render None; an env with no ``render`` of its own raises, and the error
    names the actor."""
    with beside_sync(FLOOR[0]) as (envs, sync):
        assert envs.render_mode is sync.render_mode is None
        assert envs.render() == sync.render() == (None,) * 4
    with beside_sync(BOX) as (envs, sync):
        with pytest.raises(NotImplementedError):
            sync.render()
        with pytest.raises(NotImplementedError, match=r"actor 0 \(sub-envs 0-1\), render\(\)"):
            envs.render()


def test_an_error_in_a_sub_env_is_raised_with_its_type_naming_the_actor() -> None:
    with beside_sync(CALL) as (envs, sync):
        for vector in (envs, sync):
            vector.set_attr("fragile", [False, False, False, True])
            with pytest.raises(ValueError, match="this sub-env is fragile"):
                vector.call("check")
        with pytest.raises(ValueError, match=r"^actor 1 \(sub-envs 2-3\), call\('check'\): "):
            envs.call("check")
        with pytest.raises(AttributeError, match=r"^actor 0 \(sub-envs 0-1\), .*'missing'"):
            envs.get_attr("missing")
        envs.set_attr("fragile", False)
        assert envs.call("check") == ("fine",) * 4  # the env goes on


def test_a_restarted_actor_fails_the_call_and_the_next_step_reports_its_episodes() -> None:
    """Its fresh sub-envs do not answer for the lost episodes."""
    with beside_sync(CALL) as (envs, _):
        envs.set_attr("bonus", 1.0)
        kill_and_wait(envs.actors[1])
        with pytest.raises(RuntimeError, match=r"actor 1 \(sub-envs 2-3\), get_attr\('bonus'\)"
                                               r".*restarted and lost its episodes"):
            envs.get_attr("bonus")
        *_, truncated, info = envs.step([0] * 4)
        assert truncated.tolist() == [False, False, True, True]
        assert "actor 1" in info["fault"][2]
        assert envs.get_attr("bonus") == (1.0, 1.0, 0.0, 0.0)  # actor 1's sub-envs are new


def test_an_actor_that_died_for_good_fails_the_call_naming_it() -> None:
    with beside_sync(FLOOR[0], actor_options={"max_restarts": 0}) as (envs, _):
        kill_and_wait(envs.actors[0])
        with pytest.raises(RuntimeError, match=r"actor 0 failed during get_attr\('max_steps'\): "
                                               r"ActorDiedError"):
            envs.get_attr("max_steps")
