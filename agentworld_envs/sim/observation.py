"""Reading one step's observation: the world model's answer, a fault, or the real counterpart.

``info["observation_source"]`` says where the agent's observation came from: ``world_model``,
``placeholder`` (a backend's stand-in, such as ``scripted``), ``fallback`` (the world model
failed, gave nothing, or was cut off by the token limit: the observation is the domain's
fallback), ``local`` (an invalid or locally answered action), ``rule`` (a decided tool's call,
answered by the domain's rule) or ``real`` (a real counterpart). :func:`read_step` reads a
step's own observation, :func:`step_info` picks the one the agent gets and builds the step's
``info``; :func:`reset_info` is the info that comes with the first observation.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from agentworld_envs.backends import Completion
from agentworld_envs.domains.base import Domain
from agentworld_envs.protocol.chat import PLACEHOLDER_RAW, Fault
from agentworld_envs.sim.config import SimConfig
from agentworld_envs.sim.model_client import checked_outcome
from agentworld_envs.world.fidelity import step_fidelity
from agentworld_envs.world.parsing import parse_world_model_output
from agentworld_envs.world.reality import RealStep
from agentworld_envs.world.scenario import Scenario
from agentworld_envs.world.step import PendingStep
from agentworld_envs.world.termination import Interpretation

__all__ = ["COUNTED", "LENGTH_LIMIT", "Reading", "choose_observation", "model_info",
           "read_completion", "read_step", "reset_info", "step_info"]

LENGTH_LIMIT = "the world model reached its token limit before finishing the observation"
_UNUSABLE = frozenset({"fault", "no_output", "length_limit"})
"""Flags whose step gets the domain's fallback observation."""
COUNTED = ("fault", "no_output", "length_limit", "placeholder")
"""What an episode counts: the unusable flags and placeholder observations."""


@dataclass(slots=True)
class Reading:
    """One step's observation, ``info["world_model"]``, the raw output and the source."""

    observation: str
    info: dict[str, Any]
    raw: str = ""
    source: str = "world_model"

    @property
    def usable(self) -> bool:
        return self.source != "fallback"

    @property
    def counted(self) -> list[str]:
        """What of :data:`COUNTED` this step has."""
        return [flag for flag in COUNTED if flag in self.info["flags"] or flag == self.source]


def model_info(called: bool, flags: tuple[str, ...] = (), fault: str = "",
               fault_message: str = "", finish_reason: str = "", output_tokens: int | None = 0,
               diagnostics: dict[str, int] | None = None) -> dict[str, Any]:
    """``info["world_model"]``: whether the model was asked, and what went wrong.

    ``output_tokens`` is left out where the backend did not report it (None): unknown, not 0,
    and absent as Gymnasium's vector info marks a key a sub-env lacks (None would break an
    integer column batched across sub-envs).
    """
    ok = called and _UNUSABLE.isdisjoint(flags)
    info = {"called": called, "ok": ok, "flags": flags, "fault": fault,
            "fault_message": fault_message, "finish_reason": finish_reason}
    if output_tokens is not None:
        info["output_tokens"] = output_tokens
    if diagnostics is not None:
        info["diagnostics"] = diagnostics
    return info


def read_completion(domain: Domain, state: str | None, outcome: Completion | Fault | None,
                    max_chars: int) -> Reading:
    """The observation in the world model's answer, or the domain's fallback (flagged)."""
    outcome = checked_outcome(outcome)
    if isinstance(outcome, Fault):
        return Reading(domain.fallback_observation(state, outcome.message),
                       model_info(True, ("fault",), outcome.kind, outcome.message),
                       source="fallback")
    parsed = parse_world_model_output(outcome.text, max_chars, expect_tag=domain.uses_tags)
    flags = parsed.flags + (("length_limit",) if outcome.finish_reason == "length" else ())
    info = model_info(True, flags, "", "", outcome.finish_reason, outcome.usage.output_tokens,
                      parsed.diagnostics)
    if "length_limit" in flags:  # a cut-off answer is never passed off as an observation
        return Reading(domain.fallback_observation(state, LENGTH_LIMIT), info, outcome.text,
                       "fallback")
    if "no_output" in flags:
        observation = (domain.fallback_observation(state, "no output")
                       if domain.shows_state else parsed.observation)
        return Reading(observation, info, outcome.text, "fallback")
    source = "placeholder" if outcome.raw == PLACEHOLDER_RAW else "world_model"
    return Reading(parsed.observation, info, outcome.text, source)


def reset_info(domain: Domain, scenario: Scenario, candidates: list[str], budget: int,
               fictional: bool, reveal: bool) -> dict[str, Any]:
    """The reset info. It never holds the scenario's hidden fields unless ``reveal`` (the env
    was made with ``reveal_reference=True``); then ``info["reference"]`` has them."""
    info = {"domain": domain.key, "scenario_id": scenario.id,
            "instruction": scenario.instruction,
            "tools": copy.deepcopy(domain.tools(scenario)),  # the caller's to change
            "candidate_actions": list(candidates),
            "max_steps": budget, "fictional": fictional}
    if reveal:
        info["reference"] = {"solution": scenario.solution_actions,
                             "reference_answer": scenario.reference_answer,
                             "world": scenario.world}
    return info


def read_step(pending: PendingStep, outcome: Completion | Fault | None, domain: Domain,
              state: str | None, max_chars: int) -> Reading:
    """The step's own observation: the real counterpart's where it alone played the step, the
    domain rule's for a decided tool, the world model's, or the env's (an action it answers)."""
    interpretation = pending.interpretation
    if pending.played:
        return Reading(pending.real.observation, model_info(False), source="real")
    if pending.decided is not None:
        return Reading(pending.decided.observation, model_info(False), source="rule")
    if interpretation.kind == "simulate":
        return read_completion(domain, state, outcome, max_chars)
    return Reading(interpretation.observation, model_info(False), source="local")


def step_info(pending: PendingStep, reading: Reading, turn: int,
              config: SimConfig) -> tuple[str, str, dict[str, Any]]:
    """The observation the agent gets, its source, and the step's ``info``; where a real
    counterpart played the step too, :func:`choose_observation` picks."""
    interpretation, real = pending.interpretation, pending.real
    observation, source = reading.observation, reading.source
    info: dict[str, Any] = {
        "turn": turn, "invalid_action": interpretation.kind == "invalid",
        "action_error": interpretation.error or "", "controls": pending.controls,
        "world_model": reading.info}
    if real is not None:
        if not pending.played:
            observation, source = choose_observation(interpretation, reading, real, config, info)
        if source == "real" or config.reveal_reference:  # else it bypasses the model
            info["real_observation"] = real.observation
    info["observation_source"] = source
    return observation, source, info


def choose_observation(interpretation: Interpretation, reading: Reading, real: RealStep,
                       config: SimConfig, info: dict[str, Any]) -> tuple[str, str]:
    """The observation and its source where a real counterpart played the step too: fidelity
    measured into ``info``, the real observation where the mode or the action asks for it."""
    if interpretation.kind == "invalid":
        return real.observation, "real"
    if interpretation.kind != "simulate":
        return reading.observation, reading.source
    fidelity = step_fidelity(reading.observation, real.observation)
    info["fidelity"] = fidelity.to_dict()
    unusable = not reading.usable or (fidelity.real_json and not fidelity.predicted_json)
    tools = set(interpretation.tools)
    if tools & set(config.decided_tools):
        return real.observation, "real"
    if config.mode == "hybrid" and (unusable or tools & set(config.real_tools)):
        return real.observation, "real"
    return reading.observation, reading.source
