"""A scripted world that shows what a scenario's answer rests on, for oracle episodes.

The ``scripted`` placeholder shows nothing, so an answer given after it is unsupported and
scores 0 wherever a scenario asks ``answer_observed``. :func:`witness_backend` answers every
world-model request with the scenario's screen (state domains) followed by the values its
``answer_observed`` checks look for, as a world model that knows the scenario would show them.
"""

from __future__ import annotations

from typing import Any

from agentworld_envs.world.scenario import Scenario


def evidence(scenario: Scenario) -> list[str]:
    """The texts the scenario's ``answer_observed`` checks look for."""
    return [check.value or scenario.reference_answer or "" for check in scenario.reward.checks
            if check.check == "answer_observed"]


def witness_backend(scenario: Scenario) -> dict[str, Any]:
    """A ``scripted`` backend config whose every observation shows :func:`evidence`."""
    shown = "\n".join(filter(None, [scenario.initial_state, *evidence(scenario)]))
    return {"name": "scripted", "rules": [
        {"match": "", "reply": f"<predicted_observation>\n{shown}\n</predicted_observation>"}]}
