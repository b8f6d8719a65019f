"""One simulated episode: the state machine shared by the single env and the vector env.

A step has two halves so that many episodes can share one batched model call:
:meth:`Episode.begin` reads the action and returns the world-model request (or None when the
action needs no model: a final answer, an invalid action); :meth:`Episode.complete` turns the
completion, or a fault, into the observation. When the episode has ended,
:meth:`Episode.settle` computes the reward from the verifier and, where asked, the judge.
Reading the observation is :mod:`agentworld_envs.sim.observation`; the step as data,
:mod:`agentworld_envs.world.step`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from agentworld_envs.backends import ChatRequest, Completion
from agentworld_envs.domains.base import Domain
from agentworld_envs.protocol.chat import Fault, MessageLog
from agentworld_envs.protocol.seeding import request_seed, shuffled
from agentworld_envs.sim.config import SimConfig
from agentworld_envs.sim.observation import Reading, read_step, reset_info, step_info
from agentworld_envs.world.controls import REJECTING, control_text, fired_controls
from agentworld_envs.world.parsing import tagged_observation
from agentworld_envs.world.prompt_sets import PromptSet
from agentworld_envs.world.prompting import observation_turn
from agentworld_envs.world.rewards import EpisodeLog, judge_request, read_judge, settle_sources
from agentworld_envs.world.scenario import Scenario
from agentworld_envs.world.step import PendingStep, StepResult
from agentworld_envs.world.termination import action_text, step_end

__all__ = ["Episode"]


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
        self.budget, self.sampling_stream = budget, sampling_stream
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
        self.reality = config.reality(domain, scenario, budget)
        self.real_log = EpisodeLog(scenario) if self.reality is not None else None
        """The same actions with the real counterpart's observations, where there is one."""
        self._pending: PendingStep | None = None

    def first_observation(self) -> tuple[str, dict[str, Any]]:
        """The reset observation (the task as the agent sees it) and the reset info
        (:func:`~agentworld_envs.sim.observation.reset_info`)."""
        info = reset_info(self.domain, self.scenario, self.candidates, self.budget,
                          self.fictional, self.config.reveal_reference)
        return self.domain.agent_prompt(self.scenario), info

    def begin(self, action: Any) -> ChatRequest | None:
        """Read the action; return the world-model request it needs, if any."""
        if self.ended:
            self._pending = None
            return None
        self.turn += 1
        text, problem = action_text(action, self.config.max_action_chars)
        interpretation = (self.domain.reject(problem, self.state) if problem
                          else self.domain.interpret(text, self.scenario, self.state))
        simulated = interpretation.kind == "simulate"
        fired = (fired_controls(self.controls, self.turn, interpretation.tools, self.rng)
                 if simulated else [])
        real = self.reality.step(action, fired) if self.reality is not None else None
        decided = (self.domain.decide(self.scenario, self.log, interpretation.action_text,
                                      self.config.decided_by)
                   if simulated and real is None
                   and set(interpretation.tools) & set(self.config.decided_tools) else None)
        request, controls = None, tuple(map(control_text, fired)) if fired else ()
        if simulated and self.config.mode != "real" and decided is None:
            content = self.domain.user_message(
                self.scenario, self.model_turns + 1, interpretation.action_text,
                interpretation.language, self.state, self.fictional, controls)
            seed = request_seed(self.rng, self.sampling_stream)
            # tagged even where the prompt does not ask (MCP): the embedded model writes the
            # tag there too, and a model that does not loses nothing by it
            hint = tagged_observation(real.observation) if real is not None else None
            request = self.chat.request({"role": "user", "content": content},
                                        sampling=self.sampling.with_seed(seed), draft_hint=hint)
        rejected = any(c.kind in REJECTING for c in fired)
        self._pending = PendingStep(text, interpretation, request, controls, real, decided,
                                    rejected)
        return request

    def complete(self, outcome: Completion | Fault | None) -> StepResult:
        """Finish the step begun by :meth:`begin`, given the world model's answer (if asked)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return StepResult.after_end()
        reading = read_step(pending, outcome, self.domain, self.state,
                            self.config.max_observation_chars)
        self.counts.update(reading.counted)
        reading.info.update(self.identity, counts=dict(self.counts))
        observation, source, info = step_info(pending, reading, self.turn, self.config)
        terminated, truncated, ending = step_end(pending.interpretation, pending.outcome,
                                                 self.turn, self.budget)
        self._record(pending, observation, source, reading, info.get("fidelity"))
        result = StepResult(observation, 0.0, terminated, truncated, info,
                            closes_episode=terminated or truncated)
        if result.closes_episode:
            self.ended, self.log.ending = True, ending
            if self.real_log is not None and pending.real is not None:
                self.real_log.ending, self.real_log.verdict = ending, pending.real.verdict
            info.update(termination=ending, answer=self.log.answer or "")
        return result

    def _record(self, pending: PendingStep, observation: str, source: str, reading: Reading,
                fidelity: dict[str, Any] | None) -> None:
        interpretation = pending.interpretation
        if interpretation.kind == "simulate" and pending.request is not None:
            self.model_turns += 1
            self.chat.append(pending.request.messages[-1])
            self.chat.append({"role": "assistant", "content": observation_turn(observation)})
            if self.domain.shows_state:
                self.state = observation
        self.log.record(pending.action, observation, source, interpretation, pending.rejected)
        if self.real_log is not None and pending.real is not None:
            self.real_log.record(pending.action, pending.real.observation, "real", interpretation,
                                 pending.rejected and self.reality.honours_controls)
        self.transcript.append(pending.entry(self.turn, observation, reading.raw,
                                             reading.info["flags"], fidelity))

    @property
    def needs_judge(self) -> bool:
        """Whether the reward asks the rubric judge."""
        return self.reward_spec.kind != "rule"

    def judge_request(self) -> ChatRequest:
        """The judge's request for this finished episode (its seed drawn from ``rng``)."""
        seed = request_seed(self.rng)
        sampling = self.config.judge_params().with_seed(seed)
        return judge_request(self.log, self.reward_spec.rubric, sampling)

    def settle(self, result: StepResult, verdict: Completion | Fault | None) -> None:
        """Put the end-of-episode reward of ``config.reward``'s log and its breakdown into
        ``result`` (:func:`~agentworld_envs.world.rewards.settle_sources`), given the judge's
        answer over the simulated episode (None when none was asked). A failed judge call
        scores 0 and the breakdown says so: ``judge_fault`` is the fault's kind."""
        self.log.verdict = self.domain.verdict(self.scenario, self.log)
        judge = None if verdict is None else read_judge(verdict)
        result.reward, breakdown = settle_sources(
            self.reward_spec, {"simulated": self.log, "real": self.real_log},
            self.config.reward, judge, reveal=self.config.reveal_reference)
        if isinstance(verdict, Fault):
            breakdown["judge_fault"] = verdict.kind
        result.info["reward_breakdown"] = breakdown
