"""reward="simulated" reads the simulated episode alone; reward="real" the real counterpart's."""

from __future__ import annotations

import json

import numpy as np
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
import floor_tasks
from agentworld_envs.domains.floor.verdict import simulated_verdict
from agentworld_envs.domains.mcp.servers import mcp_server_scenario
from agentworld_envs.registration import make
from agentworld_envs.world.scenario import FloorRef
from floor_tasks.candidates import candidate_actions
from floor_tasks.env import FloorEnv
from floor_tasks.verifier import verify
from tests.helpers.floor_world import predicting, real_observations

GARBAGE = {"name": "scripted", "rules": [{"match": ".", "reply": "lorem ipsum"}]}


def solve(env, task_id: str, variant: str = "v0") -> tuple[float, dict]:
    env.reset(seed=0, options={"scenario": f"{task_id}/{variant}"})
    for action in floor_tasks.solution(task_id, variant):
        _, reward, terminated, truncated, info = env.step(action)
    assert terminated or truncated
    return reward, info["reward_breakdown"]


def test_a_faithful_world_model_gives_the_real_verdict() -> None:
    reward, breakdown = solve(make("floor", backend=predicting(real_observations("C1"))), "C1")
    assert reward == 1.0 and breakdown["source"] == "simulated"
    assert breakdown["real"] == {"reward": 1.0, "checks": {"floor_verifier": True}}
    assert breakdown["agree"] is True


def test_the_simulated_reward_depends_on_what_the_world_model_said() -> None:
    """C1 asks that the status be observed before submitting: garbage observations show none,
    so the same actions that pass for real fail in the simulation."""
    reward, breakdown = solve(make("floor", backend=GARBAGE), "C1")
    assert reward == 0.0 and breakdown["checks"] == {"floor_verifier": False}
    assert breakdown["real"]["reward"] == 1.0 and breakdown["agree"] is False


def test_a_wrong_predicted_value_fails_the_check_that_reads_it() -> None:
    real = real_observations("C1", "i1")  # CMP-33, inactive
    shown = json.loads(real[0])
    del shown["result"]["fields"]["status"]  # the prediction leaves out the field read
    reward, breakdown = solve(make("floor", backend=predicting([json.dumps(shown), real[1]])),
                              "C1", "i1")
    assert reward == 0.0 and breakdown["real"]["reward"] == 1.0


def test_reward_real_is_the_shadow_envs_verdict_with_the_simulated_one_beside_it() -> None:
    reward, breakdown = solve(make("floor", backend=GARBAGE, reward="real"), "C1")
    assert reward == 1.0 and breakdown["source"] == "real"
    assert breakdown["simulated"]["reward"] == 0.0 and breakdown["agree"] is False


def test_reward_real_needs_a_real_counterpart() -> None:
    env = make("search", backend="scripted", reward="real")
    with pytest.raises(ValueError, match="needs a real counterpart"):
        env.reset(seed=0)


def test_mcp_answers_must_have_been_observed_in_the_simulation() -> None:
    scenario = mcp_server_scenario(3)
    answer = scenario.candidate_actions[scenario.solution[-1]]
    calls = [scenario.candidate_actions[i] for i in scenario.solution[:-1]]

    def play(backend) -> dict:
        env = make("mcp", backend=backend, scenarios=[scenario.model_dump()], controls=[])
        env.reset(seed=0)
        for action in [*calls, answer]:
            *_, info = env.step(action)
        return info["reward_breakdown"]

    garbage = play(GARBAGE)
    assert garbage["checks"] == {"answer_matches": True, "answer_observed": False}
    assert garbage["reward"] == 0.0 and garbage["real"]["reward"] == 1.0
    twin = make("mcp", backend="scripted", scenarios=[scenario.model_dump()])
    twin.reset(seed=0)
    truth = [twin.unwrapped.episode.reality.step(a).observation for a in calls]
    faithful = play(predicting(truth))
    assert faithful["reward"] == 1.0 and faithful["agree"] is True


@pytest.mark.parametrize("observation", [
    '{"tool_name": "lookup_record", "status": "ok", "result": {"record_id": 7}}',
    '{"tool_name": "lookup_record", "status": "fine", "result": null}',
    "not json at all",
    "",
])
def test_unreadable_envelopes_are_failed_calls_not_crashes(observation: str) -> None:
    action, submit = floor_tasks.solution("C1", "v0")
    real = real_observations("C1")
    verdict = simulated_verdict(FloorRef(task_id="C1", variant="v0"), [action, submit],
                                [observation, real[1]], "submitted")
    assert verdict["passed"] is False
    assert not verdict["checks"]["trajectory"]["subchecks"]["observed_before_submission"][
        "passed"]


MISTAKES = ['{"name": "delete_database", "arguments": {}}', '{"name": "lookup_record", "argu',
            '{"name": "lookup_record", "arguments": {"record_id": 5}}', "I give up.",
            '[{"name": "search_records", "arguments": {"query": "x"}}, {"name": "nope"}]',
            json.dumps([{"name": "list_options", "arguments": {}}] * 33)]  # over the turn's cap


@pytest.mark.parametrize("played", ["solution", "explorer"])
def test_the_simulated_trace_reads_calls_as_the_real_env_does(played: str) -> None:
    """Every variant of every task, played by the reference solution or a seeded explorer
    (candidates and mistakes): over the real observations, the verdict is the real one."""
    rng = np.random.default_rng(0)
    for task in floor_tasks.load_tasks():
        for variant in task.variant_names:
            env = FloorEnv(task.id, variant=variant)
            env.reset(seed=0)
            pool = candidate_actions(task.id, variant, wide=True) + MISTAKES
            plan = (floor_tasks.solution(task.id, variant) if played == "solution" else
                    [pool[int(i)] for i in rng.integers(len(pool), size=env.max_steps)])
            actions, seen = [], []
            for action in plan:
                observation, _, terminated, truncated, _ = env.step(action)
                actions.append(action)
                seen.append(observation)
                if terminated or truncated:
                    break
            verdict = simulated_verdict(FloorRef(task_id=task.id, variant=variant), actions,
                                        seen, env.trace.termination)
            assert verdict == verify(env.trace), (task.id, variant, actions)
