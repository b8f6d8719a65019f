"""The ``scripted`` backend: a deterministic stand-in for a world model. It is NOT a world model.

It is never a default (every ``AgentWorld/*`` env defaults to the embedded world model): name
it, ``backend="scripted"``, to run an env with no model at all, as the tests of env mechanics
do. It understands nothing: it answers
each request by the first rule whose pattern matches the last user message, or else with a
placeholder observation that names the turn and a digest of the whole request (so equal
requests get equal text, and requests that differ, e.g. in their sampling seed, differ).

Rules are plain data, which makes the backend the tool for scripting faults in tests::

    {"name": "scripted", "rules": [
        {"match": "web_search", "reply": "<predicted_observation>[1] ...</predicted_observation>"},
        {"match": "Turn 3", "error": "server down"},
        {"match": "slow", "delay_s": 5.0, "reply": "late"}]}
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from typing import Any

import pydantic

from agentworld_envs.backends import Backend, BackendError, ChatRequest, Completion
from agentworld_envs.cli_errors import refused_value
from agentworld_envs.protocol.chat import PLACEHOLDER_RAW

__all__ = ["PLACEHOLDER_PREFIX", "ScriptedBackend", "ScriptedRule"]

PLACEHOLDER_PREFIX = "[scripted placeholder: no world model attached]"


class ScriptedRule(pydantic.BaseModel):
    """Answer requests whose last user message matches ``match`` (a regular expression)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    match: str
    reply: str | None = None
    error: str | None = None
    delay_s: float = pydantic.Field(0.0, ge=0.0)

    @pydantic.model_validator(mode="after")
    def _one_outcome(self) -> ScriptedRule:
        if (self.reply is None) == (self.error is None):
            raise ValueError("a scripted rule needs exactly one of reply or error")
        try:
            re.compile(self.match)
        except re.error as exc:
            raise ValueError(f"match is no regular expression: {exc}") from None
        return self


def _rules(rules: Any) -> list[ScriptedRule]:
    """``rules`` as :class:`ScriptedRule` objects; a one-line ``ValueError`` naming a bad one."""
    if isinstance(rules, str | dict) or not isinstance(rules, Sequence):
        raise ValueError(f"rules must be a list of rules, got {rules!r}")
    checked = []
    for index, rule in enumerate(rules):
        try:
            checked.append(ScriptedRule.model_validate(rule))
        except pydantic.ValidationError as exc:
            raise ValueError(f"rules[{index}]: " + "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {refused_value(e)}" if e["loc"]
                else refused_value(e) for e in exc.errors())) from None
    return checked


def _last_user_text(request: ChatRequest) -> str:
    for message in reversed(request.messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


def _placeholder(request: ChatRequest) -> str:
    rest = json.dumps({"tools": request.tools, "sampling": request.sampling.to_dict()},
                      sort_keys=True, default=str)  # the messages by their (running) digest
    digest = hashlib.sha256(f"{request.digest()}{rest}".encode("ascii")).hexdigest()[:12]
    heading = _last_user_text(request).split("\n", 1)[0].strip() or "request"
    return (f"<predicted_observation>\n{PLACEHOLDER_PREFIX} {heading}, request {digest}\n"
            "</predicted_observation>")


class ScriptedBackend(Backend):
    """Deterministic rule-based answers, and placeholders for everything else.

    Args:
        rules: Rules tried in order; each a :class:`ScriptedRule` or its dict form.
        model: Model name reported by :meth:`describe` (and so used in recording keys).
        keep_requests: Keep every batch of requests in :attr:`batches` (for tests).
    """

    name = "scripted"

    def __init__(self, rules: Sequence[dict[str, Any] | ScriptedRule] = (),
                 model: str = "scripted", keep_requests: bool = False) -> None:
        self.rules = _rules(rules)
        self.model = model
        self.keep_requests = keep_requests
        self.batches: list[list[ChatRequest]] = []
        """The batches of requests received, one list per ``complete`` call."""

    @staticmethod
    def check_config(rules: Any = (), **_: Any) -> None:
        """Raise ``ValueError`` naming a bad rule; a command checks a ``scripted`` config with it
        (:func:`~agentworld_envs.backends.check_backend_config`) before it makes anything."""
        _rules(rules)

    @property
    def blocking(self) -> bool:  # type: ignore[override]
        """Only a rule with a delay makes a call wait (as a slow server does)."""
        return any(rule.delay_s for rule in self.rules)

    def describe(self) -> dict[str, Any]:
        """The model name and the rules; ``placeholder``: what no rule answers is one."""
        return {"name": self.name, "model": self.model, "placeholder": True,
                "rules": [r.model_dump(exclude_defaults=True) for r in self.rules]}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Answer every request by rule or placeholder.

        Raises:
            BackendError: when a matching rule scripts an error.
        """
        if self.keep_requests:
            self.batches.append(list(requests))
        completions = []
        for request in requests:
            text = _last_user_text(request)
            rule = next((r for r in self.rules if re.search(r.match, text)), None)
            if rule is None:
                completions.append(Completion(text=_placeholder(request), raw=PLACEHOLDER_RAW))
                continue
            if rule.delay_s:
                time.sleep(rule.delay_s)
            if rule.error is not None:
                raise BackendError(rule.error)
            completions.append(Completion(text=rule.reply or ""))
        return completions
