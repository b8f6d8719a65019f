"""Scenarios: what one simulated episode is about, as plain-data pydantic models.

A scenario names its domain and gives either the tools the agent may call (tool domains) or the
initial screen (state domains), the task instruction, an optional reference answer, control
instructions that perturb the simulation, a reward spec, and the admissible candidate actions
that a discrete-action wrapper offers a policy.

Example:
    >>> s = Scenario(domain="search", id="demo", instruction="Who founded Velmora?",
    ...              reference_answer="Ilsa Toren", candidate_actions=["Ilsa Toren"])
    >>> s.reward.kind, [c.label for c in s.reward.checks]
    ('rule', [])
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal, get_args

import pydantic

__all__ = [
    "DOMAIN_KEYS",
    "Check",
    "Control",
    "Demonstration",
    "FloorRef",
    "McpServerRef",
    "RewardSpec",
    "Scenario",
    "normalise_tool",
]

DomainKey = Literal["mcp", "search", "terminal", "swe", "android", "web", "os", "floor"]
DOMAIN_KEYS: tuple[str, ...] = get_args(DomainKey)
"""The domain keys: the release's seven, then ours (``floor``); ``domains.DOMAINS`` has one
entry for each."""
CheckName = Literal[
    "answer_matches",
    "completed",
    "infeasible",
    "called_tool",
    "action_matches",
    "no_action_matches",
    "observation_contains",
    "answer_observed",
    "floor_verifier",
]
_NEEDS_VALUE = {"called_tool", "action_matches", "no_action_matches", "observation_contains"}
_NEEDS_EXPECTED = {"answer_matches", "answer_observed"}
"""Checks that compare with ``value``, else the scenario's reference answer."""
_PATTERNS = {"action_matches", "no_action_matches"}
_COMPARED = {"observation_contains"} | _NEEDS_EXPECTED
"""Checks whose text is compared without case and punctuation: it needs a letter or digit."""


def _has_words(text: str) -> bool:
    """Whether ``text`` keeps anything once punctuation and spacing are ignored."""
    return re.search(r"\w", unicodedata.normalize("NFKC", text)) is not None


class _Frozen(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class Control(_Frozen):
    """A control instruction: a targeted perturbation of the simulation.

    It fires on the listed ``turns`` (1-based), or on any turn with ``probability`` (drawn from
    the env's ``np_random``), and only for calls of ``tools`` when those are given.
    """

    kind: Literal["tool_error", "rate_limit", "empty_results", "stale_data", "custom"]
    tools: list[str] | None = None
    turns: list[pydantic.PositiveInt] | None = None
    probability: float = pydantic.Field(1.0, ge=0.0, le=1.0)
    note: str | None = None
    """Extra wording for the world model; required for ``custom``."""

    @pydantic.model_validator(mode="after")
    def _custom_has_note(self) -> Control:
        if self.kind == "custom" and not self.note:
            raise ValueError("a custom control needs a note saying what to do")
        return self


class Check(_Frozen):
    """One named rule of the verifier.

    ``answer_matches`` compares the agent's answer with ``value`` (default: the scenario's
    reference answer) by ``match`` (``contains``: as whole words; ``exact``; ``number``: as a
    number in any notation; ``date``: as a calendar date in ISO, day-month-year or
    month-day-year spelling, whose day must be stated when the expected date has one; see
    :func:`~agentworld_envs.world.rewards.answer_matches`), and fails an answer that also
    states one of ``excludes`` (known wrong answers: "47 or 52" hedges), unless the expected
    answer itself states it;
    ``called_tool`` names a tool; ``action_matches`` and
    ``no_action_matches`` take a regular expression over the actions, and with ``after``
    (another one) read the actions only past the first match of ``after``, later in that
    action or in a later one: ``action_matches`` then asks for a verification that follows the
    change, ``no_action_matches`` forbids an action that would undo or overwrite it;
    ``observation_contains`` looks for text in the environment's last observation (the initial
    state before any), not in the env's own reply to a final or invalid action;
    ``answer_observed`` asks that
    ``value`` (default: the reference answer) was shown in the initial state or an observation
    of the world (:data:`~agentworld_envs.world.rewards.EVIDENCE`), by ``match``, so that the
    answer was read from the world, not guessed; ``completed`` and ``infeasible`` check how the
    episode ended; ``floor_verifier`` is the AgentFloor verifier's verdict.
    """

    check: CheckName
    value: str | None = None
    match: Literal["contains", "exact", "number", "date"] = "contains"
    excludes: list[str] = []
    """``answer_matches``: wrong answers that the agent's answer must not also state."""
    after: str | None = pydantic.Field(None, min_length=1)
    """``action_matches``, ``no_action_matches``: a regular expression that an earlier action
    must match for the pattern to count."""

    @pydantic.model_validator(mode="after")
    def _value_given(self) -> Check:
        if self.check in _NEEDS_VALUE and not self.value:
            raise ValueError(f"check {self.check!r} needs a value")
        if self.after is not None and self.check not in _PATTERNS:
            raise ValueError(f"check {self.check!r} takes no after: only action_matches and "
                             "no_action_matches do")
        if self.check in _PATTERNS:
            for name, pattern in (("value", self.value), ("after", self.after)):
                try:
                    re.compile(pattern or "")
                except re.error as exc:
                    raise ValueError(f"check {self.check!r}: {name} {pattern!r} is not a "
                                     f"regular expression ({exc})") from None
        if self.check in _COMPARED and self.value is not None and not _has_words(self.value):
            raise ValueError(f"check {self.check!r}: value {self.value!r} has no letter or digit "
                             "to compare")
        return self

    @property
    def label(self) -> str:
        """A readable key for the breakdown, e.g. ``called_tool(web_search)``,
        ``action_matches(pytest after fix)``."""
        value = f"{self.value} after {self.after}" if self.after else self.value
        return f"{self.check}({value})" if value else self.check


class RewardSpec(_Frozen):
    """How the end-of-episode reward is computed.

    ``rule`` is the product of the checks (1.0 only when all pass); ``judge`` is an LLM rubric
    score in [0, 1]; ``hybrid`` combines them, either as a ``gate`` (the judge score counts only
    when every rule passes) or ``weighted`` (``rule_weight * rule + (1 - rule_weight) * judge``).
    """

    kind: Literal["rule", "judge", "hybrid"] = "rule"
    checks: list[Check] = []
    rubric: str | None = None
    combine: Literal["gate", "weighted"] = "gate"
    rule_weight: float = pydantic.Field(0.5, ge=0.0, le=1.0)


class Demonstration(_Frozen):
    """One example transition shown to the world model: an action and its observation."""

    action: str
    observation: str
    state: str | None = None


class FloorRef(_Frozen):
    """The AgentFloor task variant a ``floor`` scenario plays."""

    task_id: str
    variant: str


class McpServerRef(_Frozen):
    """The invented server a generated ``mcp`` scenario plays, for its executable twin
    (:mod:`agentworld_envs.domains.mcp.twin`): its family and its records, each
    record's first field being its id."""

    family: Literal["inventory", "calendar", "tickets", "crm", "fleet"]
    records: list[dict[str, Any]]


def normalise_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """OpenAI tool format; a bare ``{"name", "description", "parameters"}`` is wrapped."""
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        function = tool["function"]
    elif "name" in tool:
        function = tool
    else:
        raise ValueError(f"a tool needs a name: {tool!r}")
    if not isinstance(function.get("name"), str) or not function["name"]:
        raise ValueError(f"a tool needs a non-empty string name: {tool!r}")
    name, description = function["name"], function.get("description") or ""
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(description, str):
        raise ValueError(f"tool {name!r}: description must be a string, not "
                         f"{type(description).__name__}")
    if not isinstance(parameters, dict) or not isinstance(parameters.get("properties", {}), dict):
        raise ValueError(f"tool {name!r}: parameters must be a JSON Schema object whose "
                         f"properties are an object, not {parameters!r}")
    return {"type": "function", "function": {
        "name": name, "description": description, "parameters": parameters}}


class Scenario(_Frozen):
    """One simulated task."""

    id: str = pydantic.Field(pattern=r"\S")
    domain: DomainKey
    instruction: str = pydantic.Field(pattern=r"\S")
    tools: list[dict[str, Any]] = []
    """Tools the agent may call (tool domains), on top of the domain's default tools."""
    initial_state: str | None = None
    """The first screen or tree (state domains); the agent sees it at reset."""
    world: str | None = None
    """Hidden notes for the world model: what the simulated world holds."""
    reference_answer: str | None = None
    controls: list[Control] = []
    reward: RewardSpec = RewardSpec()
    candidate_actions: list[str] = pydantic.Field(min_length=1)
    """Admissible actions, for policies that choose from a list (e.g. a Discrete wrapper): the
    solution's actions among distractors. The env offers them shuffled at each reset."""
    solution: list[int] = []
    """A reference episode, as indices into ``candidate_actions``, that passes the rule checks."""
    demonstrations: list[Demonstration] = []
    fictional: bool = False
    max_steps: int | None = pydantic.Field(None, ge=1)
    floor: FloorRef | None = None
    mcp: McpServerRef | None = None

    @pydantic.field_validator("max_steps", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):  # pydantic reads True as 1
            raise ValueError(f"max_steps must be an integer, not {value!r}")
        return value

    @pydantic.field_validator("tools", mode="before")
    @classmethod
    def _normalise_tools(cls, tools: Any) -> Any:
        if not isinstance(tools, list):
            return tools
        return [normalise_tool(t) if isinstance(t, dict) else t for t in tools]

    @pydantic.model_validator(mode="after")
    def _consistent(self) -> Scenario:
        for check in self.reward.checks:
            self._passable(check)
        if repeated := sorted({n for n in self.tool_names if self.tool_names.count(n) > 1}):
            raise ValueError(f"scenario {self.id}: tools repeat the names {repeated}")
        if len(set(self.candidate_actions)) != len(self.candidate_actions):
            raise ValueError(f"scenario {self.id}: candidate actions repeat")
        if any(not 0 <= i < len(self.candidate_actions) for i in self.solution):
            raise ValueError(f"scenario {self.id}: solution indices must index candidate_actions")
        return self

    def _passable(self, check: Check) -> None:
        """Raise ValueError for a check that no episode of this scenario can pass."""
        expected = check.value or self.reference_answer
        if check.check in _NEEDS_EXPECTED and not expected:
            raise ValueError(f"scenario {self.id}: {check.check} needs a reference answer")
        if check.check in _NEEDS_EXPECTED and not _has_words(expected or ""):
            raise ValueError(f"scenario {self.id}: {check.check} needs a letter or digit in its "
                             f"expected answer, not {expected!r}")
        if check.check in _NEEDS_EXPECTED and check.match == "number" \
                and not re.search(r"\d", expected or ""):
            raise ValueError(f"scenario {self.id}: {check.check} by number needs a number in "
                             f"its expected answer, not {expected!r}")
        if check.check in _NEEDS_EXPECTED and check.match == "date":
            from agentworld_envs.world.rewards import dates  # rewards imports this module
            if not dates(expected or ""):
                raise ValueError(f"scenario {self.id}: {check.check} by date needs a date in "
                                 f"its expected answer, not {expected!r}")
        if check.check == "floor_verifier" and self.floor is None:
            raise ValueError(f"scenario {self.id}: floor_verifier needs an AgentFloor task "
                             "(the floor field)")

    @property
    def solution_actions(self) -> list[str]:
        """The reference episode's actions."""
        return [self.candidate_actions[i] for i in self.solution]

    @property
    def tool_names(self) -> list[str]:
        """Names of the scenario's own tools."""
        return [t["function"]["name"] for t in self.tools]
