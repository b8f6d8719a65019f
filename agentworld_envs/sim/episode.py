"""One simulated episode: the step logic shared by the single env and the vector env.

A step has two halves so that many episodes can share one batched model call:
:meth:`Episode.begin` reads the action and returns the world-model request (or None when the
action needs no model: a final answer, an invalid action); :meth:`Episode.complete` turns the
completion, or a fault, into the observation. When the episode has ended,
:meth:`Episode.settle` computes the reward from the verifier and, where asked, the judge.
Reading the observation is :mod:`agentworld_envs.sim.observation`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentworld_envs.backends import ChatRequest, Completion
from agentworld_envs.domains.base import Domain
from agentworld_envs.protocol.chat import Fault, MessageLog
from agentworld_envs.protocol.endings import ENDED_OBSERVATION, STEP_BUDGET_EXHAUSTED
from agentworld_envs.protocol.seeding import SEED_BOUND, request_seed, shuffled
from agentworld_envs.sim.config import SimConfig
from agentworld_envs.sim.observation import (
    COUNTED,
    Reading,
    choose_observation,
    model_info,
    read_completion,
)
from agentworld_envs.world.controls import control_text, fired_controls
from agentworld_envs.world.prompt_sets import PromptSet
from agentworld_envs.world.prompting import observation_turn
from agentworld_envs.world.reality import RealStep
from agentworld_envs.world.rewards import EpisodeLog, judge_request, settle_sources
from agentworld_envs.world.scenario import Scenario
from agentworld_envs.world.termination import Interpretation

__all__ = ["Episode", "StepResult"]

_STREAM_STRIDE = 0x9E3779B1
"""How far apart sampling streams start; as :data:`SEED_BOUND` is prime, streams below it never
share a request seed for one draw."""


@dataclass(slots=True)
class StepResult:
    """What one step returns, before the vector env batches it."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    closes_episode: bool = False
    """True on the step that ended the episode (not on steps after its end)."""


@dataclass(slots=True)
class _Pending:
    action: str
    interpretation: Interpretation
    request: ChatRequest | None
    controls: tuple[str, ...]
    real: RealStep | None
    decided: RealStep | None = None
    """What the domain's rule made of a decided tool's call (no real counterpart)."""


def _action_text(action: Any, limit: int) -> tuple[str, str | None]:
    """The action as safe text, and why it cannot be used (None when it can)."""
    if not isinstance(action, str):
        return "", f"an action must be a string, got {type(action).__name__}"
    if len(action) > limit:
        return "", f"the action is {len(action)} characters long; the limit is {limit}"
    if action.isascii():
        return action, None
    return action.encode("utf-8", "replace").decode("utf-8"), None


class Episode:
    """One episode of one scenario.

    Args:
        domain: The scenario's domain.
        scenario: What the episode is about.
        config: The env's settings.
        rng: The env's (or sub-env's) ``np_random``: every random draw comes from it.
        budget: The step budget; the episode is truncated after this many steps.
        prompts: The prompt set of the system message (default: the built-in one).
        identity: What ``info["world_model"]`` names: backend, model, prompt set.
        sampling_stream: Shifts every world-model request seed drawn from ``rng``: episodes
            with equal generators but different streams play the same scenario and sample
            differently (a GRPO group).
    """

    def __init__(self, domain: Domain, scenario: Scenario, config: SimConfig,
                 rng: np.random.Generator, budget: int, prompts: PromptSet | None = None,
                 identity: dict[str, Any] | None = None, sampling_stream: int = 0) -> None:
        self.domain, self.scenario, self.config, self.rng = domain, scenario, config, rng
        self.seed_shift = sampling_stream * _STREAM_STRIDE
        self.budget = budget
        self.candidates = shuffled(scenario.candidate_actions, rng)
        """The scenario's candidate actions in this episode's order (a shuffle from ``rng``)."""
        self.reward_spec = (scenario.reward if config.reward_kind is None
                            else scenario.reward.model_copy(update={"kind": config.reward_kind}))
        self.fictional = scenario.fictional if config.fictional is None else config.fictional
        self.controls = [*scenario.controls, *config.controls]
        self.sampling = config.world_model_params()
        self.chat = MessageLog([{"role": "system", "content": domain.system_prompt(
            scenario, self.fictional, prompts)}])
        """The world model's conversation so far: each request extends it by one message."""
        self.identity = identity or {}
        self.counts: Counter[str] = Counter()
        """Steps of this episode by problem: ``fault``, ``no_output``, ``length_limit``,
        ``placeholder``."""
        self.state = scenario.initial_state if domain.shows_state else None
        self.turn = 0
        self.model_turns = 0
        """World-model requests sent (the ``### Turn N`` of the next is one more)."""
        self.ended = False
        self.log = EpisodeLog(scenario)
        """What the agent saw: the simulated episode."""
        self.transcript: list[dict[str, Any]] = []
        self.reality = domain.start_reality(scenario, budget) if config.real_counterpart else None
        if self.reality is None and "real" in (config.reward, config.mode):
            setting = "reward" if config.reward == "real" else "mode"
            raise ValueError(f'{setting}="real" needs a real counterpart, and {domain.key} '
                             f"scenario {scenario.id} has none")
        self.real_log = EpisodeLog(scenario) if self.reality is not None else None
        """The same actions with the real counterpart's observations, where there is one."""
        self._pending: _Pending | None = None

    def first_observation(self) -> tuple[str, dict[str, Any]]:
        """The reset observation (the task as the agent sees it) and the reset info.

        The info never holds the scenario's hidden fields unless the env was made with
        ``reveal_reference=True``; then ``info["reference"]`` has them.
        """
        scenario = self.scenario
        info = {"domain": self.domain.key, "scenario_id": scenario.id,
                "instruction": scenario.instruction,
                "tools": self.domain.tools(scenario),
                "candidate_actions": list(self.candidates),
                "max_steps": self.budget, "fictional": self.fictional}
        if self.config.reveal_reference:
            info["reference"] = {"solution": scenario.solution_actions,
                                 "reference_answer": scenario.reference_answer,
                                 "world": scenario.world}
        return self.domain.agent_prompt(scenario), info

    def begin(self, action: Any) -> ChatRequest | None:
        """Read the action; return the world-model request it needs, if any."""
        if self.ended:
            self._pending = None
            return None
        self.turn += 1
        text, problem = _action_text(action, self.config.max_action_chars)
        interpretation = (self.domain.reject(problem, self.state) if problem
                          else self.domain.interpret(text, self.scenario, self.state))
        simulated = interpretation.kind == "simulate"
        fired = (fired_controls(self.controls, self.turn, interpretation.tools, self.rng)
                 if simulated else [])
        real = (self.reality.step(action, fired) if self.reality is not None
                else None)
        decided = (self.domain.decide(self.scenario, self.log, interpretation.action_text)
                   if simulated and real is None
                   and set(interpretation.tools) & set(self.config.decided_tools) else None)
        request, controls = None, tuple(map(control_text, fired)) if fired else ()
        if simulated and self.config.mode != "real" and decided is None:
            content = self.domain.user_message(
                self.scenario, self.model_turns + 1, interpretation.action_text,
                interpretation.language, self.state, self.fictional, controls)
            seed = (request_seed(self.rng) + self.seed_shift) % SEED_BOUND
            request = self.chat.request({"role": "user", "content": content},
                                        sampling=self.sampling.with_seed(seed))
        self._pending = _Pending(text, interpretation, request, controls, real, decided)
        return request

    def complete(self, outcome: Completion | Fault | None) -> StepResult:
        """Finish the step begun by :meth:`begin`, given the world model's answer (if asked)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return StepResult(ENDED_OBSERVATION, 0.0, True, False, {
                "invalid_action": True, "action_error": ENDED_OBSERVATION})
        interpretation, real = pending.interpretation, pending.real
        played = real is not None and interpretation.kind == "simulate" \
            and pending.request is None  # mode="real"
        if played:
            reading = Reading(real.observation, model_info(False), source="real")
        elif pending.decided is not None:
            reading = Reading(pending.decided.observation, model_info(False), source="rule")
        elif interpretation.kind == "simulate":
            reading = read_completion(self.domain, self.state, outcome,
                                      self.config.max_observation_chars)
            self.counts.update(flag for flag in COUNTED
                               if flag in reading.info["flags"] or flag == reading.source)
        else:
            reading = Reading(interpretation.observation, model_info(False), source="local")
        reading.info.update(self.identity, counts=dict(self.counts))
        observation, source = reading.observation, reading.source
        info: dict[str, Any] = {
            "turn": self.turn, "invalid_action": interpretation.kind == "invalid",
            "action_error": interpretation.error or "", "controls": pending.controls,
            "world_model": reading.info}
        if real is not None:
            if not played:
                observation, source = choose_observation(interpretation, reading, real,
                                                         self.config, info)
            if source == "real" or self.config.reveal_reference:  # else it bypasses the model
                info["real_observation"] = real.observation
        info["observation_source"] = source
        outcome_step = real or pending.decided  # what the real env or the rule made of it
        terminated = (interpretation.kind != "invalid" and interpretation.ending is not None) \
            or bool(outcome_step and outcome_step.terminated)
        truncated = not terminated and self.turn >= self.budget
        self._record(pending, observation, source, reading, info.get("fidelity"))
        result = StepResult(observation, 0.0, terminated, truncated, info,
                            closes_episode=terminated or truncated)
        if result.closes_episode:
            self.ended = True
            if truncated:
                self.log.ending = STEP_BUDGET_EXHAUSTED
            else:
                self.log.ending = interpretation.ending or (
                    outcome_step.ending if outcome_step else None)
            if self.real_log is not None and real is not None:
                self.real_log.ending, self.real_log.verdict = self.log.ending, real.verdict
            info.update(termination=self.log.ending, answer=self.log.answer or "")
        return result

    def _record(self, pending: _Pending, observation: str, source: str, reading: Reading,
                fidelity: dict[str, Any] | None) -> None:
        interpretation = pending.interpretation
        if interpretation.kind == "simulate" and pending.request is not None:
            self.model_turns += 1
            self.chat.append(pending.request.messages[-1])
            self.chat.append({"role": "assistant", "content": observation_turn(observation)})
            if self.domain.shows_state:
                self.state = observation
        logs = [(self.log, observation, source)]
        if self.real_log is not None and pending.real is not None:
            logs.append((self.real_log, pending.real.observation, "real"))
        for log, seen, origin in logs:
            log.record(pending.action, seen, origin, interpretation.tools, interpretation.ending,
                       interpretation.answer)
        self.transcript.append({
            "turn": self.turn, "action": pending.action, "kind": interpretation.kind,
            "controls": pending.controls,
            "seed": pending.request.sampling.seed if pending.request else None,
            "raw_output": reading.raw, "observation": observation,
            "flags": reading.info["flags"], "fidelity": fidelity})

    @property
    def needs_judge(self) -> bool:
        """Whether the reward asks the rubric judge."""
        return self.reward_spec.kind != "rule"

    def judge_request(self) -> ChatRequest:
        """The judge's request for this finished episode (its seed drawn from ``rng``)."""
        seed = request_seed(self.rng)
        sampling = self.config.judge_params().with_seed(seed)
        return judge_request(self.log, self.reward_spec.rubric, sampling)

    def settle(self, result: StepResult, judge: tuple[float, str] | None) -> None:
        """Put the end-of-episode reward of ``config.reward``'s log and its breakdown into
        ``result`` (:func:`~agentworld_envs.world.rewards.settle_sources`); the judge, when
        asked, read the simulated episode."""
        self.log.verdict = self.domain.verdict(self.scenario, self.log)
        result.reward, result.info["reward_breakdown"] = settle_sources(
            self.reward_spec, {"simulated": self.log, "real": self.real_log},
            self.config.reward, judge, reveal=self.config.reveal_reference)
