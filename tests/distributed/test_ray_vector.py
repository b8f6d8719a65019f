"""RayVectorEnv on a real local Ray runtime: the in-process vector env's results, whatever the
number of actors; GRPO groups; faults that cost one actor; close() that leaves no actor behind.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from typing import Any

import gymnasium as gym
import numpy as np
import psutil
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
import floor_tasks
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.distributed import RayVectorEnv
from agentworld_envs.distributed.layout import actor_blocks
from agentworld_envs.distributed.vector_parts import overlay_info
from agentworld_envs.sim.vector_info import batch_infos
from tests.distributed.test_async_worker_errors import ENV_ID as CHOKING_ID
from tests.examples.test_examples import quick_check, run_example
from tests.helpers.ray_cluster import (  # noqa: F401 - ray_runtime: the module's Ray runtime
    assert_killed,
    ray_runtime,
)

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")

MCP = ("AgentWorld/MCP-v0", {"backend": "scripted"})
FLOOR = ("AgentFloor/B3-v0", {})
LOOKUP = '{"name": "lookup_record", "arguments": {"record_id": "PKG-88"}}'
FLOOR_ACTIONS = (LOOKUP, "{not json", "The total cost is 96.", LOOKUP)


class BoxProbe(gym.Env):
    """Observations drawn from ``np_random``; every episode lasts 3 steps."""

    observation_space = spaces.Box(0, 1, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.turn = 0
        return self._observation(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        return self._observation(), 1.0, self.turn >= 3, False, {}

    def _observation(self) -> Any:
        return self.np_random.random(2, dtype=np.float32)


class DictProbe(BoxProbe):
    """:class:`BoxProbe` with a ``Dict`` observation."""

    observation_space = spaces.Dict({"a": spaces.Discrete(10), "b": spaces.Discrete(10)})

    def _observation(self) -> Any:
        return {"a": int(self.np_random.integers(10)), "b": int(self.np_random.integers(10))}


class MixedInfoProbe(BoxProbe):
    """:class:`BoxProbe` whose reset info has ``x``, a string or an int, in some sub-envs."""

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        observation, _ = super().reset(seed=seed)
        return observation, {0: {"x": "a"}, 2: {"x": 1}}.get((seed or 0) % 4, {})


class WideProbe(BoxProbe):
    """:class:`BoxProbe` with observations too large for Ray to send inline (40,000 floats)."""

    observation_space = spaces.Box(0, 1, (40_000,), np.float32)

    def _observation(self) -> Any:
        return self.np_random.random(self.observation_space.shape, dtype=np.float32)


_PROBES = {"Box": BoxProbe, "Dict": DictProbe, "MixedInfo": MixedInfoProbe, "Wide": WideProbe}
for _name, _probe in _PROBES.items():
    if f"RayProbe/{_name}-v0" not in gym.registry:
        gym.register(f"RayProbe/{_name}-v0", entry_point=_probe)
BOX, DICT, MIXED_INFO, WIDE = (f"tests.distributed.test_ray_vector:RayProbe/{name}-v0"
                               for name in _PROBES)
"""The probes' ids for actors, which import this module to register them."""


def assert_same(got: Any, expected: Any, where: str = "info") -> None:
    """Equal batches: same keys, masks, dtypes and values, nested dicts alike."""
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), where
        for key in expected:
            assert_same(got[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, np.ndarray):
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape), where
        assert got.tolist() == expected.tolist(), where
    else:
        assert got == expected, where


def without_groups(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k not in ("group", "_group")}


def scripted_actions(candidates: list[list[str]], turn: int) -> list[str]:
    """Sub-env i's candidate action number ``turn + i``: tool calls and, in time, answers."""
    return [c[(turn + i) % len(c)] for i, c in enumerate(candidates)]


def new_candidates(candidates: list[list[str]], infos: dict[str, Any]) -> list[list[str]]:
    """The candidate actions of the episodes that (auto)reset, the others' as they were."""
    mask = infos.get("_candidate_actions", np.zeros(len(candidates), bool))
    return [infos["candidate_actions"][i] if mask[i] else c for i, c in enumerate(candidates)]


def first_call(candidates: list[str]) -> str:
    """The first candidate action that is a tool call (which asks the world model)."""
    return next(c for c in candidates if c.startswith("{"))


def actions_for(env_id: str, candidates: list[list[str]], turn: int) -> list[str]:
    """The MCP candidates of :func:`scripted_actions`, or AgentFloor calls, junk and answers."""
    if env_id == MCP[0]:
        return scripted_actions(candidates, turn)
    return [FLOOR_ACTIONS[(turn + i) % len(FLOOR_ACTIONS)] for i in range(len(candidates))]


def test_reference_solutions_reach_reward_one_across_two_actors() -> None:
    for task_id in ("A1", "C1", "E5"):
        envs = RayVectorEnv(f"AgentFloor/{task_id}-v0", 8, num_actors=2)
        try:
            _, infos = envs.reset(seed=11)
            solutions = [floor_tasks.solution(task_id, v) for v in infos["variant"]]
            rewards = np.full(8, np.nan)
            for turn in range(max(map(len, solutions))):
                actions = [s[turn] if turn < len(s) else "done" for s in solutions]
                _, reward, terminated, truncated, _ = envs.step(actions)
                ended = (terminated | truncated) & np.isnan(rewards)
                rewards[ended] = reward[ended]
            assert rewards.tolist() == [1.0] * 8, task_id
            assert len({*infos["variant"]}) > 1  # the seeds reach every sub-env
        finally:
            envs.close()


@pytest.mark.parametrize("num_actors", [1, 2, 3])
@pytest.mark.parametrize(("env_id", "kwargs"), [MCP, FLOOR], ids=["mcp", "floor"])
def test_results_equal_the_in_process_vector_env(env_id: str, kwargs: dict[str, Any],
                                                 num_actors: int) -> None:
    expected_env = gym.make_vec(env_id, num_envs=6, **kwargs)
    envs = RayVectorEnv(env_id, 6, num_actors=num_actors, **kwargs)
    try:
        assert envs.metadata["autoreset_mode"] == expected_env.metadata["autoreset_mode"]
        expected, got = expected_env.reset(seed=5), envs.reset(seed=5)
        assert got[0] == expected[0]
        assert_same(without_groups(got[1]), expected[1])
        candidates = new_candidates([[]] * 6, expected[1])
        for turn in range(5):
            actions = actions_for(env_id, candidates, turn)
            expected, got = expected_env.step(actions), envs.step(actions)
            assert got[0] == expected[0]
            for got_array, expected_array in zip(got[1:4], expected[1:4], strict=True):
                assert_same(got_array, expected_array, "rewards, terminated, truncated")
            assert_same(without_groups(got[4]), expected[4])
            candidates = new_candidates(candidates, expected[4])
        assert expected[2].any()  # episodes ended, so autoreset was compared too
    finally:
        envs.close()
        expected_env.close()


def test_groups_share_a_task_and_seed_and_sample_in_their_own_streams() -> None:
    envs = RayVectorEnv(MCP[0], 8, num_actors=2, group_size=4, **MCP[1])
    single = gym.make_vec(MCP[0], num_envs=2, **MCP[1])
    try:
        observations, infos = envs.reset(seed=21)
        expected, expected_infos = single.reset(seed=[21, 22])
        assert infos["group"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
        assert observations == tuple(o for o in expected for _ in range(4))
        assert infos["scenario_id"].tolist() == [s for s in expected_infos["scenario_id"]
                                                 for _ in range(4)]
        assert [b.stop - b.start for b in envs.blocks] == [4, 4]  # a group in one actor
        action = [first_call(infos["candidate_actions"][0])] * 8
        observations, *_, infos = envs.step(action)
        assert len(set(observations[:4])) == 4  # one action, four streams, four samples
        assert observations[0] == single.step([action[0]] * 2)[0][0]  # stream 0 is the default
        observations, _ = envs.reset()  # no seed: one drawn per group from the env's np_random
        assert len(set(observations[:4])) == len(set(observations[4:])) == 1
    finally:
        envs.close()
        single.close()


@pytest.mark.parametrize(("env_id", "kwargs", "task_key"),
                         [(*MCP, "scenario_id"), (*FLOOR, "variant")], ids=["mcp", "floor"])
def test_group_mates_play_the_same_tasks_past_autoresets(env_id: str, kwargs: dict[str, Any],
                                                        task_key: str) -> None:
    """Member 0 of each group answers at once, member 1 calls a tool first: their episodes end
    at different steps, yet each member's k-th episode has its mate's task and first
    observation."""
    envs = RayVectorEnv(env_id, 4, num_actors=2, group_size=2, **kwargs)
    try:
        observations, infos = envs.reset(seed=21)
        episodes = [[(infos[task_key][i], observations[i])] for i in range(4)]
        candidates, turns = new_candidates([[]] * 4, infos), [0] * 4
        for _ in range(8):
            actions = []
            for i, c in enumerate(candidates):
                call = first_call(c) if env_id == MCP[0] else LOOKUP
                answer = next(a for a in c if not a.startswith("{")) if env_id == MCP[0] \
                    else FLOOR_ACTIONS[2]
                actions.append(call if i % 2 and turns[i] % 2 == 0 else answer)
            observations, *_, infos = envs.step(actions)
            candidates, turns = new_candidates(candidates, infos), [t + 1 for t in turns]
            for i in np.flatnonzero(infos.get(f"_{task_key}", [])):
                episodes[i].append((infos[task_key][i], observations[i]))
                turns[i] = 0
        for group in (episodes[:2], episodes[2:]):
            assert len(group[0]) > len(group[1]) >= 3  # members out of step
            assert group[0][:len(group[1])] == group[1]
        assert len({task for task, _ in episodes[0] + episodes[2]}) > 1
    finally:
        envs.close()


def test_sampling_streams_change_the_request_seeds_only() -> None:
    def first_step(streams: list[int] | None) -> tuple[Any, ...]:
        envs = gym.make_vec(MCP[0], num_envs=3, sampling_streams=streams, **MCP[1])
        _, infos = envs.reset(seed=[4, 4, 4])
        return envs.step([first_call(infos["candidate_actions"][0])] * 3)

    plain, shifted = first_step(None), first_step([0, 1, 2])
    assert first_step([0, 0, 0])[0] == plain[0] and len(set(plain[0])) == 1
    assert shifted[0][0] == plain[0][0] and len(set(shifted[0])) == 3
    with pytest.raises(ValueError, match="expected 3 sampling streams"):
        gym.make_vec(MCP[0], num_envs=3, sampling_streams=[0, 1], **MCP[1])


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def kill_and_wait(actor: Any) -> None:
    """``ray.kill`` the actor (Ray restarts it if it may) and wait until its process is gone."""
    pid = ray.get(actor.__ray_call__.remote(lambda worker: os.getpid()))
    ray.kill(actor, no_restart=False)
    for _ in range(300):
        if gone(pid):
            return
        time.sleep(0.1)
    raise AssertionError(f"actor process {pid} outlived ray.kill")


@pytest.mark.parametrize(("env_id", "kwargs"), [MCP, FLOOR], ids=["same_step", "next_step"])
def test_a_killed_actor_truncates_its_sub_envs_only(env_id: str,
                                                    kwargs: dict[str, Any]) -> None:
    expected_env = gym.make_vec(env_id, num_envs=4, **kwargs)
    envs = RayVectorEnv(env_id, 4, num_actors=2, **kwargs)
    actors = list(envs.actors)
    try:
        candidates = new_candidates([[]] * 4, envs.reset(seed=9)[1])
        expected_env.reset(seed=9)

        def actions(turn: int) -> list[str]:
            return actions_for(env_id, candidates, turn)

        before = envs.step(actions(0))
        expected_env.step(actions(0))
        kill_and_wait(envs.actors[1])
        observations, rewards, terminated, truncated, info = envs.step(actions(1))
        expected = expected_env.step(actions(1))
        assert observations[:2] == expected[0][:2] and rewards[:2].tolist() == \
            expected[1][:2].tolist() and truncated[:2].tolist() == expected[3][:2].tolist()
        lost = [False, False, True, True]
        if env_id == FLOOR[0]:  # NEXT_STEP: sub-env 2 answered at step 0, its new episode due
            assert before[2][2:].tolist() == [True, False]
            lost[2] = False
        assert truncated[2:].tolist() == lost[2:] and not terminated[2:].any() and \
            not rewards[2:].any()
        assert info["_fault"].tolist() == lost
        assert "actor 1" in info["fault"][3]
        if env_id == MCP[0]:  # SAME_STEP: fresh episodes now, the last observation as final
            assert info["final_obs"][2:].tolist() == list(before[0][2:])
            assert info["_scenario_id"][2:].all() and observations[2:] != before[0][2:]
        else:  # NEXT_STEP: sub-env 2's new episode now; sub-env 3's last observation now, its
            assert info["_variant"][2] and observations[3] == before[0][3]  # new one next
            restarted, expected = envs.step(actions(2)), expected_env.step(actions(2))
            assert restarted[4]["_variant"][2:].tolist() == [False, True]
            assert not restarted[1][2:].any() and restarted[0][:2] == expected[0][:2]
        observations, *_ = envs.step(actions(3))
        assert observations[:2] == expected_env.step(actions(3))[0][:2]  # never noticed
    finally:
        envs.close()
        expected_env.close()
    for actor in actors:  # close() killed them all, restarted one included
        assert_killed(actor)


def test_an_actor_whose_restarts_are_spent_raises_and_close_still_returns() -> None:
    envs = RayVectorEnv(FLOOR[0], 4, num_actors=2, actor_options={"max_restarts": 0})
    actors = list(envs.actors)
    envs.reset(seed=0)
    kill_and_wait(envs.actors[0])
    with pytest.raises(RuntimeError, match="actor 0 died and Ray cannot restart it"):
        envs.step(actions_for(FLOOR[0], [[]] * 4, 0))
    envs.close()
    assert_killed(actors[1])


def test_an_exception_in_one_sub_env_truncates_that_sub_env_only() -> None:
    envs = RayVectorEnv(f"tests.distributed.test_async_worker_errors:{CHOKING_ID}", 4, num_actors=2)
    expected_env = gym.make_vec(CHOKING_ID, num_envs=4)
    try:
        assert envs.reset(seed=1)[0] == expected_env.reset(seed=1)[0]
        actions = [LOOKUP, "raise RuntimeError", LOOKUP, "I do not know."]
        observations, rewards, terminated, truncated, info = envs.step(actions)
        healthy = [LOOKUP, LOOKUP, LOOKUP, "I do not know."]
        expected = expected_env.step(healthy)
        assert truncated.tolist() == [False, True, False, False]
        assert info["fault"][1] == "RuntimeError: env choked on the answer"
        assert info["_fault"].tolist() == [False, True, False, False]
        keep = [0, 2, 3]
        assert [observations[i] for i in keep] == [expected[0][i] for i in keep]
        assert terminated[keep].tolist() == expected[2][keep].tolist()
        _, _, _, _, info = envs.step(healthy)  # NEXT_STEP: the faulted sub-env starts afresh
        assert info["_variant"].tolist() == [False, True, False, True]
        mask = np.array([False, True, False, False])  # actor 1 has none to reset
        observations, info = envs.reset(seed=[None, 7, None, None], options={"reset_mask": mask})
        expected = expected_env.reset(seed=[None, 7, None, None], options={"reset_mask": mask})
        assert observations[1] == expected[0][1] and info["_variant"].tolist() == mask.tolist()
    finally:
        envs.close()
        expected_env.close()


def test_an_actor_whose_vector_env_raises_costs_that_actor_only() -> None:
    failing = {"name": "scripted", "rules": [{"match": "FAILME", "error": "down"}]}
    envs = RayVectorEnv(MCP[0], 4, num_actors=2, backend=failing, on_fault="raise")
    try:
        _, infos = envs.reset(seed=2)
        actions = [first_call(c) for c in infos["candidate_actions"]]
        actions[3] = actions[3].replace('"arguments": {', '"arguments": {"note": "FAILME", ', 1)
        *_, truncated, info = envs.step(actions)
        assert truncated[2:].all() and info["_fault"].tolist() == [False, False, True, True]
        assert info["fault"][2].startswith("actor 1 failed: WorldModelFault")
        candidates = new_candidates(new_candidates([[]] * 4, infos), info)
        assert envs.step(scripted_actions(candidates, 1))[0]  # the rebuilt actor steps on
    finally:
        envs.close()


def test_misuse_gets_clear_errors() -> None:
    with pytest.raises(TypeError, match="cannot travel to Ray actors"):
        RayVectorEnv(MCP[0], 2, backend=ScriptedBackend())
    with pytest.raises(ValueError, match="multiple of group_size"):
        RayVectorEnv(MCP[0], 6, group_size=4, **MCP[1])
    with pytest.raises(ValueError, match="num_actors"):
        actor_blocks(4, 3, group_size=2)
    with pytest.raises(ValueError, match="num_actors"):
        RayVectorEnv(FLOOR[0], 2, num_actors=0)


@pytest.mark.parametrize(("num_envs", "group_size", "num_actors"),
                         [(6, 4, None), (4, 0, None), (0, 1, None), (4, 2, 3)])
def test_bad_arguments_raise_before_ray_is_started(monkeypatch: pytest.MonkeyPatch,
                                                   num_envs: int, group_size: int,
                                                   num_actors: int | None) -> None:
    def connect() -> None:
        raise AssertionError("Ray was started before the arguments were checked")

    monkeypatch.setattr("agentworld_envs.distributed.ray_vector_env.connect", connect)
    with pytest.raises(ValueError, match="num_envs|num_actors"):
        RayVectorEnv(FLOOR[0], num_envs, group_size=group_size, num_actors=num_actors)


@contextlib.contextmanager
def _floor_beside_sync(seed: int):
    """Four Floor sub-envs on two actors and the same in one SyncVectorEnv, both reset."""
    envs = RayVectorEnv(FLOOR[0], 4, num_actors=2)
    expected_env = gym.make_vec(FLOOR[0], num_envs=4)
    try:
        envs.reset(seed=seed)
        expected_env.reset(seed=seed)
        yield envs, expected_env
    finally:
        envs.close()
        expected_env.close()


def test_a_wrong_number_of_actions_raises_and_steps_nothing() -> None:
    with _floor_beside_sync(3) as (envs, expected_env):
        for count in (3, 5):
            with pytest.raises(ValueError, match="expected 4 actions"):
                envs.step([LOOKUP] * count)
        got, expected = envs.step([LOOKUP] * 4), expected_env.step([LOOKUP] * 4)
        assert got[0] == expected[0] and not got[3].any()


def test_step_before_reset_and_any_call_after_close_raise() -> None:
    envs = RayVectorEnv(FLOOR[0], 2, num_actors=1)
    with pytest.raises(gym.error.ResetNeeded):
        envs.step([LOOKUP] * 2)
    envs.reset(seed=0, options={"reset_mask": np.array([True, False])})
    with pytest.raises(gym.error.ResetNeeded, match=r"\[1\]"):  # sub-env 1 is not reset
        envs.step([LOOKUP] * 2)
    envs.close()
    with pytest.raises(gym.error.ClosedEnvironmentError):
        envs.reset(seed=0)
    with pytest.raises(gym.error.ClosedEnvironmentError):
        envs.step([LOOKUP] * 2)


def test_with_autoreset_disabled_ended_episodes_must_be_reset_before_a_step() -> None:
    envs = RayVectorEnv(BOX, 2, num_actors=2,
                        vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED})
    try:
        envs.reset(seed=0)
        for _ in range(3):  # a BoxProbe episode's length
            terminated = envs.step([0, 0])[2]
        assert terminated.all()
        with pytest.raises(gym.error.ResetNeeded):
            envs.step([0, 0])
        envs.reset(options={"reset_mask": terminated})
        assert not envs.step([0, 0])[2].any()
    finally:
        envs.close()


def test_a_bad_reset_mask_raises_and_resets_nothing() -> None:
    with _floor_beside_sync(0) as (envs, expected_env):
        for bad in (np.ones(3, np.bool_), np.ones(5, np.bool_)):
            with pytest.raises(ValueError, match=r"reset_mask must have shape \(4,\)"):
                envs.reset(seed=5, options={"reset_mask": bad})
        with pytest.raises(TypeError, match="reset_mask must have dtype bool"):
            envs.reset(seed=5, options={"reset_mask": np.ones(4)})
        got, expected = envs.step([LOOKUP] * 4), expected_env.step([LOOKUP] * 4)
        assert got[0] == expected[0]


def test_per_sub_env_options_reach_their_own_sub_envs() -> None:
    envs = RayVectorEnv(MCP[0], 4, num_actors=2, **MCP[1])
    expected_env = gym.make_vec(MCP[0], num_envs=4, **MCP[1])
    try:
        scenarios = expected_env.reset(seed=1)[1]["scenario_id"].tolist()[::-1]
        got = envs.reset(seed=1, options={"scenario": scenarios})
        expected = expected_env.reset(seed=1, options={"scenario": scenarios})
        assert got[0] == expected[0] and got[1]["scenario_id"].tolist() == scenarios
    finally:
        envs.close()
        expected_env.close()


def test_a_masked_reset_after_a_fault_leaves_the_others_new_episodes_due() -> None:
    """NEXT_STEP: after actor 1's fault its sub-envs start anew at the next step; resetting
    sub-env 2 alone in between leaves sub-env 3's new start due."""
    envs = RayVectorEnv(FLOOR[0], 4, num_actors=2)
    expected_env = gym.make_vec(FLOOR[0], num_envs=4)
    try:
        envs.reset(seed=0)
        expected_env.reset(seed=0)
        envs.step([LOOKUP] * 4)
        expected_env.step([LOOKUP] * 4)
        kill_and_wait(envs.actors[1])
        assert envs.step([LOOKUP] * 4)[3].tolist() == [False, False, True, True]
        expected_env.step([LOOKUP] * 4)
        mask, seeds = np.array([False, False, True, False]), [None, None, 9, None]
        envs.reset(seed=seeds, options={"reset_mask": mask})
        expected_env.reset(seed=seeds, options={"reset_mask": mask})
        observations, rewards, terminated, truncated, info = envs.step([LOOKUP] * 4)
        assert info["_variant"].tolist() == [False, False, False, True]
        assert not (rewards[3] or terminated[3] or truncated[3])
        assert observations[:3] == expected_env.step([LOOKUP] * 4)[0][:3]
    finally:
        envs.close()
        expected_env.close()


def test_a_masked_reset_on_a_restarted_actor_reports_its_other_lost_episodes() -> None:
    """SAME_STEP: the masked reset gives the in-process result; the next step truncates the
    actor's other sub-env (its lost episode's last observation as ``final_obs``)."""
    envs = RayVectorEnv(MCP[0], 4, num_actors=2, **MCP[1])
    expected_env = gym.make_vec(MCP[0], num_envs=4, **MCP[1])
    try:
        before, infos = envs.reset(seed=9)
        expected_env.reset(seed=9)
        kill_and_wait(envs.actors[1])
        mask, seeds = np.array([False, False, True, False]), [None, None, 5, None]
        got = envs.reset(seed=seeds, options={"reset_mask": mask})
        expected = expected_env.reset(seed=seeds, options={"reset_mask": mask})
        assert got[0] == expected[0]
        assert_same(without_groups(got[1]), expected[1])
        actions = scripted_actions(new_candidates(new_candidates([[]] * 4, infos), got[1]), 0)
        observations, rewards, terminated, truncated, info = envs.step(actions)
        expected = expected_env.step(actions)
        assert observations[:3] == expected[0][:3] and rewards[:3].tolist() == \
            expected[1][:3].tolist()
        assert truncated.tolist() == [False, False, False, True] and not rewards[3]
        assert info["fault"][3] == "actor 1 was restarted and lost its episodes"
        assert info["final_obs"][3] == before[3] and info["_scenario_id"][3]
    finally:
        envs.close()
        expected_env.close()


def test_each_call_returns_new_observation_arrays() -> None:
    envs = RayVectorEnv(BOX, 4, num_actors=2)
    expected_env = gym.make_vec(BOX.partition(":")[2], num_envs=4, vectorization_mode="sync")
    try:
        first, expected_first = envs.reset(seed=1)[0], expected_env.reset(seed=1)[0]
        second, expected_second = envs.step([0] * 4)[0], expected_env.step([0] * 4)[0]
        assert np.array_equal(first, expected_first)
        assert np.array_equal(second, expected_second)
    finally:
        envs.close()
        expected_env.close()


def test_a_killed_actors_final_obs_are_its_sub_envs_own_dict_observations() -> None:
    envs = RayVectorEnv(DICT, 4, num_actors=2,
                        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP})
    try:
        envs.reset(seed=0)
        last = envs.step([0] * 4)[0]
        kill_and_wait(envs.actors[1])
        *_, truncated, info = envs.step([0] * 4)
        assert truncated.tolist() == [False, False, True, True]
        assert list(info["final_obs"][2:]) == [{"a": last["a"][i], "b": last["b"][i]}
                                               for i in (2, 3)]
    finally:
        envs.close()


def test_actors_sized_to_the_cluster_and_those_it_cannot_fit_raise() -> None:
    cpus = ray.cluster_resources()["CPU"]
    envs = RayVectorEnv(FLOOR[0], 4, actor_options={"num_cpus": cpus})
    try:
        assert len(envs.blocks) == 1  # the default: as many actors as the CPUs hold
        envs.reset(seed=0)
    finally:
        envs.close()
    with pytest.raises(RuntimeError, match="did not start within .*num_cpus"):
        RayVectorEnv(FLOOR[0], 4, num_actors=2, actor_options={"num_cpus": cpus},
                     ready_timeout_s=1)


def test_a_list_of_seeds_seeds_np_random_too() -> None:
    envs = RayVectorEnv(FLOOR[0], 2, num_actors=1)
    try:
        draws = []
        for _ in range(2):
            envs.reset(seed=[3, None])
            draws.append(envs.np_random.integers(1 << 30))
        assert draws[0] == draws[1]
    finally:
        envs.close()


def test_ray_is_imported_only_when_needed_and_missing_ray_says_how_to_install() -> None:
    code = ("import sys, agentworld_envs, agentworld_envs.distributed; "
            "assert 'ray' not in sys.modules; sys.modules['ray'] = None; "
            "from agentworld_envs.distributed.ray_runtime import import_ray\n"
            "try: import_ray()\nexcept ImportError as e: print(e)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert 'pip install "agentworld[ray]"' in done.stdout


@pytest.mark.parametrize("env_id", ["AgentWorld/MCP-v0", "AgentFloor/A1-v0"])
def test_ray_rollouts_example_runs(env_id: str, tmp_path: Any) -> None:
    """Its quick check, on each env family (AgentFloor envs take no backend and have no
    candidate actions in their infos)."""
    output = run_example("ray_rollouts.py", *quick_check("ray_rollouts.py"), "--env-id", env_id,
                         cwd=tmp_path)
    assert output.count("round 0 group ") == 2


def test_info_entries_outside_the_mask_are_the_in_process_blanks() -> None:
    """Sub-env 0's ``x`` is a string, sub-env 2's (another actor's) an int: Gymnasium's object
    array has None wherever ``_x`` is False, in the whole info and in an overlaid one."""
    envs = RayVectorEnv(MIXED_INFO, 4, num_actors=2)
    expected_env = gym.make_vec(MIXED_INFO.partition(":")[2], num_envs=4,
                                vectorization_mode="sync")
    try:
        info, expected = envs.reset(seed=0)[1], expected_env.reset(seed=0)[1]
        assert expected["x"].tolist() == ["a", None, 1, None]
        assert_same(without_groups(info), expected)
    finally:
        envs.close()
        expected_env.close()
    base, top = batch_infos([{"x": "a"}], 3), batch_infos([None, {"x": 5}], 3)
    assert_same(overlay_info(base, top, np.array([False, True, True])),
                batch_infos([{"x": "a"}, {"x": 5}], 3))


@pytest.mark.parametrize("fault", ["at_the_step", "at_a_masked_reset"])
def test_a_fault_after_an_episode_ended_starts_its_next_one_without_a_second_end(
        fault: str) -> None:
    """NEXT_STEP: sub-env 2 answers and ends; then actor 1 dies. Sub-env 2's next step is its
    new episode's start, as in one process (not a truncation of the ended episode), and the
    step after plays that episode."""
    with _floor_beside_sync(0) as (envs, expected_env):
        ended = [LOOKUP, LOOKUP, FLOOR_ACTIONS[2], LOOKUP]
        assert envs.step(ended)[2].tolist() == expected_env.step(ended)[2].tolist() == \
            [False, False, True, False]
        kill_and_wait(envs.actors[1])
        if fault == "at_a_masked_reset":  # sub-env 3 reset anew: only sub-env 2 is left
            envs.reset(seed=[None, None, None, 5],
                       options={"reset_mask": np.array([False, False, False, True])})
        _, rewards, terminated, truncated, info = envs.step([LOOKUP] * 4)
        expected = expected_env.step([LOOKUP] * 4)
        assert not (rewards[2] or terminated[2] or truncated[2]) and info["_variant"][2]
        assert not expected[3][2] and expected[4]["_variant"][2]  # the same in one process
        assert info.get("_fault", np.zeros(4, np.bool_)).tolist() == \
            [False, False, False, fault == "at_the_step"]
        _, _, _, truncated, info = envs.step([LOOKUP] * 4)
        assert not truncated[2] and not info.get("_variant", np.zeros(4, np.bool_))[2]


def test_final_observations_are_writable_as_in_process_however_large() -> None:
    """``final_obs`` of a natural end and of a lost episode: the caller's own arrays, not
    read-only views into Ray's object store (where results over its inline size arrive)."""
    same_step = {"vector_kwargs": {"autoreset_mode": AutoresetMode.SAME_STEP}}
    envs = RayVectorEnv(WIDE, 4, num_actors=2, **same_step)
    expected_env = gym.make_vec(WIDE.partition(":")[2], num_envs=4, vectorization_mode="sync",
                                **same_step)
    try:
        envs.reset(seed=0)
        expected_env.reset(seed=0)
        for _ in range(3):  # a WideProbe episode's length
            *_, info = envs.step([0] * 4)
            expected = expected_env.step([0] * 4)[4]
        assert info["_final_obs"].all()
        for got, want in zip(info["final_obs"], expected["final_obs"], strict=True):
            assert np.array_equal(got, want) and got.flags.writeable
        kill_and_wait(envs.actors[1])
        *_, truncated, info = envs.step([0] * 4)
        assert truncated.tolist() == [False, False, True, True]
        assert all(info["final_obs"][i].flags.writeable for i in (2, 3))
    finally:
        envs.close()
        expected_env.close()
