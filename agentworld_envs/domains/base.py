"""What every simulated domain provides, and the two families of domains.

A domain owns its hand-written scenarios and demonstrations (``scenarios.yaml`` in its folder,
``domains/<module>/``), the agent-facing task prompt, how an action is read
(:meth:`Domain.interpret`, including how the episode ends) and how its turns are laid out for
the world model (:meth:`Domain.user_message`, the release's wire layout). Its system prompt
is its folder's ``prompt.txt``, unless a prompt set (:mod:`agentworld_envs.world.prompt_sets`)
names a directory in the release's layout.

* :class:`ToolDomain` (mcp, search, swe, floor): the agent calls tools by JSON; text with no
  tool call is the final answer.
* :class:`StateDomain` (terminal, android, web, os): the agent acts on a screen or tree that the
  world model redraws after every action.
"""

from __future__ import annotations

import abc
import functools
import json
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import pydantic
import yaml

from agentworld_envs.cli_errors import UnknownNameError
from agentworld_envs.domains import DOMAINS
from agentworld_envs.protocol.bounded_json import unfence
from agentworld_envs.protocol.endings import FINAL_ANSWER
from agentworld_envs.protocol.tool_calls import parse_action
from agentworld_envs.world.prompt_sets import PromptSet
from agentworld_envs.world.prompting import (
    fill_template,
    render_demonstrations,
    simulation_instruction,
    user_turn,
)
from agentworld_envs.world.reality import Reality, RealStep
from agentworld_envs.world.scenario import Demonstration, DomainKey, Scenario, normalise_tool
from agentworld_envs.world.termination import Interpretation, finish, invalid, simulate

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from agentworld_envs.world.rewards import EpisodeLog

__all__ = ["Catalog", "Domain", "StateDomain", "ToolDomain"]

Turns = Literal["never", "first", "every"]
"""On which world-model turns a section appears (``first``: the episode's first request)."""


def _shown(turns: Turns, first: bool) -> bool:
    return turns == "every" or (turns == "first" and first)


class Catalog(pydantic.BaseModel):
    """A domain's package data: default tools, action space, demonstrations and scenarios."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    domain: DomainKey
    tools: list[dict[str, Any]] = []
    action_space: str | None = None
    demonstrations: list[Demonstration] = []
    scenarios: list[dict[str, Any]] = []

    @pydantic.field_validator("tools")
    @classmethod
    def _normalise_tools(cls, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [normalise_tool(t) for t in tools]


class Domain(abc.ABC):
    """One simulated domain."""

    key: ClassVar[str]
    language: ClassVar[str] = "json"
    """Code-fence language of actions in the world model's prompt."""
    shows_state: ClassVar[bool] = False
    """Whether the domain has a state (screen or tree) that the world model redraws."""
    state_turns: ClassVar[Turns] = "never"
    """Turns that carry ``**Current State:**``."""
    task_turns: ClassVar[Turns] = "never"
    """Turns that carry ``**Task Instruction:**`` (elsewhere the task is context in the first
    turn's Simulation Instruction)."""
    uses_tags: ClassVar[bool] = False
    """Whether the domain's prompts ask for a ``<predicted_observation>`` block."""
    action_hint: ClassVar[str]
    """How to act, as told to the agent at reset."""

    @property
    def max_steps(self) -> int:
        """The default step budget (the registered ``max_episode_steps``)."""
        return DOMAINS[self.key].max_steps

    @functools.cached_property
    def catalog(self) -> Catalog:
        """The domain's package data."""
        text = (self._folder() / "scenarios.yaml").read_text(encoding="utf-8")
        return Catalog.model_validate(yaml.safe_load(text))

    @functools.cached_property
    def prompt_template(self) -> str:
        """The domain's own world-model system-prompt template (its folder's ``prompt.txt``)."""
        return (self._folder() / "prompt.txt").read_text(encoding="utf-8")

    def _folder(self) -> Traversable:
        return resources.files(f"agentworld_envs.domains.{DOMAINS[self.key].module}")

    @functools.cached_property
    def builtin(self) -> dict[str, Scenario]:
        """The hand-written scenarios, by id."""
        scenarios = [Scenario.model_validate({**s, "domain": self.key})
                     for s in self.catalog.scenarios]
        for scenario in scenarios:
            self.check(scenario)
        return {s.id: s for s in scenarios}

    def generate(self, seed: int) -> Scenario:
        """A procedurally generated scenario, fixed by ``seed``."""
        raise ValueError(f"the {self.key} domain has no scenario generator; "
                         "use scenarios='builtin' or pass scenarios explicitly")

    def resolve(self, spec: Scenario | dict[str, Any] | str) -> Scenario:
        """A scenario from an id, a dict or a :class:`Scenario`, checked against this domain.

        Raises:
            UnknownNameError: (a ``ValueError``) an id that is no scenario of this domain, with
                the nearest ids.
            ValueError: a scenario of another domain, or one this domain cannot play.
        """
        if isinstance(spec, str):
            if spec not in self.builtin:
                raise UnknownNameError(f"{self.key} scenario", spec, self.builtin,
                                       listing=f"agentworld sim scenarios {self.key}")
            return self.builtin[spec]
        scenario = spec if isinstance(spec, Scenario) else Scenario.model_validate(
            {"domain": self.key, **spec})
        if scenario.domain != self.key:
            raise ValueError(f"scenario {scenario.id} is for {scenario.domain}, not {self.key}")
        self.check(scenario)
        return scenario

    @abc.abstractmethod
    def check(self, scenario: Scenario) -> None:
        """Raise ValueError when the scenario lacks what this domain needs."""

    def tools(self, scenario: Scenario) -> list[dict[str, Any]]:
        """OpenAI schemas of the tools the agent may call (none outside the tool domains)."""
        return []

    @abc.abstractmethod
    def tool_definitions(self, scenario: Scenario) -> str:
        """The ``{tool_definitions}`` slot: tool schemas, or the action space."""

    def system_prompt(self, scenario: Scenario, fictional: bool,
                      prompts: PromptSet | None = None) -> str:
        """The world model's system message: the prompt set's template, placeholders filled.

        Nothing about the episode is written here beyond the tools and the demonstrations: the
        task, the world notes and the controls travel in the user turns.
        """
        demos = [*self.catalog.demonstrations, *scenario.demonstrations]
        return fill_template(
            (prompts.system_prompt(self.key) if prompts else None) or self.prompt_template,
            tool_definitions=self.tool_definitions(scenario),
            demonstrations=render_demonstrations(demos, self.language),
        )

    def user_message(self, scenario: Scenario, turn: int, action_text: str, language: str,
                     state: str | None, fictional: bool, controls: Sequence[str] = ()) -> str:
        """The world model's user turn ``turn`` (1 for the episode's first request)."""
        first = turn == 1
        task = scenario.instruction if _shown(self.task_turns, first) else None
        notes = self.simulation_notes(scenario, fictional) if first else {}
        instruction = (simulation_instruction(**notes, controls=controls) if notes or controls
                       else None)
        return user_turn(turn, action_text, language,
                         state=state if _shown(self.state_turns, first) else None, task=task,
                         instruction=instruction)

    def simulation_notes(self, scenario: Scenario, fictional: bool) -> dict[str, Any]:
        """What the first turn's Simulation Instruction says about the world."""
        task = None if self.task_turns != "never" else scenario.instruction
        return {"task": task, "world": scenario.world, "fictional": fictional}

    @abc.abstractmethod
    def agent_prompt(self, scenario: Scenario) -> str:
        """The first observation the agent sees."""

    @abc.abstractmethod
    def interpret(self, action: str, scenario: Scenario, state: str | None) -> Interpretation:
        """Read one action. Never raises on the action's content."""

    @abc.abstractmethod
    def reject(self, error: str, state: str | None, hint: str | None = None) -> Interpretation:
        """An action that cannot be performed: the observation says why; nothing changes."""

    @abc.abstractmethod
    def fallback_observation(self, state: str | None, reason: str) -> str:
        """What the agent sees when the world model gives nothing usable."""

    def start_reality(self, scenario: Scenario, budget: int) -> Reality | None:
        """A real counterpart of the episode, where one exists."""
        return None

    def decide(self, scenario: Scenario, log: EpisodeLog, action: str,
               by: str = "shown") -> RealStep | None:
        """The outcome of a call to a decided tool in an episode with no real counterpart, by
        the domain's own rule over the simulated episode (floor; ``by`` as
        ``SimConfig.decided_by``); None lets the world model answer it."""
        return None

    def verdict(self, scenario: Scenario, log: EpisodeLog) -> dict[str, Any] | None:
        """The verdict of a finished episode from its log alone, for domains that have a
        verifier of their own (floor); None elsewhere."""
        return None


class ToolDomain(Domain):
    """A domain whose actions are tool calls, ended by a final answer."""

    action_hint: ClassVar[str] = (
        'Call a tool with {"name": "<tool>", "arguments": {...}} (or a JSON list of calls). '
        "Reply without a tool call to give your final answer.")

    def tools(self, scenario: Scenario) -> list[dict[str, Any]]:
        """The domain's default tools, then the scenario's (which replace same-named ones)."""
        merged = {t["function"]["name"]: t for t in self.catalog.tools}
        merged.update({t["function"]["name"]: t for t in scenario.tools})
        return list(merged.values())

    @functools.cached_property
    def _catalog_tool_names(self) -> frozenset[str]:
        return frozenset(t["function"]["name"] for t in self.catalog.tools)

    def tool_names(self, scenario: Scenario) -> frozenset[str]:
        """The names of :meth:`tools`."""
        return self._catalog_tool_names.union(t["function"]["name"] for t in scenario.tools)

    def check(self, scenario: Scenario) -> None:
        """A tool scenario needs tools."""
        if not self.tools(scenario):
            raise ValueError(f"{self.key} scenario {scenario.id} offers no tools")

    def tool_definitions(self, scenario: Scenario) -> str:
        """The tool schemas, as JSON."""
        return json.dumps(self.tools(scenario), indent=2, ensure_ascii=False)

    def agent_prompt(self, scenario: Scenario) -> str:
        """The task, the tools with their parameters, and how to act."""
        if not self.tools(scenario):
            return f"{scenario.instruction}\n\nReply with your answer."
        lines = []
        for tool in self.tools(scenario):
            function = tool["function"]
            params = ", ".join(function["parameters"].get("properties", {}))
            lines.append(f"- {function['name']}({params}): {function['description']}")
        return (f"{scenario.instruction}\n\nTools:\n" + "\n".join(lines)
                + f"\n\n{self.action_hint}")

    def interpret(self, action: str, scenario: Scenario, state: str | None) -> Interpretation:
        """Tool calls are simulated; text without a call is the final answer."""
        parsed = parse_action(action)
        if parsed.errors:
            return self.reject("; ".join(e.message for e in parsed.errors), state)
        if not parsed.calls:
            return finish(FINAL_ANSWER, "", answer=parsed.text)
        names = tuple(c.name for c in parsed.calls)
        if not self._catalog_tool_names.issuperset(names):  # else the scenario may add them
            known = self.tool_names(scenario)
            unknown = sorted(set(names) - known)
            if unknown:
                return self.reject(f"unknown tool(s): {', '.join(unknown)}", state,
                                   hint=f"Available tools: {', '.join(sorted(known))}.")
        calls = [c.to_dict() for c in parsed.calls]
        return simulate(json.dumps(calls[0] if len(calls) == 1 else calls, indent=2,
                                   ensure_ascii=False), "json", names)

    def reject(self, error: str, state: str | None, hint: str | None = None) -> Interpretation:
        """A client-side error object, as an MCP client reports a call it cannot send."""
        return invalid(error, _error_json("invalid_action", error, hint or self.action_hint))

    def fallback_observation(self, state: str | None, reason: str) -> str:
        """A tool-level error saying the environment did not answer."""
        return _error_json("environment_unavailable", reason, "Try the call again.")


def _error_json(kind: str, message: str, hint: str) -> str:
    return json.dumps({"error": {"type": kind, "message": message, "hint": hint}},
                      ensure_ascii=False)


class StateDomain(Domain):
    """A domain whose state is a screen or tree that the world model redraws."""

    shows_state: ClassVar[bool] = True
    state_turns: ClassVar[Turns] = "every"
    uses_tags: ClassVar[bool] = True

    def check(self, scenario: Scenario) -> None:
        """A state scenario needs its initial state."""
        if not scenario.initial_state:
            raise ValueError(f"{self.key} scenario {scenario.id} has no initial_state")

    def tool_definitions(self, scenario: Scenario) -> str:
        """The domain's action space."""
        return self.catalog.action_space or ""

    def agent_prompt(self, scenario: Scenario) -> str:
        """The task, the current state and how to act."""
        return (f"{scenario.instruction}\n\nCurrent state:\n{scenario.initial_state}\n\n"
                f"{self.action_hint}")

    def interpret(self, action: str, scenario: Scenario, state: str | None) -> Interpretation:
        """Read the action (inside a code fence or bare)."""
        return self.read_action(unfence(action).strip(), state or "")

    @abc.abstractmethod
    def read_action(self, text: str, state: str) -> Interpretation:
        """Read the unfenced action text against the current state."""

    def reject(self, error: str, state: str | None, hint: str | None = None) -> Interpretation:
        """The error and how to act, then the unchanged state."""
        return invalid(error, f"Invalid action: {error}\n{hint or self.action_hint}\n\n"
                              f"{state or ''}")

    def fallback_observation(self, state: str | None, reason: str) -> str:
        """The unchanged state: the conservative guess when the world model fails."""
        return state or ""
