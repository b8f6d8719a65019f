"""The run record: one AgentFloor episode as a run corpus holds it, one line of ``runs.jsonl``.

A :class:`RunRecord` says who ran what (model, backend, task, variant, repeat, seed, settings),
holds the episode's :class:`Trajectory`, its cost (tokens, latency) and the verifier's
:class:`Verdict`. On disk it is one flat JSON object, the trajectory's fields beside the others,
with a ``schema_version``: :meth:`RunRecord.to_json` writes that form and
:meth:`RunRecord.from_json` reads it, refusing with a :class:`RecordError` anything else: another
version (or none), a missing or unknown field, a value of the wrong type.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)
from pydantic_core import ErrorDetails

__all__ = ["SCHEMA_VERSION", "RecordError", "RecordedSettings", "RunRecord", "Trajectory",
           "Usage", "Verdict"]

SCHEMA_VERSION = 1
"""The run-record schema version written and read."""


class RecordError(ValueError):
    """A JSON value that is not a run record of :data:`SCHEMA_VERSION`; ``str()`` says why."""


class _Strict(BaseModel):
    """Exact types (no coercion: ``"true"`` is not a bool), no unknown fields, immutable."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class RecordedSettings(_Strict):
    """The :class:`~floor_tasks.harness.runner.RunSettings` of a run; the system prompt
    itself is in the corpus's ``metadata.json``."""

    system_prompt_sha256: str
    sampling: dict[str, Any]
    max_steps: int | None
    """The step budget override; None kept the task's budget."""


class Usage(_Strict):
    """Tokens over all of a run's model calls: the sums of the counts they reported.

    A count no call reported is None (unknown, not 0), and so is ``total_tokens`` when either
    sum is. ``calls_without_usage`` counts the calls that left a count out, whose tokens are
    missing from the sums; it is written only when not 0, so a record whose calls all reported
    their usage is written as before it existed.
    """

    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    calls_without_usage: int = 0

    @property
    def known(self) -> bool:
        """Whether every call reported both counts, so the sums are the run's tokens."""
        return not self.calls_without_usage and self.total_tokens is not None

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if not self.calls_without_usage:
            del data["calls_without_usage"]
        return data


class Verdict(_Strict):
    """The verifier's verdict (:func:`floor_tasks.verifier.verify`)."""

    passed: bool
    checks: dict[str, Any]
    failure_labels: list[str]
    failure_class: str | None
    """None when the run passed."""


class Trajectory(_Strict):
    """What happened in the episode: the conversation, the actions played, the tool calls."""

    messages: list[dict[str, Any]]
    """The chat, system prompt first, as the model saw it."""
    actions: list[str]
    """The action string of each turn, as the env got it."""
    call_log: list[dict[str, Any]]
    """The env's log of tool calls, one entry per call."""
    raw_responses: list[Any]
    """Each turn's backend response, redacted."""
    termination: str
    """How the episode ended (``submitted``, ``final_answer``, ``step_budget_exhausted``...)."""
    final_text: str | None
    turns: int


class RunRecord(_Strict):
    """One run of one agent on one task variant."""

    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str
    """``<model>|<task_id>|<variant>|<repeat>``: unique within a corpus."""
    model: str
    backend: dict[str, Any]
    """The backend's redacted ``describe()``."""
    task_id: str
    tier: str
    variant: str
    repeat: int
    seed: int
    settings: RecordedSettings
    trajectory: Trajectory
    usage: Usage
    latency_s: float
    """Seconds spent waiting on the model."""
    wall_s: float
    passed: bool
    verdict: Verdict
    timestamp_utc: str

    @classmethod
    def from_json(cls, data: Any) -> RunRecord:
        """Read a record from its JSON form (a parsed corpus line, its digest removed).

        Raises:
            RecordError: when ``data`` is not an object, its ``schema_version`` is not
                :data:`SCHEMA_VERSION` (or is missing), or a field is missing, unknown or of
                the wrong type; the message names the first such field.
        """
        if not isinstance(data, dict):
            raise RecordError("a run record must be a JSON object")
        version = data.get("schema_version")
        if type(version) is not int or version != SCHEMA_VERSION:
            raise RecordError(f"unknown schema_version {version!r} "
                              f"(this reader knows {SCHEMA_VERSION})")
        steps = {name: data[name] for name in Trajectory.model_fields if name in data}
        rest = {name: value for name, value in data.items() if name not in steps}
        try:
            return cls.model_validate({"trajectory": steps, **rest})
        except ValidationError as exc:
            raise RecordError(_problem(exc.errors()[0])) from None

    def to_json(self) -> dict[str, Any]:
        """The record's JSON form, as a corpus line holds it: one flat object."""
        return self.model_dump(exclude={"trajectory"}) | self.trajectory.model_dump()


def _problem(error: ErrorDetails) -> str:
    """One validation error in the terms of the flat JSON form."""
    loc = error["loc"][1:] if error["loc"][:1] == ("trajectory",) else error["loc"]
    name = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)[1:]
    if error["type"] == "missing":
        return f"missing field {name!r}"
    if error["type"] == "extra_forbidden":
        return f"unknown field {name!r}"
    message = error["msg"][:1].lower() + error["msg"][1:]
    return f"field {name!r}: {message}, got {type(error['input']).__name__}"
