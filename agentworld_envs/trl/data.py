"""Dataset rows and warm-start examples for training on AgentFloor tasks with TRL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentworld_envs.cli_errors import UnknownNameError, UsageError
from agentworld_envs.trl.environment import EnvSession, environment_class

__all__ = ["check_batch_fits", "floor_rows", "solution_examples"]


def floor_rows(task_ids: Sequence[str], variants: Sequence[str] = ("v0",), *,
               system_prompt: str | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """One row per task and variant, for TRL's dict ``environment_factory`` keyed by task id.

    The prompt holds the harness's system prompt and an empty user turn; the env's
    ``reset(**row)`` returns the task prompt, which TRL appends to that turn.

    Raises:
        UnknownNameError: (a ``ValueError``) a task id that is no AgentFloor task.
        ValueError: a variant the task lacks, naming those it has.
    """
    import floor_tasks

    for task_id in task_ids:
        try:
            task = floor_tasks.load_task(task_id)
        except KeyError:
            raise UnknownNameError("AgentFloor task", task_id, floor_tasks.TASK_IDS,
                                   listing="agentworld floor list") from None
        for variant in variants:
            task.variant(variant)
    if system_prompt is None:
        from floor_tasks.harness.runner import SYSTEM_PROMPT as system_prompt
    return [{"prompt": [{"role": "system", "content": system_prompt},
                        {"role": "user", "content": ""}],
             "environment": task_id, "variant": variant, "seed": seed}
            for task_id in task_ids for variant in variants]


def check_batch_fits(rows: int, config: Any) -> None:
    """Raise :class:`UsageError` when ``rows`` dataset rows fill no generation batch of
    ``config`` (a ``GRPOConfig``): TRL's sampler drops a batch it cannot fill, so training
    would take no step and end without a word."""
    prompts = config.generation_batch_size // config.num_generations
    if rows < prompts:
        raise UsageError(f"{rows} dataset rows fill no batch of {prompts} prompts "
                         f"(generation_batch_size {config.generation_batch_size} / "
                         f"num_generations {config.num_generations}), so GRPO would train no "
                         "step: add tasks or variants, or lower per_device_train_batch_size")


def solution_examples(row: dict[str, Any], env_class: type[EnvSession] | None = None
                      ) -> list[dict[str, Any]]:
    """The reference solution of a :func:`floor_rows` row as ``(context, reply)`` examples.

    The solution is played through the env, so each later turn's context holds the real tool
    results. The examples fit :func:`agentworld_envs.trl.tiny_model.imprint`.
    """
    import floor_tasks

    session = (env_class or environment_class(floor_tasks.env_id(row["environment"])))()
    prompt = session.reset(**row)
    messages = [*row["prompt"][:-1], {**row["prompt"][-1], "content": prompt}]
    examples = []
    for action in floor_tasks.solution(row["environment"], row["variant"]):
        call = _json_call(action)
        reply = f"<tool_call>\n{action}\n</tool_call>" if call else action
        examples.append({"messages": list(messages), "tools": session.tools, "reply": reply})
        observation = session._step(action)
        if call:
            messages += [{"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": call}]},
                {"role": "tool", "name": call["name"], "content": observation}]
        else:
            messages.append({"role": "assistant", "content": action})
    session.env.close()
    return examples


def _json_call(action: str) -> dict[str, Any] | None:
    try:
        call = json.loads(action)
    except json.JSONDecodeError:
        return None
    return call if isinstance(call, dict) and "name" in call else None
