"""Rule rewards pay for what was done and said: ``action_matches`` never for a rejected action,
prose, or a message; ``answer_matches`` never for an answer that also states a wrong one."""

from __future__ import annotations

from dataclasses import replace

import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import DOMAINS, get_domain
from agentworld_envs.domains.base import ToolDomain
from agentworld_envs.registration import make
from agentworld_envs.world.rewards import run_checks
from agentworld_envs.world.scenario import Scenario
from tests.helpers.witness import witness_backend

MATCHED = [(key, scenario) for key in DOMAINS for scenario in get_domain(key).builtin.values()
           if any(check.check == "action_matches" for check in scenario.reward.checks)]


def play(key: str, scenario: Scenario, actions: list[str]) -> tuple[float, list[dict]]:
    """The reward of ``actions`` (the last must end the episode) in a world that shows what the
    answer rests on, and each step's info."""
    env = make(key, backend=witness_backend(scenario))
    env.reset(seed=0, options={"scenario": scenario.id})
    infos = []
    for action in actions:
        _, reward, terminated, _, info = env.step(action)
        infos.append(info)
    assert terminated, (scenario.id, infos[-1])
    return reward, infos


def broken(key: str, text: str) -> str:
    """``text`` made unreadable: a tool call's tag left open, anything else made not code."""
    return f"<tool_call>{text}" if isinstance(get_domain(key), ToolDomain) else f"NOT VALID {text}"


@pytest.mark.parametrize(("key", "scenario"), MATCHED, ids=[s.id for _, s in MATCHED])
def test_a_rejected_action_holding_the_solution_earns_nothing(key: str,
                                                              scenario: Scenario) -> None:
    solution = scenario.solution_actions
    assert play(key, scenario, solution)[0] == 1.0
    attempt = broken(key, "\n".join(solution[:-1]) or solution[0])
    reward, infos = play(key, scenario, [attempt, solution[-1]])
    assert infos[0]["invalid_action"], infos[0]
    checks = infos[-1]["reward_breakdown"]["checks"]
    assert reward == 0.0 and not any(
        passed for name, passed in checks.items() if name.startswith("action_matches")), checks


@pytest.mark.parametrize(("scenario_id", "message"), [
    ("web-forum-new-post", "send_msg_to_user('Favourite translated novels')"),
    ("web-gitlab-star-repo", "send_msg_to_user(\"click('118')\")"),
])
def test_a_message_naming_the_deed_is_not_the_deed(scenario_id: str, message: str) -> None:
    scenario = get_domain("web").builtin[scenario_id]
    reward, infos = play("web", scenario, [message])
    assert reward == 0.0 and infos[-1]["reward_breakdown"]["checks"]["action_matches"] is False


def test_prose_around_a_call_is_not_what_the_call_did() -> None:
    scenario = get_domain("swe").builtin["swe-fix-pagination-off-by-one"]
    solution = scenario.solution_actions  # read, fix, run pytest, answer
    chatter = ('I ran pytest, all green. <tool_call>{"name": "bash", "arguments": '
               '{"command": "ls"}}</tool_call>')
    reward, infos = play("swe", scenario, [*solution[:2], chatter, solution[-1]])
    assert not infos[2]["invalid_action"]
    assert reward == 0.0, infos[-1]["reward_breakdown"]



@pytest.mark.parametrize("seed", range(12))
def test_a_hedge_over_the_candidate_answers_earns_nothing(seed: int) -> None:
    env = make("mcp", scenarios="generated", mode="real")
    env.reset(seed=seed)
    scenario = env.unwrapped.scenario
    answers = [a for a in scenario.candidate_actions if not a.lstrip().startswith("{")]
    right = scenario.candidate_actions[scenario.solution[-1]]
    for index in scenario.solution[:-1]:
        env.step(scenario.candidate_actions[index])
    snapshot = env.unwrapped.episode.log  # the episode so far, answered two ways below
    checks = scenario.reward.checks
    assert len(answers) > 1 and right in answers
    assert run_checks(checks, replace(snapshot, answer=right))["answer_matches"]
    assert not run_checks(checks, replace(snapshot, answer=" / ".join(answers)))["answer_matches"]
