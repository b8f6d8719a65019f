"""What a simulator teaches on an MCP family, measured before any training: which candidate
answers each of a server's candidate calls shows.

The simulated MCP reward pays only the server's true answer, and only once an observation
has shown it. So a simulator can never pay a wrong answer; it teaches "answer what you read"
exactly where one of its observations shows the true answer and no wrong candidate, and
it teaches where to look by where that happens. :func:`shown_answers` plays each candidate
call of each server as the first step of an episode, in a simulated env with the arm's
simulator (or on the real twin), and counts what the observation shows, read as the linear
agent reads it (every word of the answer's value among the observation's words):

``true alone``            the true answer and no wrong one: the one case that rewards reading;
``true and a wrong one``  both (reading alone cannot tell them apart);
``a wrong one only``      no reward can follow, whatever is answered;
``an error``              no candidate answer, and an error result (the server's perturbations
                          give some; a simulator may invent others);
``none``                  no candidate answer and no error.

A call is named by its part in the server's solution (``solution call 1: list_items``) or
``not in the solution: get_item``; its tool is the same on every server of a family.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
from agentworld_envs.backends.embedded import EMBEDDED_SAMPLING
from agentworld_envs.protocol.bounded_json import find_objects
from agentworld_envs.protocol.tool_calls import parse_action
from agentworld_envs.registration import env_id
from trainers.experiments.sim_to_real.features import words
from trainers.experiments.sim_to_real.tasks import McpTask

__all__ = ["OUTCOMES", "shown_answers"]

OUTCOMES = ("true alone", "true and a wrong one", "a wrong one only", "an error", "none")
_ANSWER = "The answer is "


def _shows(seen: set[str], answer: str) -> bool:
    """Whether every word of a candidate answer's value is among ``seen`` words."""
    return all(word in seen for word in words(answer.removeprefix(_ANSWER).rstrip(".")))


def _is_error(observation: str) -> bool:
    return any(isinstance(o, dict) and o.get("error") for o in find_objects(observation))


def _call_names(scenario: Any) -> dict[str, str]:
    """Each candidate call of a server, named by its part in the solution and its tool."""
    solution = [scenario.candidate_actions[i] for i in scenario.solution[:-1]]
    names = {}
    for action in scenario.candidate_actions:
        for call in parse_action(action).calls[:1]:  # an answer has none
            names[action] = (f"solution call {solution.index(action) + 1}: {call.name}"
                             if action in solution else f"not in the solution: {call.name}")
    return names


def shown_answers(task: McpTask, variants: Sequence[str], backend: Any = None,
                  record_path: str | None = None, seeds: int = 4) -> dict[str, dict[str, float]]:
    """For each call (by name), the share of ``variants``' servers on which its observation,
    as an episode's first step, shows each of :data:`OUTCOMES`: in a simulated env with
    ``backend`` and no real counterpart, or, with no backend, on the server's twin (the real
    env). Each server is played from reset seeds ``0 .. seeds - 1``, as the server's
    perturbations fire by chance in training too."""
    scenarios = [task.scenario(v) for v in variants]
    env = (task.played(list(variants), 2) if backend is None else gym.make(
        env_id("mcp"), backend=backend, max_steps=2, sampling=EMBEDDED_SAMPLING,
        real_counterpart=False, scenarios=scenarios, record_path=record_path))
    counts: dict[str, list[str]] = {}
    try:
        for scenario in scenarios:
            right = f"{_ANSWER}{scenario.reference_answer}."
            wrong = [c for c in scenario.candidate_actions if c.startswith(_ANSWER) and c != right]
            for (call, name), seed in itertools.product(_call_names(scenario).items(),
                                                        range(seeds)):
                env.reset(seed=seed, options={"scenario": scenario})
                observation = env.step(call)[0]
                seen = set(words(observation))
                true, other = _shows(seen, right), any(_shows(seen, w) for w in wrong)
                counts.setdefault(name, []).append(
                    OUTCOMES[0] if true and not other else OUTCOMES[1] if true else
                    OUTCOMES[2] if other else OUTCOMES[3] if _is_error(observation) else
                    OUTCOMES[4])
    finally:
        env.close()
    return {name: {o: round(float(np.mean([s == o for s in seen])), 4) for o in OUTCOMES}
            for name, seen in sorted(counts.items())}
