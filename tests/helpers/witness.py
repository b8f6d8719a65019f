"""A scripted world that shows what a scenario's answer rests on, for oracle episodes.

The ``scripted`` placeholder shows nothing, so an answer given after it is unsupported and
scores 0 wherever a scenario asks ``answer_observed``. :func:`witness_backend` answers every
world-model request with the scenario's screen (state domains) followed by the values its
``answer_observed`` checks look for, as a world model that knows the scenario would show them.
Where the scenario's own demonstrations give a transition (a screen, an action on it, the next
screen), the witness plays it, so that state checks (``observation_contains``) read a screen
that the episode's actions led to; on a turn that a control fires, the screen stays as it was.
"""

from __future__ import annotations

import re
from typing import Any

from agentworld_envs.domains import get_domain
from agentworld_envs.world.prompting import fence
from agentworld_envs.world.scenario import Scenario

_CONTROL = r"Control \(this turn only; never mention it\): "


def evidence(scenario: Scenario) -> list[str]:
    """The texts the scenario's ``answer_observed`` checks look for."""
    return [check.value or scenario.reference_answer or "" for check in scenario.reward.checks
            if check.check == "answer_observed"]


def _reply(screen: str | None, scenario: Scenario) -> str:
    shown = "\n".join(filter(None, [screen, *evidence(scenario)]))
    return f"<predicted_observation>\n{shown}\n</predicted_observation>"


def _transitions(scenario: Scenario) -> list[dict[str, Any]]:
    """Rules for the scenario's demonstrations: the demonstrated screen and action give the
    demonstrated observation, or the same screen on a turn with a control."""
    domain = get_domain(scenario.domain)
    rules = []
    for demo in scenario.demonstrations:
        if demo.state is None:
            continue
        read = domain.interpret(demo.action, scenario, demo.state)
        turn = re.escape(f"**Current State:**\n{demo.state}\n\n**Action:**\n"
                         f"{fence(read.action_text, read.language)}")
        rules += [{"match": rf"(?s){_CONTROL}.*{turn}", "reply": _reply(demo.state, scenario)},
                  {"match": turn, "reply": _reply(demo.observation, scenario)}]
    return rules


def witness_backend(scenario: Scenario) -> dict[str, Any]:
    """A ``scripted`` backend config: the scenario's demonstrated transitions, and otherwise
    the initial screen, every observation showing :func:`evidence`."""
    return {"name": "scripted", "rules": [
        *_transitions(scenario), {"match": "", "reply": _reply(scenario.initial_state, scenario)}]}


def play_on_witness(domain: str, scenario_id: str, episode: list[int | str],
                    backend: dict[str, Any] | None = None) -> float:
    """The reward of a built-in scenario's episode on its witness (or ``backend``): each step a
    candidate action's index or an action's text, played until the episode ends."""
    from agentworld_envs.registration import make

    scenario = get_domain(domain).builtin[scenario_id]
    env = make(domain, backend=backend or witness_backend(scenario))
    env.reset(seed=0, options={"scenario": scenario_id})
    for step in episode:
        action = scenario.candidate_actions[step] if isinstance(step, int) else step
        _, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return reward
    raise AssertionError(f"{scenario_id}: the episode did not end")
