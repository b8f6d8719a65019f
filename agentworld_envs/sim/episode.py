"""One simulated episode: the step logic shared by the single env and the vector env.

A step has two halves so that many episodes can share one batched model call:
:meth:`Episode.begin` reads the action and returns the world-model request (or None when the
action needs no model: a final answer, an invalid action); :meth:`Episode.complete` turns the
completion, or a fault, into the observation. When the episode has ended,
:meth:`Episode.settle` computes the reward from the verifier and, where asked, the judge.

``info["observation_source"]`` says where the agent's observation came from: ``world_model``,
``placeholder`` (the ``scripted`` stand-in), ``fallback`` (the world model failed, gave
nothing, or was cut off by the token limit: the observation is the domain's fallback),
``local`` (an invalid or locally answered action) or ``real`` (a real counterpart).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentworld_envs.backends import ChatRequest, Completion
from agentworld_envs.domains.base import Domain
from agentworld_envs.protocol.chat import PLACEHOLDER_RAW, Fault, MessageLog
from agentworld_envs.protocol.endings import ENDED_OBSERVATION, STEP_BUDGET_EXHAUSTED
from agentworld_envs.protocol.seeding import SEED_BOUND, request_seed, shuffled
from agentworld_envs.sim.config import SimConfig
from agentworld_envs.world.controls import control_text, fired_controls
from agentworld_envs.world.fidelity import step_fidelity
from agentworld_envs.world.parsing import parse_world_model_output
from agentworld_envs.world.prompt_sets import PromptSet
from agentworld_envs.world.prompting import observation_turn
from agentworld_envs.world.reality import RealStep
from agentworld_envs.world.rewards import EpisodeLog, judge_request, settle
from agentworld_envs.world.scenario import Scenario
from agentworld_envs.world.termination import Interpretation

__all__ = ["Episode", "StepResult"]

LENGTH_LIMIT = "the world model reached its token limit before finishing the observation"
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


@dataclass(slots=True)
class _Reading:
    observation: str
    info: dict[str, Any]
    raw: str = ""
    source: str = "world_model"

    @property
    def usable(self) -> bool:
        return self.source != "fallback"


def _action_text(action: Any, limit: int) -> tuple[str, str | None]:
    """The action as safe text, and why it cannot be used (None when it can)."""
    if not isinstance(action, str):
        return "", f"an action must be a string, got {type(action).__name__}"
    if len(action) > limit:
        return "", f"the action is {len(action)} characters long; the limit is {limit}"
    if action.isascii():
        return action, None
    return action.encode("utf-8", "replace").decode("utf-8"), None


_UNUSABLE = ("fault", "no_output", "length_limit")
"""Flags whose step gets the domain's fallback observation."""
_UNUSABLE_SET = frozenset(_UNUSABLE)
_COUNTED = (*_UNUSABLE, "placeholder")
"""What :attr:`Episode.counts` counts: the unusable flags and placeholder observations."""


def _model_info(called: bool, flags: tuple[str, ...] = (), fault: str = "",
                fault_message: str = "", finish_reason: str = "", output_tokens: int = 0,
                diagnostics: dict[str, int] | None = None) -> dict[str, Any]:
    """``info["world_model"]``: whether the model was asked, and what went wrong."""
    ok = called and _UNUSABLE_SET.isdisjoint(flags)
    info = {"called": called, "ok": ok, "flags": flags, "fault": fault,
            "fault_message": fault_message, "finish_reason": finish_reason,
            "output_tokens": output_tokens}
    if diagnostics is not None:
        info["diagnostics"] = diagnostics
    return info


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
            reading = _Reading(real.observation, _model_info(False), source="real")
        elif pending.decided is not None:
            reading = _Reading(pending.decided.observation, _model_info(False), source="rule")
        elif interpretation.kind == "simulate":
            reading = self._read(outcome)
            if reading.info["flags"] or reading.source == "placeholder":
                for flag in _COUNTED:
                    if flag in reading.info["flags"] or flag == reading.source:
                        self.counts[flag] += 1
        else:
            reading = _Reading(interpretation.observation, _model_info(False), source="local")
        reading.info.update(self.identity, counts=dict(self.counts))
        observation, source = reading.observation, reading.source
        info: dict[str, Any] = {
            "turn": self.turn, "invalid_action": interpretation.kind == "invalid",
            "action_error": interpretation.error or "", "controls": pending.controls,
            "world_model": reading.info}
        if real is not None:
            if not played:
                observation, source = self._against_reality(interpretation, reading, real, info)
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

    def _read(self, outcome: Completion | Fault | None) -> _Reading:
        if not isinstance(outcome, Completion) or not isinstance(outcome.text, str):
            fault = outcome if isinstance(outcome, Fault) else Fault(
                "backend_error", f"the backend returned {type(outcome).__name__}, "
                                 "not a completion with text")
            return _Reading(self.domain.fallback_observation(self.state, fault.message),
                            _model_info(True, ("fault",), fault.kind, fault.message),
                            source="fallback")
        parsed = parse_world_model_output(outcome.text, self.config.max_observation_chars,
                                          expect_tag=self.domain.uses_tags)
        flags = parsed.flags + (("length_limit",) if outcome.finish_reason == "length" else ())
        info = _model_info(True, flags, "", "", outcome.finish_reason,
                           outcome.usage.output_tokens, parsed.diagnostics)
        if "length_limit" in flags:  # a cut-off answer is never passed off as an observation
            return _Reading(self.domain.fallback_observation(self.state, LENGTH_LIMIT), info,
                            outcome.text, "fallback")
        if "no_output" in flags:
            observation = (self.domain.fallback_observation(self.state, "no output")
                           if self.domain.shows_state else parsed.observation)
            return _Reading(observation, info, outcome.text, "fallback")
        source = "placeholder" if outcome.raw == PLACEHOLDER_RAW else "world_model"
        return _Reading(parsed.observation, info, outcome.text, source)

    def _against_reality(self, interpretation: Interpretation, reading: _Reading,
                         real: RealStep, info: dict[str, Any]) -> tuple[str, str]:
        """Measure fidelity; pick the real observation where the mode or the action asks."""
        if interpretation.kind == "invalid":
            return real.observation, "real"
        if interpretation.kind != "simulate":
            return reading.observation, reading.source
        fidelity = step_fidelity(reading.observation, real.observation)
        info["fidelity"] = fidelity.to_dict()
        unusable = not reading.usable or (fidelity.real_json and not fidelity.predicted_json)
        tools = set(interpretation.tools)
        if tools & set(self.config.decided_tools):
            return real.observation, "real"
        if self.config.mode == "hybrid" and (unusable or tools & set(self.config.real_tools)):
            return real.observation, "real"
        return reading.observation, reading.source

    def _record(self, pending: _Pending, observation: str, source: str, reading: _Reading,
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
            log.actions.append(pending.action)
            log.observations.append(seen)
            log.sources.append(origin)
            log.tools_called.extend(interpretation.tools)
            if interpretation.ending is not None:
                log.answer = interpretation.answer
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
        """Put the end-of-episode reward and its breakdown into ``result``.

        The reward comes from the log of ``config.reward``. Where the other log exists too,
        the breakdown holds its reward and checks under its name (``real`` or
        ``simulated``) and ``agree``: whether the two rewards are equal. The judge, when asked,
        read the simulated episode; both sources use its score.
        """
        self.log.verdict = self.domain.verdict(self.scenario, self.log)
        logs = {"simulated": self.log, "real": self.real_log}
        source = self.config.reward
        result.reward, breakdown = settle(self.reward_spec, logs[source], judge,
                                          reveal=self.config.reveal_reference)
        breakdown["source"] = source
        other = "real" if source == "simulated" else "simulated"
        if logs[other] is not None:
            reward, other_breakdown = settle(self.reward_spec, logs[other], judge,
                                             reveal=self.config.reveal_reference)
            breakdown[other] = {key: other_breakdown[key] for key in ("reward", "checks")
                                if key in other_breakdown}
            breakdown["agree"] = reward == result.reward
        result.info["reward_breakdown"] = breakdown
