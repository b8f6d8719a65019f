"""An exploring AgentFloor agent, to widen world-model training data beyond gold steps.

Each turn it plays a uniformly drawn admissible action of the task variant
(:func:`floor_tasks.candidates.candidate_actions` with distractors: gold steps, calls aimed at
other records, other instances' steps, label answers, a give-up answer). With probability
``mistakes`` it makes a mistake instead (:func:`mistaken`): an unknown tool, a wrongly typed,
missing or unknown argument, or the previous call repeated, so that the tools' error envelopes
appear in the data too. The runs are real: the corpus it writes is an ordinary run corpus,
scored by the real tools and verifier.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from floor_tasks import load_tasks
from floor_tasks.candidates import candidate_actions
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.runner import Job, run_jobs

__all__ = ["MISTAKES", "explore_corpus", "mistaken"]

MISTAKES = ("unknown_tool", "wrong_type", "missing_argument", "unknown_argument", "repeat")


def _variants_by_prompt() -> dict[str, tuple[str, str]]:
    return {task.variant(name).prompt: (task.id, name)
            for task in load_tasks() for name in task.variant_names}


def mistaken(action: str, previous: str | None, rng: np.random.Generator) -> str:
    """``action`` with one mistake drawn from :data:`MISTAKES` (the previous call repeated
    needs a ``previous`` action); an action that is not a single call comes back as it is."""
    try:
        call = json.loads(action)
    except json.JSONDecodeError:
        return action
    if not isinstance(call, dict) or not isinstance(call.get("arguments"), dict):
        return action
    kind = MISTAKES[int(rng.integers(len(MISTAKES)))]
    arguments = dict(call["arguments"])
    if kind == "repeat" and previous is not None:
        return previous
    if kind == "unknown_tool" or not arguments:
        name = ("get_record", "delete_record", "search", "update_record")[int(rng.integers(4))]
        return json.dumps({"name": name, "arguments": arguments})
    key = sorted(arguments)[int(rng.integers(len(arguments)))]
    if kind == "wrong_type":
        arguments[key] = 7 if isinstance(arguments[key], str) else "seven"
    elif kind == "missing_argument":
        del arguments[key]
    else:
        arguments["verbose"] = True
    return json.dumps({"name": call["name"], "arguments": arguments})


def _previous_action(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message["role"] == "assistant":
            calls = message.get("tool_calls") or []
            if calls:
                function = calls[-1].get("function", {})
                arguments = function.get("arguments", "{}")
                arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
                return json.dumps({"name": function.get("name"), "arguments": arguments})
            return message.get("content") or None
    return None


def explore_corpus(out: str | Path, repeats: int = 2, seed: int = 0,
                   mistakes: float = 0.0) -> Path:
    """Run ``repeats`` exploring episodes of every variant of every task into corpus ``out``.

    Deterministic for a seed: episodes advance in a fixed lockstep order and every draw comes
    from one generator. A corpus an interrupted call left resumes: every episode is played
    again (so the draws are those of an uninterrupted call) and only the runs it lacks are
    added.
    """
    if not 0 <= mistakes <= 1:
        raise ValueError("mistakes must be a probability")
    rng = np.random.default_rng(seed)
    variants = _variants_by_prompt()

    def explore(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        options = candidate_actions(*variants[prompt], wide=True)
        action = options[int(rng.integers(len(options)))]
        if mistakes and rng.random() < mistakes:
            action = mistaken(action, _previous_action(messages), rng)
        return action

    explore.__qualname__ = "explore"
    jobs = [Job(task_id=task_id, variant=variant, repeat=r, seed=seed + r, model="explore")
            for task_id, variant in sorted(set(variants.values())) for r in range(repeats)]
    corpus = RunCorpus(out)
    done = corpus.done_ids()
    for record in run_jobs(jobs, explore, batch_size=32):
        if record.run_id not in done:
            corpus.append(record)
    return Path(out)
