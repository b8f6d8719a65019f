"""The machinery behind an env or a vector env: domain, model clients, scenarios, batched steps.

:meth:`Simulator.advance` advances any number of episodes with ONE world-model call (every
episode that needs the model contributes its request to the batch), then one judge call for
the episodes that ended and ask for a judge.

Making a simulator on the ``scripted`` placeholder warns once per process; a world-model or
judge fault warns at every step that has one, or, with ``on_fault="raise"``, ends the step in a
:class:`WorldModelFault`. :attr:`Simulator.faults` counts the model calls and the failed ones
(ending the step in :class:`~agentworld_envs.backends.faults.TooManyFaultsError` past
``max_faults``); :attr:`Simulator.sources` counts the observations by where they came from.
The env raises a step's error only once the step is done. Once :meth:`Simulator.close`
has run, a reset or step (or one in flight then) raises ``ClosedEnvironmentError``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pydantic
from gymnasium.error import ClosedEnvironmentError

from agentworld_envs.backends.faults import FaultTally, TooManyFaultsError
from agentworld_envs.cli_errors import refused_value
from agentworld_envs.domains import get_domain
from agentworld_envs.protocol.chat import Fault
from agentworld_envs.protocol.seeding import draw_seed
from agentworld_envs.protocol.warn_outside import warn_outside
from agentworld_envs.sim.config import SimConfig
from agentworld_envs.sim.episode import Episode
from agentworld_envs.sim.model_client import ModelClient, WorldModelFault, model_identity
from agentworld_envs.world.scenario import Scenario
from agentworld_envs.world.step import StepResult

__all__ = ["Simulator"]

_warned_placeholder = False


def _warn_placeholder_once(backend: str | None) -> None:
    global _warned_placeholder
    if not _warned_placeholder:
        _warned_placeholder = True
        warn_outside(f"this AgentWorld env runs on the {backend!r} backend: its observations "
                     "are placeholders, not a world model's (observation_source "
                     "'placeholder'); pass backend=... to attach one", UserWarning)


class Simulator:
    """Everything an env needs besides its own random generator(s).

    Args:
        config: The env's settings.
    """

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.domain = get_domain(config.domain)
        self._pool = self._scenario_pool()
        self.prompts = config.prompt_set()
        self.world_model = None if config.mode == "real" else ModelClient(
            config.world_model_backend(), config.record_path, config.timeout_s)
        """None in real mode, which asks no world model."""
        self.identity = {**(model_identity(self.world_model.describe()) if self.world_model
                            else {"backend": None, "model": None}),
                         "prompts": self.prompts.describe()}
        """``info["world_model"]`` names: backend, model and prompt set."""
        if self.world_model is not None and self.world_model.answers_with_placeholders:
            _warn_placeholder_once(self.identity["backend"])
        self.judge = self.world_model if config.judge_backend is None else ModelClient(
            config.judge_backend, config.record_path, config.timeout_s)
        self.faults = FaultTally(config.max_faults, "model calls", "max_faults")
        """World-model and judge calls made and failed, with the reasons."""
        self.sources: Counter[str] = Counter()
        """Step observations by ``info["observation_source"]`` (``fallback``, ...)."""
        self.closed = False
        """Whether :meth:`close` has run."""

    def _scenario_pool(self) -> list[Scenario] | None:
        selection = self.config.scenarios
        if selection == "generated":
            self.domain.generate(0)  # fail at make time when the domain has no generator
            return None
        pool = (list(self.domain.builtin.values()) if selection == "builtin"
                else [self.domain.resolve(s) for s in selection])
        if not pool:
            raise ValueError("scenarios must name at least one scenario")
        return pool

    def pick(self, rng: np.random.Generator, options: dict[str, Any] | None) -> Scenario:
        """The scenario given in ``options["scenario"]``, else one drawn from ``rng``."""
        spec = (options or {}).get("scenario")
        if spec is not None:
            return self._resolve(spec)
        if self._pool is None:
            return self.domain.generate(draw_seed(rng))
        return self._pool[int(rng.integers(len(self._pool)))]

    def _resolve(self, spec: Any) -> Scenario:
        """``options["scenario"]`` as a scenario of the domain; what is wrong with it is one
        ``ValueError`` (as an unknown id is), which a vector env's worker sends back as itself."""
        if not isinstance(spec, str | dict | Scenario):
            raise ValueError('options["scenario"] must be a scenario id, dict or Scenario, not '
                             f"{type(spec).__name__}")
        try:
            return self.domain.resolve(spec)
        except pydantic.ValidationError as error:  # one line; the server answers with its errors
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'scenario'}: "
                                 f"{refused_value(e)}" for e in error.errors())
            raise ValueError(f'options["scenario"] is no valid {self.domain.key} scenario: '
                             f"{problems}") from error

    def episode(self, rng: np.random.Generator, options: dict[str, Any] | None,
                limit: int, sampling_stream: int = 0, exact: bool = False) -> Episode:
        """Start an episode with at most ``limit`` steps (fewer when the scenario says so,
        unless ``exact``: a budget the user gave), its world-model requests in
        ``sampling_stream``."""
        self._check_open()
        scenario = self.pick(rng, options)
        budget = limit if exact else min(limit, scenario.max_steps or limit)
        if self.judge is None and (self.config.reward_kind or scenario.reward.kind) != "rule":
            raise ValueError(f"scenario {scenario.id} has a judged reward and mode='real' "
                             "builds no world model to judge it: pass judge_backend")
        return Episode(self.domain, scenario, self.config, rng, budget, self.prompts,
                       self.identity, sampling_stream)

    def advance(self, episodes: Sequence[Episode], actions: Sequence[Any],
                ) -> tuple[list[StepResult], Exception | None]:
        """Advance every episode by its action: one world-model call, then one judge call.

        Returns the results and the error the step ends with, for the env to raise once its
        own bookkeeping is done (a vector env's autoresets): :class:`TooManyFaultsError` past
        ``max_faults``, else :class:`WorldModelFault` for a failed world-model or judge call
        under ``on_fault="raise"`` (under ``"report"`` it warns instead); None when all went
        well. Raises ``ClosedEnvironmentError`` once :meth:`close` has run, also when it ran
        during the step's calls (which it cancelled).
        """
        self._check_open()
        requests = [episode.begin(action)
                    for episode, action in zip(episodes, actions, strict=True)]
        asked = [i for i, request in enumerate(requests) if request is not None]
        outcomes = dict(zip(asked, self.world_model.complete([requests[i] for i in asked]),
                            strict=True)) if asked else {}
        results = [episode.complete(outcomes.get(i)) for i, episode in enumerate(episodes)]
        finished = [i for i, result in enumerate(results) if result.closes_episode]
        judged = [i for i in finished if episodes[i].needs_judge]
        verdicts = dict(zip(judged, self.judge.complete(
            [episodes[i].judge_request() for i in judged]), strict=True)) if judged else {}
        self._check_open()
        for i in finished:
            episodes[i].settle(results[i], verdicts.get(i))
        self.sources.update(result.info.get("observation_source", "none") for result in results)
        calls = [*outcomes.values(), *verdicts.values()]
        unread = {i: results[i].info["reward_breakdown"]["judge_error"] for i, verdict
                  in verdicts.items() if not isinstance(verdict, Fault)
                  and results[i].info["reward_breakdown"].get("judge_error")}
        try:
            self.faults.add(len(calls), [f"{c.kind}: {c.message}" for c in calls
                                         if isinstance(c, Fault)]
                            + [f"unreadable verdict: {error}" for error in unread.values()])
        except TooManyFaultsError as error:
            return results, error
        judge_faults = {i: v for i, v in verdicts.items() if isinstance(v, Fault)}
        return results, self._report(results, judge_faults, unread)

    def _report(self, results: list[StepResult], judge_faults: dict[int, Fault],
                unread: dict[int, str]) -> WorldModelFault | None:
        """Warn about the step's failed calls and unreadable verdicts, or
        (``on_fault="raise"``) return the error."""
        model_faults = [i for i, result in enumerate(results)
                        if result.info.get("world_model", {}).get("fault")]
        problems = []
        if model_faults:
            model = results[model_faults[0]].info["world_model"]
            problems.append(
                f"the world model ({self.identity['backend']}) failed on {len(model_faults)} of "
                f"{len(results)} episode(s): {model['fault']}: {model['fault_message']}; the "
                "agent got a fallback observation (observation_source 'fallback')")
        if judge_faults:
            fault = next(iter(judge_faults.values()))
            backend = model_identity(self.judge.describe())["backend"]
            problems.append(
                f"the judge ({backend}) failed on {len(judge_faults)} of {len(results)} "
                f"episode(s): {fault.kind}: {fault.message}; their reward is 0, marked "
                "reward_breakdown['judge_fault']")
        if unread:
            problems.append(
                f"the judge's verdict could not be read on {len(unread)} of {len(results)} "
                f"episode(s): {next(iter(unread.values()))}; the judge counts 0 in their "
                "reward, marked reward_breakdown['judge_error']")
        if not problems:
            return None
        message = "; ".join(problems)
        if self.config.on_fault == "raise":
            return WorldModelFault(message, results,
                                   sorted({*model_faults, *judge_faults, *unread}))
        # the running count makes each step's warning new, so Python's filter shows them all
        warn_outside(f"{message} ({self.faults.failed} of {self.faults.calls} model calls "
                     "failed so far)", RuntimeWarning)
        return None

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvironmentError("this AgentWorld env is closed, its world model "
                                         "released: make a new env")

    def close(self) -> None:
        """Close the model clients (once: a second call does nothing)."""
        if self.closed:
            return
        self.closed = True
        if self.world_model is not None:
            self.world_model.close()
        if self.judge is not None and self.judge is not self.world_model:
            self.judge.close()
