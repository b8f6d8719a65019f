"""RayVectorEnv on a real local Ray runtime: the in-process vector env's results, whatever the
number of actors; GRPO groups; faults that cost one actor; close() that leaves no actor behind.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import gymnasium as gym
import numpy as np
import psutil
import pytest

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
import floor_tasks
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.distributed import RayVectorEnv
from agentworld_envs.distributed.layout import actor_blocks
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime
from tests.test_examples import quick_check, run_example
from tests.test_vector_worker_errors import ENV_ID as CHOKING_ID

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.usefixtures("ray_runtime")

MCP = ("AgentWorld/MCP-v0", {"backend": "scripted"})
FLOOR = ("AgentFloor/B3-v0", {})
LOOKUP = '{"name": "lookup_record", "arguments": {"record_id": "PKG-88"}}'
FLOOR_ACTIONS = (LOOKUP, "{not json", "The total cost is 96.", LOOKUP)


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


def assert_killed(actor: Any) -> None:
    """The actor dies. ``ray.kill`` is asynchronous: a call made just after ``close()`` may
    still be answered, one made once the kill lands raises ``RayActorError`` (a 600 s hang
    guard, polled)."""
    for _ in range(6000):
        try:
            ray.get(actor.describe.remote())
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.1)
    raise AssertionError("the actor still answers 600 s after close()")


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
        assert truncated[2:].all() and not terminated[2:].any() and not rewards[2:].any()
        assert info["_fault"].tolist() == [False, False, True, True]
        assert "actor 1" in info["fault"][2]
        if env_id == MCP[0]:  # SAME_STEP: fresh episodes now, the last observation as final
            assert info["final_obs"][2:].tolist() == list(before[0][2:])
            assert info["_scenario_id"][2:].all() and observations[2:] != before[0][2:]
        else:  # NEXT_STEP: the last observation now, fresh episodes at the next step
            assert observations[2:] == before[0][2:]
            restarted, expected = envs.step(actions(2)), expected_env.step(actions(2))
            assert restarted[4]["_variant"][2:].all() and not restarted[1][2:].any()
            assert restarted[0][:2] == expected[0][:2]
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
    envs = RayVectorEnv(f"tests.test_vector_worker_errors:{CHOKING_ID}", 4, num_actors=2)
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


def test_ray_is_imported_only_when_needed_and_missing_ray_says_how_to_install() -> None:
    code = ("import sys, agentworld_envs, agentworld_envs.distributed; "
            "assert 'ray' not in sys.modules; sys.modules['ray'] = None; "
            "from agentworld_envs.distributed.ray_runtime import import_ray\n"
            "try: import_ray()\nexcept ImportError as e: print(e)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert 'pip install "agentworld[ray]"' in done.stdout


def test_ray_rollouts_example_runs(tmp_path: Any) -> None:
    output = run_example("ray_rollouts.py", *quick_check("ray_rollouts.py"), cwd=tmp_path)
    assert "group" in output
