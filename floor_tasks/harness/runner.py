"""Run agents on AgentFloor episodes and turn each episode into a run record.

Episodes of one agent advance in lockstep: each step sends every unfinished episode's
conversation to the backend in one batched :meth:`~agentworld_envs.backends.Backend.complete`
call (one ``generate`` for in-process models, concurrent requests for servers). An exception
inside one episode (its env, its action, its record) can be confined to that episode with
``run_jobs(on_error=...)``; the others go on.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentworld_envs.backends import Backend, ChatRequest, Completion, SamplingParams, Usage
from agentworld_envs.backends.redaction import redact
from agentworld_envs.protocol.tool_results import call_answers, tool_results_message
from floor_tasks.harness.agents import AgentFn, as_backend
from floor_tasks.harness.record import RunRecord, Trajectory
from floor_tasks.harness.record import Usage as RunUsage
from floor_tasks.task import load_task

__all__ = ["SYSTEM_PROMPT", "Job", "RunErrorHandler", "RunSettings", "run_jobs", "run_episode"]

SYSTEM_PROMPT = (
    "You are a careful assistant that completes tasks using the tools you are given.\n"
    "- To use a tool, reply with a tool call. Several calls in one reply run in order.\n"
    "- Tool results come back as JSON envelopes with a status of ok, not_found or error; read "
    "them before deciding what to do next.\n"
    "- Base every claim on the task text or on tool results; never invent IDs or values.\n"
    "- When the task asks for a submission, make it with submit_decision. Otherwise, finish "
    "with a plain-text answer (no tool call) that states the requested values explicitly."
)


@dataclass(frozen=True)
class RunSettings:
    """How an agent is run: prompt, sampling and step budget (the sweep's interventions)."""

    system_prompt: str = SYSTEM_PROMPT
    sampling: SamplingParams = field(default_factory=SamplingParams)
    max_steps: int | None = None
    """Step budget override; None keeps each task's budget."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for records; the prompt itself goes to ``metadata.json``."""
        digest = hashlib.sha256(self.system_prompt.encode("utf-8", "surrogatepass")).hexdigest()
        return {"system_prompt_sha256": digest,
                "sampling": self.sampling.to_dict(), "max_steps": self.max_steps}


@dataclass(frozen=True)
class Job:
    """One episode to run."""

    task_id: str
    variant: str = "v0"
    repeat: int = 0
    seed: int = 0
    """Seeds the env's reset and the backend's sampling."""
    model: str = "agent"

    @property
    def run_id(self) -> str:
        """``<model>|<task>|<variant>|<repeat>``: unique within a corpus."""
        return f"{self.model}|{self.task_id}|{self.variant}|{self.repeat}"


class _Episode:
    """One running episode: its env, conversation and accounting."""

    def __init__(self, job: Job, settings: RunSettings) -> None:
        self.job = job
        task = load_task(job.task_id)
        budget = {"max_episode_steps": settings.max_steps} if settings.max_steps else {}
        self.env = gym.make(f"AgentFloor/{job.task_id}-v0", **budget)
        prompt, info = self.env.reset(seed=job.seed, options={"variant": job.variant})
        self.tier, self.tools = task.tier, info["tools"]
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": settings.system_prompt},
            {"role": "user", "content": prompt}]
        self.raw: list[Any] = []
        self.actions: list[str] = []
        self.usages: list[Usage] = []
        self.latency_s, self.turns = 0.0, 0
        self.started = time.perf_counter()
        self.final: dict[str, Any] | None = None

    def request(self, settings: RunSettings) -> ChatRequest:
        """The conversation so far, sampled with this episode's own seed."""
        return ChatRequest(messages=[dict(m) for m in self.messages], tools=self.tools,
                           sampling=settings.sampling.with_seed(self.job.seed))

    def advance(self, completion: Completion) -> None:
        """Play one completion as the next assistant turn."""
        self.turns += 1
        self.raw.append(completion.raw if completion.raw is not None else completion.text)
        self.usages.append(completion.usage)
        self.latency_s += completion.latency_s
        action = completion.to_action()
        self.actions.append(action)
        observation, _, terminated, truncated, info = self.env.step(action)
        self._append_turn(completion, observation, info["tool_results"])
        if terminated or truncated:
            self.final = info

    def _append_turn(self, completion: Completion, observation: str,
                     envelopes: list[dict[str, Any]]) -> None:
        if not completion.tool_calls:
            self.messages.append({"role": "assistant", "content": completion.text})
            if observation:
                self.messages.append(tool_results_message(observation))
            return
        ids = [c.call_id or f"call_{self.turns}_{i}" for i, c in enumerate(completion.tool_calls)]
        self.messages.append({"role": "assistant", "content": completion.text, "tool_calls": [
            {"id": i, "type": "function", "function": {
                "name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
            for i, c in zip(ids, completion.tool_calls, strict=True)]})
        contents, notes = call_answers(len(ids), envelopes)
        for call_id, content in zip(ids, contents, strict=True):
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        if notes:
            self.messages.append(tool_results_message(*notes))

    def record(self, backend: Backend, settings: RunSettings) -> RunRecord:
        """The run record of the finished episode (closes its env)."""
        try:
            return self._record(backend, settings)
        finally:
            self.env.close()

    def _record(self, backend: Backend, settings: RunSettings) -> RunRecord:
        trace = self.env.unwrapped.trace
        verdict = self.final["verdict"]
        trajectory = Trajectory(
            messages=self.messages, actions=self.actions, call_log=trace.calls,
            raw_responses=redact(self.raw), termination=trace.termination,
            final_text=trace.final_answer, turns=self.turns)
        return RunRecord(
            run_id=self.job.run_id, model=self.job.model, backend=redact(backend.describe()),
            task_id=self.job.task_id, tier=self.tier, variant=self.job.variant,
            repeat=self.job.repeat, seed=self.job.seed, settings=settings.to_dict(),
            trajectory=trajectory, usage=_run_usage(self.usages),
            latency_s=round(self.latency_s, 6),
            wall_s=round(time.perf_counter() - self.started, 6), passed=verdict["passed"],
            verdict=verdict,
            timestamp_utc=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


def _run_usage(calls: Sequence[Usage]) -> RunUsage:
    """The usage of a run whose model calls reported ``calls``: each count summed over the
    calls that reported it (None when none did), and the calls that left one out counted."""
    inputs = [c.input_tokens for c in calls if c.input_tokens is not None]
    outputs = [c.output_tokens for c in calls if c.output_tokens is not None]
    input_tokens = sum(inputs) if inputs or not calls else None
    output_tokens = sum(outputs) if outputs or not calls else None
    total = None if input_tokens is None or output_tokens is None else input_tokens + output_tokens
    return RunUsage(input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=total,
                    calls_without_usage=sum(not c.known for c in calls))


RunErrorHandler = Callable[[Job, Exception], None]
"""Told of a run that raised (its env, its action or its record): the job and the exception."""


_FAILED = object()
"""What :func:`_confined` returns for a call that raised and was handed to ``on_error``."""


def _confined(job: Job, on_error: RunErrorHandler | None, call: Callable[..., Any], *args: Any,
              cleanup: Callable[[], Any] | None = None) -> Any:
    """``call(*args)``; if it raises and ``on_error`` is set, run ``cleanup``, tell
    ``on_error`` and return :data:`_FAILED`."""
    try:
        return call(*args)
    except Exception as exc:
        if on_error is None:
            raise
        if cleanup is not None:
            cleanup()
        on_error(job, exc)
        return _FAILED


def run_jobs(jobs: Sequence[Job], agent: Backend | Mapping[str, Any] | str | AgentFn,
             settings: RunSettings | None = None, *, batch_size: int = 16,
             on_error: RunErrorHandler | None = None) -> Iterator[RunRecord]:
    """Run episodes, ``batch_size`` at a time in lockstep, yielding each record when it ends.

    Args:
        on_error: when given, an exception raised by one run (making its env, playing a turn,
            building its record) drops that run and is passed here with its job; the other runs
            go on. None lets the exception propagate.

    Raises:
        BackendError: when the backend fails; finished episodes were already yielded.
    """
    backend = as_backend(agent)
    settings = settings or RunSettings()
    for start in range(0, len(jobs), batch_size):
        started = [_confined(job, on_error, _Episode, job, settings)
                   for job in jobs[start:start + batch_size]]
        active = [e for e in started if e is not _FAILED]
        while active:
            completions = backend.complete([e.request(settings) for e in active])
            active = [e for e, c in zip(active, completions, strict=True)
                      if _confined(e.job, on_error, e.advance, c, cleanup=e.env.close)
                      is not _FAILED]
            for episode in [e for e in active if e.final is not None]:
                record = _confined(episode.job, on_error, episode.record, backend, settings)
                if record is not _FAILED:
                    yield record
            active = [e for e in active if e.final is None]


def run_episode(task_id: str, agent: Backend | Mapping[str, Any] | str | AgentFn, *,
                variant: str = "v0", seed: int = 0, repeat: int = 0, model: str = "agent",
                settings: RunSettings | None = None) -> dict[str, Any]:
    """Run one episode and return its run record in JSON form (:meth:`RunRecord.to_json`).

    Example:
        >>> record = run_episode("C3", "oracle")
        >>> record["passed"], record["termination"]
        (True, 'submitted')
    """
    job = Job(task_id=task_id, variant=variant, repeat=repeat, seed=seed, model=model)
    return next(run_jobs([job], agent, settings)).to_json()
