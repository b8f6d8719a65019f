"""AgentWorldVectorEnv's call, get_attr, set_attr and render answer as a SyncVectorEnv of the
single envs of the same id does."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.sim.vector import AgentWorldVectorEnv

MCP = "AgentWorld/MCP-v0"


def native_and_sync(**kwargs: object) -> tuple[gym.vector.VectorEnv, gym.vector.VectorEnv]:
    """The native vector env and a SyncVectorEnv of 3 single envs, both reset with seed 4."""
    native = gym.make_vec(MCP, num_envs=3, backend="scripted", **kwargs)
    sync = gym.make_vec(MCP, num_envs=3, vectorization_mode="sync", backend="scripted", **kwargs)
    assert isinstance(native, AgentWorldVectorEnv)
    native.reset(seed=4)
    sync.reset(seed=4)
    return native, sync


def tool_calls(envs: gym.vector.VectorEnv) -> list[str]:
    """Each sub-env's first candidate action that is a tool call."""
    return [next(c for c in options if c.startswith("{"))
            for options in envs.call("candidate_actions")]


def test_call_and_get_attr_answer_as_sync_vector_env() -> None:
    native, sync = native_and_sync()
    for name in ("candidate_actions", "scenario", "max_steps", "render_mode"):
        assert native.call(name) == sync.call(name), name
        assert native.get_attr(name) == sync.get_attr(name), name
    assert len({s.id for s in native.get_attr("scenario")}) > 1  # each sub-env its own
    with pytest.raises(AttributeError, match="sub-env 0 .* 'missing'"):
        native.get_attr("missing")


def test_set_attr_takes_one_value_or_one_per_sub_env_as_sync_vector_env() -> None:
    native, sync = native_and_sync()
    for values in ("x", ["a", "b", "c"], ("d", "e", "f")):
        native.set_attr("label", values)
        sync.set_attr("label", values)
        assert native.get_attr("label") == sync.get_attr("label")
    for envs in (native, sync):
        with pytest.raises(ValueError, match="Got `2` values for 3 environments"):
            envs.set_attr("label", ["g", "h"])
    assert native.get_attr("label") == ("d", "e", "f")
    native.set_attr("max_steps", 2)  # shared: it budgets every sub-env's next episode
    sync.set_attr("max_steps", 2)
    assert native.get_attr("max_steps") == sync.get_attr("max_steps") == (2, 2, 2)
    for envs in (native, sync):
        envs.reset(seed=4)
        for _ in range(2):  # tool calls, which end no episode but by the budget
            truncated = envs.step(tool_calls(envs))[3]
        assert truncated.all()
    with pytest.raises(ValueError, match="'max_steps' is shared by every sub-env"):
        native.set_attr("max_steps", [2, 3, 4])


@pytest.mark.parametrize("render_mode", ["ansi", None])
def test_render_gives_each_sub_envs_render_as_sync_vector_env(render_mode: str | None) -> None:
    native, sync = native_and_sync(render_mode=render_mode)
    assert native.render_mode == sync.render_mode == render_mode
    assert native.metadata["render_modes"] == sync.metadata["render_modes"] == ["ansi"]
    actions = tool_calls(native)
    native.step(actions)
    sync.step(actions)
    renders = native.render()
    assert renders == sync.render() and len(renders) == 3
    if render_mode:
        assert all(r.startswith("[task] ") and "[turn 1 action]" in r for r in renders)
    with pytest.raises(ValueError, match="unsupported render_mode 'human'"):
        gym.make_vec(MCP, num_envs=2, backend="scripted", render_mode="human")
