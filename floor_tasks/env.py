"""The Gymnasium env of one AgentFloor task.

One ``step(action)`` is one assistant turn. The action is a string that may hold several tool
calls, run in order; the observation is their result envelopes, one JSON object per line. The
episode terminates on a final answer (text with no tool call) or an accepted submission, and is
truncated at the step budget. The reward is 1.0 at the end if and only if the verifier passes.

Example:
    >>> import gymnasium as gym, floor_tasks
    >>> env = gym.make("AgentFloor/A1-v0")
    >>> obs, info = env.reset(seed=0, options={"variant": "v0"})
    >>> obs, reward, terminated, truncated, info = env.step(
    ...     '{"name": "lookup_record", "arguments": {"record_id": "P104"}}')
    >>> '"status": "ok"' in obs
    True
    >>> env.step("P104 is active.")[1:3]
    (1.0, True)
"""

from __future__ import annotations

import functools
import json
import operator
from typing import Any

import gymnasium as gym

from agentworld_envs.errors import transportable_errors
from agentworld_envs.protocol.endings import (
    ENDED_OBSERVATION,
    FINAL_ANSWER,
    STEP_BUDGET_EXHAUSTED,
    SUBMITTED,
)
from agentworld_envs.protocol.integers import is_integer
from agentworld_envs.protocol.reset_options import check_reset_options
from agentworld_envs.protocol.seeding import shuffled
from agentworld_envs.protocol.text_space import (
    ACTION_MAX_LENGTH,
    OBSERVATION_MAX_LENGTH,
    UnicodeText,
)
from agentworld_envs.protocol.tool_calls import ParseError, ToolCall
from floor_tasks.candidates import candidate_actions
from floor_tasks.database import load_fixture
from floor_tasks.task import load_task
from floor_tasks.tools import MAX_ARGUMENT_CHARS, FloorToolkit, copy_data
from floor_tasks.turns import play_turn
from floor_tasks.verifier import Trace, judge_submission, verify

__all__ = ["FloorEnv", "StepBudgetSync"]

_CALL_HINT = 'Write a tool call as {"name": "<tool>", "arguments": {...}}.'
@functools.cache
def _schemas_json(tools: tuple[str, ...]) -> str:
    return json.dumps(FloorToolkit.schemas(tools))


def _reject_all(decision: dict[str, Any]) -> bool:
    """The submission judge of tasks that take no submission."""
    return False


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def _dumps(envelope: dict[str, Any]) -> str:
    """One envelope as a JSON line; one that cannot be encoded becomes an error envelope."""
    try:
        return _ENCODER.encode(envelope)
    except (ValueError, RecursionError) as exc:
        return json.dumps({**{k: envelope[k] for k in ("tool_name", "call_id")},
                           "status": "error", "result": None, "error": {
                               "type": "unencodable_result", "recoverable": True,
                               "message": f"the result cannot be encoded as JSON: {exc}"}})


_INVALID = ("parse_error", "schema_validation_error", "tool_not_available", "arguments_too_large")


class FloorEnv(gym.Env[str, str]):
    """One AgentFloor task as a text env.

    Args:
        task_id: The task, e.g. ``"C3"``.
        variant: A fixed variant (index or name such as ``"v2"`` or ``"i1"``); by default each
            reset draws one from ``np_random``, or takes ``options={"variant": ...}``.
        max_steps: Step budget (the task's own by default). Through ``gym.make``, pass
            ``max_episode_steps`` instead: :class:`StepBudgetSync` hands it to the env.
        render_mode: ``"ansi"`` renders the transcript as text.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, task_id: str, variant: int | str | None = None,
                 max_steps: int | None = None, render_mode: str | None = None) -> None:
        self.task = load_task(task_id)
        if variant is not None:
            self.task.variant(variant)  # fail early on a bad variant
        if max_steps is not None and (not is_integer(max_steps) or max_steps < 1):
            raise ValueError(f"max_steps must be a positive integer, not {max_steps!r}")
        self.fixed_variant = variant
        self.max_steps_override = None if max_steps is None else operator.index(max_steps)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unsupported render_mode {render_mode!r}; use 'ansi' or None")
        self.render_mode = render_mode
        self.observation_space = UnicodeText(OBSERVATION_MAX_LENGTH)
        self.action_space = UnicodeText(ACTION_MAX_LENGTH)
        self.trace: Trace | None = None
        self.transcript: list[dict[str, str]] = []

    @property
    def max_steps(self) -> int:
        """The step budget in assistant turns."""
        return self.task.max_steps if self.max_steps_override is None else self.max_steps_override

    @transportable_errors
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode; the observation is the task prompt. A variant that does not exist
        raises before anything changes: the episode under way and ``np_random`` stay as they
        were; so does any option other than ``variant``."""
        check_reset_options(options, ("variant",))
        key = (options or {}).get("variant", self.fixed_variant)
        chosen = self.task.variant(key) if key is not None else None
        super().reset(seed=seed)
        variant = chosen if chosen is not None else self.task.variant(
            int(self.np_random.integers(len(self.task.variant_names))))
        db = load_fixture(self.task.fixture)
        spec = self.task.submission
        if spec is not None:
            spec = type(spec).model_validate(variant.filled(spec.model_dump()))
        self._toolkit = FloorToolkit(
            db, functools.partial(judge_submission, spec, db) if spec else _reject_all)
        self.trace = Trace(variant=variant, db=db)
        self._candidates = shuffled(candidate_actions(self.task.id, variant.name, wide=True),
                                    self.np_random)  # drawn after the variant: seeds keep theirs
        self._allowed = frozenset(self.task.tools)
        self._turn = 0
        self._done = False
        self.transcript = [{"role": "user", "content": variant.prompt}]
        return variant.prompt, self._base_info()

    def _base_info(self) -> dict[str, Any]:
        variant = self.trace.variant
        return {"task_id": self.task.id, "tier": self.task.tier, "variant": variant.name,
                "variant_index": variant.index, "tools": self.tool_schemas,
                "max_steps": self.max_steps}

    def candidate_actions(self) -> list[str]:
        """Admissible actions of the current variant: its gold steps among distractors (wrong
        records, wrong branches, premature answers; see :mod:`floor_tasks.candidates`), in an
        order drawn from ``np_random`` at each reset."""
        if self.trace is None:
            raise gym.error.ResetNeeded("call reset() before candidate_actions()")
        return list(self._candidates)

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas of the tools this task offers (a fresh copy each time)."""
        return json.loads(_schemas_json(tuple(self.task.tools)))

    @transportable_errors
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Play one assistant turn. Never raises on the action's content."""
        if self.trace is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self._done:
            return ENDED_OBSERVATION, 0.0, True, False, {"invalid_action": True,
                                                          "error": ENDED_OBSERVATION}
        self._turn += 1
        turn = play_turn(self.trace, action, functools.partial(self._run_call, action),
                         self._log_parse_error)
        envelopes = turn.envelopes
        terminated = turn.submitted or turn.final_answer
        if terminated:
            self.trace.termination = SUBMITTED if turn.submitted else FINAL_ANSWER
        observation = (_dumps(envelopes[0]) if len(envelopes) == 1
                       else "\n".join([_dumps(e) for e in envelopes]))
        self.transcript.append({"role": "assistant", "content": action if isinstance(
            action, str) else repr(action)})
        if observation:
            self.transcript.append({"role": "tool", "content": observation})
        truncated = not terminated and self._turn >= self.max_steps
        invalid = any([(e["error"] or {}).get("type") in _INVALID for e in envelopes])
        info: dict[str, Any] = {"turn": self._turn, "invalid_action": invalid,
                                "tool_results": copy_data(envelopes)}  # the trace keeps its own
        reward = 0.0
        if terminated or truncated:
            if truncated:
                self.trace.termination = STEP_BUDGET_EXHAUSTED
            self._done = True
            verdict = verify(self.trace)
            reward = 1.0 if verdict["passed"] else 0.0
            info.update(verdict=verdict, termination=self.trace.termination)
        return observation, reward, terminated, truncated, info

    def _run_call(self, action: str, call: ToolCall) -> dict[str, Any]:
        call_id = f"{self.task.id}_{call.name}_{len(self.trace.calls) + 1}"
        envelope = self._toolkit.dispatch(call, self._allowed, call_id,
                                          may_be_large=len(action) > MAX_ARGUMENT_CHARS)
        self.trace.log_call(self._turn, call.name, call.arguments, call_id, envelope["status"],
                            envelope["result"], envelope["error"])
        return envelope

    def _log_parse_error(self, error: ParseError) -> dict[str, Any]:
        call_id = f"{self.task.id}_parse_error_{len(self.trace.calls) + 1}"
        detail = {"type": "parse_error", "message": error.message, "snippet": error.snippet,
                  "recoverable": True, "hint": _CALL_HINT}
        self.trace.log_call(self._turn, None, {}, call_id, "error", None, detail, malformed=True)
        return {"tool_name": None, "call_id": call_id, "status": "error", "result": None,
                "error": detail}

    def render(self) -> str | None:
        """Render the transcript so far as text (``ansi`` mode)."""
        if self.render_mode != "ansi":
            return None
        return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in self.transcript)



class StepBudgetSync(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Give the env the step budget of the ``TimeLimit`` below it, so both end together.

    Registered as an additional wrapper of every AgentFloor env: ``gym.make(id,
    max_episode_steps=N)`` then truncates at N with a verdict, exactly like the default budget.
    An episode that terminates on the budget's last step is terminated, not truncated, as the
    env reports it (``TimeLimit`` would set both).

    Example:
        >>> env = gym.make("AgentFloor/C3-v0", max_episode_steps=20)
        >>> env.unwrapped.max_steps
        20

    Change logs:
        v0.1.0: initial version.
    """

    def __init__(self, env: gym.Env) -> None:
        """Wrap ``env`` and copy the nearest ``TimeLimit``'s budget into the unwrapped env; an
        env built with another ``max_steps`` raises ``ValueError`` (the two would not end
        together)."""
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        inner = env
        while isinstance(inner, gym.Wrapper):
            if isinstance(inner, gym.wrappers.TimeLimit):
                budget, override = inner._max_episode_steps, env.unwrapped.max_steps_override
                if override not in (None, budget):
                    raise ValueError(f"max_steps={override} disagrees with the TimeLimit's "
                                     f"max_episode_steps={budget}: through gym.make, pass "
                                     "max_episode_steps only")
                env.unwrapped.max_steps_override = budget
                break
            inner = inner.env

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Step the env; a terminating step is never also truncated."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated and not terminated, info
