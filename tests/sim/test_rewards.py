"""End-of-episode rewards: the rule verifier, the rubric judge, hybrids, and their breakdown."""

from __future__ import annotations

import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.domains import get_domain
from agentworld_envs.registration import make
from agentworld_envs.world.rewards import EpisodeLog, run_checks, settle
from agentworld_envs.world.scenario import Check, RewardSpec
from tests.helpers.witness import witness_backend

EVALUATION = "<final_evaluation>{{\"score\": {score}, \"reason\": \"r\"}}</final_evaluation>"


def log(**fields) -> EpisodeLog:
    scenario = get_domain("search").builtin["search-lighthouse-keeper"]
    return EpisodeLog(scenario, **fields)


@pytest.mark.parametrize(("check", "fields", "passed"), [
    ({"check": "answer_matches"}, {"answer": "It was Maren Holt."}, True),
    ({"check": "answer_matches"}, {"answer": None}, False),
    ({"check": "answer_matches", "value": "1961", "match": "number"},
     {"answer": "since 1961"}, True),
    ({"check": "completed"}, {"ending": "message"}, True),
    ({"check": "completed"}, {"ending": "step_budget_exhausted"}, False),
    ({"check": "infeasible"}, {"ending": "infeasible"}, True),
    ({"check": "called_tool", "value": "web_search"}, {"tools_called": ["web_search"]}, True),
    ({"check": "called_tool", "value": "web_search"}, {"tools_called": ["dict_memory"]}, False),
    ({"check": "action_matches", "value": "rm -rf"}, {"performed": ["ls", "RM -RF /tmp"]}, True),
    ({"check": "action_matches", "value": "rm -rf"},  # attempted, never performed
     {"actions": ["rm -rf /tmp"], "performed": []}, False),
    ({"check": "no_action_matches", "value": "rm -rf"}, {"actions": ["rm -rf /"]}, False),
    ({"check": "observation_contains", "value": "Saved!"},
     {"observations": ["x", "Document saved!"]}, True),
    ({"check": "observation_contains", "value": "Saved"}, {"observations": []}, False),
    ({"check": "answer_observed"}, {"observations": ['{"keeper": "Maren Holt"}'],
                                    "sources": ["world_model"]}, True),
    ({"check": "answer_observed"}, {"observations": ['{"keeper": "Abel Ruske"}'],
                                    "sources": ["world_model"]}, False),
    ({"check": "answer_observed", "value": "12", "match": "number"},
     {"observations": ["none", '{"count": 12}'], "sources": ["world_model", "real"]}, True),
    ({"check": "floor_verifier"}, {"verdict": {"passed": True}}, True),
    ({"check": "floor_verifier"}, {"verdict": None}, False),
])
def test_each_rule_check(check: dict, fields: dict, passed: bool) -> None:
    assert run_checks([Check(**check)], log(**fields)) == {Check(**check).label: passed}


def test_no_checks_means_the_agent_must_have_completed() -> None:
    assert run_checks([], log(ending="final_answer")) == {"completed": True}


@pytest.mark.parametrize(("spec", "judge", "reward"), [
    (RewardSpec(kind="rule", checks=[Check(check="completed")]), None, 1.0),
    (RewardSpec(kind="judge"), (0.75, ""), 0.75),
    (RewardSpec(kind="hybrid", checks=[Check(check="completed")]), (0.5, ""), 0.5),
    (RewardSpec(kind="hybrid", checks=[Check(check="infeasible")]), (1.0, ""), 0.0),
    (RewardSpec(kind="hybrid", combine="weighted", rule_weight=0.25,
                checks=[Check(check="infeasible")]), (1.0, ""), 0.75),
    (RewardSpec(kind="judge"), (float("nan"), "no score"), 0.0),
])
def test_settle_combines_rule_and_judge(spec, judge, reward) -> None:
    value, breakdown = settle(spec, log(ending="final_answer"), judge)
    assert value == reward == breakdown["reward"]
    assert ("checks" in breakdown) is (spec.kind != "judge")
    assert ("judge_error" in breakdown) is (spec.kind != "rule")


def judged_env(score_text: str, **settings):
    judge = ScriptedBackend([{"match": "## Rubric", "reply": score_text}], keep_requests=True)
    scenario = get_domain("search").builtin["search-lighthouse-keeper"]
    env = make("search", backend=witness_backend(scenario), judge_backend=judge, **settings)
    env.reset(seed=0, options={"scenario": "search-lighthouse-keeper"})
    return env, judge


def test_the_judge_sees_the_task_rubric_and_episode_and_its_score_is_the_reward() -> None:
    env, judge = judged_env(EVALUATION.format(score=4), reward_kind="judge")
    env.step('{"name": "web_search", "arguments": {"queries": ["Corran Point keeper"]}}')
    _, reward, terminated, _, info = env.step("Abel Ruske kept it.")
    assert terminated and reward == 0.75
    assert info["reward_breakdown"] == {"kind": "judge", "judge": 0.75, "judge_error": "",
                                        "reward": 0.75, "source": "simulated"}
    (request,), = judge.batches
    prompt = request.messages[1]["content"]
    assert "last keeper of the Corran Point lighthouse" in prompt
    assert "## Reference answer\nMaren Holt" in prompt
    assert "only if the agent names the last keeper" in prompt  # the scenario's rubric
    assert "Corran Point keeper" in prompt and "final_answer" in prompt
    assert "Abel Ruske kept it." in prompt
    assert request.sampling.temperature == 0.0 and request.sampling.seed is not None


def test_hybrid_gates_the_judge_on_the_rules() -> None:
    env, _ = judged_env(EVALUATION.format(score=5), reward_kind="hybrid")
    env.step('{"name": "web_search", "arguments": {"queries": ["Corran Point keeper"]}}')
    _, reward, _, _, info = env.step("It was Maren Holt.")
    assert reward == 1.0 and info["reward_breakdown"]["checks"] == {
        "answer_matches": True, "answer_observed": True}
    env.reset(seed=0, options={"scenario": "search-lighthouse-keeper"})
    _, reward, _, _, info = env.step("It was Abel Ruske.")
    assert reward == 0.0 and info["reward_breakdown"]["judge"] == 1.0


@pytest.mark.parametrize("reply", ["I refuse to grade.", EVALUATION.format(score=11)])
def test_an_unreadable_judge_counts_as_zero_and_says_why(reply: str) -> None:
    """It is counted as a failed call (against ``max_faults``) and warned about, as a failed
    judge call is; before, only ``judge_error`` said so."""
    env, _ = judged_env(reply, reward_kind="judge")
    with pytest.warns(RuntimeWarning, match="the judge's verdict could not be read on 1 of 1"):
        _, reward, _, _, info = env.step("It was Maren Holt.")
    assert reward == 0.0 and info["reward_breakdown"]["judge_error"]
    assert "judge" not in info["reward_breakdown"]
    faults = env.unwrapped.sim.faults
    assert faults.failed == 1 and any("unreadable verdict" in r for r in faults.reasons)


def test_a_failing_judge_backend_is_a_flagged_zero() -> None:
    env = make("search", backend="scripted", reward_kind="judge",
               judge_backend={"name": "scripted", "rules": [{"match": ".", "error": "down"}]})
    env.reset(seed=0)
    _, reward, _, _, info = env.step("An answer.")
    assert reward == 0.0 and "backend_error" in info["reward_breakdown"]["judge_error"]


def test_without_a_judge_backend_the_world_model_backend_judges() -> None:
    backend = ScriptedBackend([{"match": "## Rubric", "reply": EVALUATION.format(score=3)}],
                              keep_requests=True)
    env = make("mcp", backend=backend, reward_kind="judge")
    env.reset(seed=0)
    assert env.step("Some answer.")[1] == 0.5 and len(backend.batches) == 1


def test_rule_rewards_never_call_the_judge() -> None:
    env, judge = judged_env(EVALUATION.format(score=5))
    env.step('{"name": "web_search", "arguments": {"queries": ["Corran Point keeper"]}}')
    assert env.step("It was Maren Holt.")[1] == 1.0 and not judge.batches
