"""Gymnasium API contract of the AgentFloor envs (``AgentFloor/<ID>-v0``).

Covers reset's prompt and info, observation/action spaces, pickling, determinism, the registry
and its step budgets, truncation, the ``max_episode_steps`` override and vector envs. Gymnasium's
``check_env`` runs on every id in ``tests/test_registry_matrix.py``; every variant's reference
solution is replayed once, in ``tests/floor/test_verdicts.py``.
"""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import pytest

import floor_tasks
from floor_tasks import TASK_IDS, env_id, load_task, solution

TIER_BUDGETS = {"A0": 1, "A": 2, "B": 4, "C": 6, "D": 8, "E": 10}
BUDGET_EXCEPTIONS = {"E2": 9, "E4": 12, "E5": 12}
UNKNOWN_TOOL_CALL = '{"name": "no_such_tool", "arguments": {}}'
MESSY_ACTIONS = [
    UNKNOWN_TOOL_CALL,
    '{"name": "lookup_record", "arguments": {"record_id": 42}}',
    '{"name": "lookup_record", "arguments": {"record_id": "P104", "extra": true}}',
    '{"name": "lookup_record", "arguments": ',
    "<tool_call>{not json}</tool_call>",
    "<tool_call>" + '{"name": "search_records", "arguments": {"query": "Alpha"}}',
    '[{"name": "compute_value", "arguments": {"operation": "add", "inputs": {"a": 1, "b": 2}}}]',
    "```json\n{\"name\": \"list_options\", \"arguments\": {}}\n```",
    "I am done. café ☕",
]
"""Broken, wrong and odd actions; the last one is a final answer."""
REPRESENTATIVE = ["A1", "B1", "C3", "D4", "E1", "E5"]
"""One task per tool-using tier, each with a multi-turn reference solution."""


def play(env: gym.Env, actions: list[str]) -> list[tuple]:
    """Step through ``actions`` (stopping at the end) and return the step tuples."""
    steps = []
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return steps


def strip_info(step: tuple) -> tuple:
    """A step tuple with the info reduced to JSON text, for equality checks."""
    obs, reward, terminated, truncated, info = step
    return obs, reward, terminated, truncated, json.dumps(info, sort_keys=True, default=str)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reset_shows_each_variants_prompt_and_tools(task_id: str) -> None:
    """Every variant: reset returns its prompt (in the space) and the task's info and tools."""
    task = load_task(task_id)
    env = gym.make(env_id(task_id))
    for variant in task.variant_names:
        obs, info = env.reset(options={"variant": variant})
        assert isinstance(obs, str) and obs in env.observation_space
        assert obs == task.variant(variant).prompt
        assert (info["task_id"], info["tier"], info["variant"]) == (task_id, task.tier, variant)
        assert [t["function"]["name"] for t in info["tools"]] == task.tools
        for schema in info["tools"]:
            assert schema["type"] == "function"
            assert set(schema["function"]) == {"name", "description", "parameters"}
            assert schema["function"]["parameters"]["type"] == "object"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_sampled_actions_give_observations_in_space(task_id: str) -> None:
    env = gym.make(env_id(task_id))
    env.action_space.seed(7)
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        assert obs in env.observation_space
        for _ in range(env.unwrapped.max_steps):
            action = env.action_space.sample()
            assert action in env.action_space
            obs, reward, terminated, truncated, info = env.step(action)
            assert obs in env.observation_space
            assert reward in (0.0, 1.0)
            assert ("verdict" in info) == (terminated or truncated)
            if terminated or truncated:
                break
        assert terminated or truncated


@pytest.mark.parametrize("task_id", REPRESENTATIVE)
def test_pickle_round_trip_continues_identically(task_id: str) -> None:
    """A pickled copy taken after reset, or after one step, replays the rest of the solution."""
    actions = solution(task_id, "v0")
    for steps_before in (0, 1):
        env = gym.make(env_id(task_id))
        env.reset(seed=0, options={"variant": "v0"})
        play(env, actions[:steps_before])
        copy = pickle.loads(pickle.dumps(env))
        original = [strip_info(s) for s in play(env, actions[steps_before:])]
        replayed = [strip_info(s) for s in play(copy, actions[steps_before:])]
        assert replayed == original
        assert original[-1][1] == 1.0


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_same_seed_same_actions_same_episode(task_id: str) -> None:
    for seed in (0, 1, 12345):
        envs = [gym.make(env_id(task_id), render_mode="ansi") for _ in range(2)]
        prompts = [e.reset(seed=seed) for e in envs]
        assert prompts[0][0] == prompts[1][0]
        assert prompts[0][1]["variant"] == prompts[1][1]["variant"]
        sol = solution(task_id, prompts[0][1]["variant"])
        for actions in (sol, MESSY_ACTIONS):
            for e in envs:
                e.reset(seed=seed)
            runs = [[strip_info(s) for s in play(e, actions)] for e in envs]
            assert runs[0] == runs[1]
            assert envs[0].unwrapped.transcript == envs[1].unwrapped.transcript
            assert envs[0].render() == envs[1].render()
            assert len(envs[0].unwrapped.transcript) > 1
            assert actions[0] in envs[0].render()


@pytest.mark.parametrize("task_id", ["A1", "C3", "E1"])
def test_reset_variant_selection(task_id: str) -> None:
    task = load_task(task_id)
    env = gym.make(env_id(task_id))
    drawn = {}
    for seed in range(40):
        _, info = env.reset(seed=seed)
        prompt, again = env.reset(seed=seed)
        assert again["variant"] == info["variant"]
        assert prompt == task.variant(info["variant"]).prompt
        drawn[seed] = info["variant"]
    assert len(set(drawn.values())) > 1, "the seed never changes the variant"
    fresh = gym.make(env_id(task_id))
    assert all(fresh.reset(seed=s)[1]["variant"] == v for s, v in drawn.items())
    for index, name in enumerate(task.variant_names):
        assert env.reset(options={"variant": index})[1]["variant"] == name
        prompt, info = env.reset(seed=3, options={"variant": name})
        assert (info["variant"], info["variant_index"]) == (name, index)
        assert prompt == task.variant(name).prompt
    for bad in ("nope", "v99", len(task.variant_names), -1):
        with pytest.raises(ValueError):
            env.reset(options={"variant": bad})


def test_info_tools_are_not_shared_state() -> None:
    """Editing the tool schemas a reset returned must not change any other env's schemas."""
    env = gym.make("AgentFloor/A1-v0")
    _, info = env.reset(seed=0)
    pristine = json.loads(json.dumps(info["tools"]))
    edited = info["tools"][0]["function"]
    try:
        edited["description"] = "edited by a caller"
        edited["parameters"] = {}
        assert gym.make("AgentFloor/A1-v0").reset(seed=0)[1]["tools"] == pristine
        assert env.reset(seed=0)[1]["tools"] == pristine
    finally:  # if the schemas are shared, undo the edit for the other tests
        edited.update(pristine[0]["function"])


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_registry_budgets(task_id: str) -> None:
    spec = gym.spec(env_id(task_id))
    task = load_task(task_id)
    assert spec.entry_point == "floor_tasks.env:FloorEnv"
    assert spec.max_episode_steps == task.max_steps
    assert task.max_steps == BUDGET_EXCEPTIONS.get(task_id, TIER_BUDGETS[task.tier])
    assert gym.make(env_id(task_id)).unwrapped.max_steps == task.max_steps


def test_registry_holds_exactly_the_thirty_tasks() -> None:
    registered = sorted(k for k in gym.registry if k.startswith("AgentFloor/"))
    assert len(TASK_IDS) == 30
    assert registered == sorted(env_id(t) for t in TASK_IDS)
    assert floor_tasks.TIERS == tuple(TIER_BUDGETS)


def _harmless_actions(task_id: str) -> list[str]:
    """An unknown-tool call, plus the solution's first read when it is a plain read."""
    first = solution(task_id, "v0")[0]
    try:
        name = json.loads(first)["name"]
    except (ValueError, KeyError, TypeError):
        return [UNKNOWN_TOOL_CALL]  # a final answer (A0) or several calls
    harmless = name in load_task(task_id).tools and name != "submit_decision"
    return [UNKNOWN_TOOL_CALL, first] if harmless else [UNKNOWN_TOOL_CALL]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_truncation_at_step_budget(task_id: str) -> None:
    env = gym.make(env_id(task_id))
    budget = load_task(task_id).max_steps
    for action in _harmless_actions(task_id):
        env.reset(seed=0, options={"variant": "v0"})
        for turn in range(1, budget + 1):
            obs, reward, terminated, truncated, info = env.step(action)
            assert reward == 0.0 and not terminated
            assert info["turn"] == turn
            assert truncated == (turn == budget)
            assert ("verdict" in info) == (turn == budget)
        assert info["termination"] == "step_budget_exhausted"
        assert info["verdict"]["passed"] is False
        assert info["verdict"]["failure_class"] == "F4"
        obs, reward, terminated, _, info = env.step(action)
        assert terminated and reward == 0.0
        assert "ended" in obs and "verdict" not in info


@pytest.mark.parametrize("budget", [2, 9])
def test_max_episode_steps_override_moves_the_budget(budget: int) -> None:
    """The env itself (verdict F4), not only the TimeLimit wrapper, truncates at the override."""
    env = gym.make("AgentFloor/C3-v0", max_episode_steps=budget)
    assert env.spec.max_episode_steps == budget
    _, reset_info = env.reset(seed=0)
    truncated_at = None
    for turn in range(1, budget + 2):
        _, reward, terminated, truncated, info = env.step(UNKNOWN_TOOL_CALL)
        assert not terminated and reward == 0.0
        if truncated:
            truncated_at = turn
            break
    seen = {"truncated_at": truncated_at,
            "failure_class": info.get("verdict", {}).get("failure_class"),
            "info_max_steps": reset_info["max_steps"], "env_max_steps": env.unwrapped.max_steps}
    assert seen == {"truncated_at": budget, "failure_class": "F4", "info_max_steps": budget,
                    "env_max_steps": budget}


def test_sync_vector_env_with_text_actions() -> None:
    envs = gym.make_vec("AgentFloor/A1-v0", num_envs=3, vectorization_mode="sync")
    try:
        prompts, info = envs.reset(seed=[0, 1, 2])
        assert len(prompts) == 3 and all(isinstance(p, str) for p in prompts)
        plans = [solution("A1", v) for v in info["variant"]]
        for turn in range(2):
            obs, rewards, terminated, _, step_info = envs.step(tuple(p[turn] for p in plans))
            assert obs in envs.observation_space
        assert list(rewards) == [1.0, 1.0, 1.0] and all(terminated)
        assert all(step_info["verdict"]["passed"])
        obs, rewards, _, _, reset_info = envs.step(("a", "b", "c"))  # autoreset to new prompts
        task = load_task("A1")
        assert list(obs) == [task.variant(v).prompt for v in reset_info["variant"]]
        assert list(rewards) == [0.0, 0.0, 0.0]
    finally:
        envs.close()


def _make_a1() -> gym.Env:
    import floor_tasks  # noqa: F401 - registers the ids in the worker process

    return gym.make("AgentFloor/A1-v0")


def test_async_vector_env_with_non_ascii_action() -> None:
    envs = gym.vector.AsyncVectorEnv([_make_a1, _make_a1], shared_memory=False)
    try:
        prompts, _ = envs.reset(seed=0)
        assert all(isinstance(p, str) and p for p in prompts)
        obs, rewards, terminated, _, _ = envs.step(("café ☕", "café ☕"))
        assert obs == ("", "") and list(rewards) == [0.0, 0.0] and all(terminated)
        transcripts = envs.get_attr("transcript")
        assert [t[-1]["content"] for t in transcripts] == ["café ☕", "café ☕"]
    finally:
        envs.close()


@pytest.mark.parametrize("variant", [[1], "v99", {"a": 1}])
def test_a_reset_to_a_missing_variant_raises_and_leaves_the_episode_as_it_was(
        variant: object) -> None:
    env = gym.make(env_id("B3"))
    env.reset(seed=0)
    env.step(UNKNOWN_TOOL_CALL)
    state = env.unwrapped.np_random.bit_generator.state
    transcript = list(env.unwrapped.transcript)
    with pytest.raises((TypeError, ValueError)):
        env.reset(seed=5, options={"variant": variant})
    assert env.unwrapped.np_random.bit_generator.state == state  # not reseeded
    assert env.unwrapped.transcript == transcript
    _, _, _, _, info = env.step(UNKNOWN_TOOL_CALL)
    assert info["turn"] == 2  # the same episode goes on
