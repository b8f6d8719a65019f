"""Transition datasets in the AgentWorldBench format: from real run corpora and from rollouts.

* :func:`corpus_transitions`: every tool-calling step of the AgentFloor runs in floor_tasks run
  corpora, replayed on the deterministic real env, so the ground truth is the real tools'
  answer (and is checked against the recorded call log). The chat is exactly the one the
  ``floor`` simulated domain sends its world model: the domain's system prompt, one
  ``### Turn N`` user message per simulated action, one observation message per answer.
* :func:`simulated_transitions`: steps of ``AgentWorld/*`` episodes. The history is what the
  env showed; the ground truth is the real observation where the domain has one (``floor``;
  it asks the env for ``info["real_observation"]`` with ``reveal_reference``), else the world
  model's own observation (distillation data, marked as such).
* :func:`distinct_transitions`: the first of each repeated transition (runs that reach the same
  chat and get the same answer).
* :func:`split_by_task`: a train/validation split in which no task has items on both sides.

Every item records its origin in ``meta["source"]``: ``kind``, ``task_id``, ``variant`` (or
``scenario_id``), ``run_id``, ``ground_truth`` (``real`` or ``world_model``), and, for
simulated steps with reasoning, ``reasoning``.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agentworld_envs.bench.items import BenchItem
from agentworld_envs.protocol.thinking import THINK_TAG
from agentworld_envs.world.prompting import observation_turn

if TYPE_CHECKING:
    from floor_tasks.harness.record import RunRecord

__all__ = ["corpus_transitions", "distinct_transitions", "record_transitions",
           "simulated_transitions", "split_by_task", "task_of"]

Policy = Callable[[Any, np.random.Generator], str]


def _items(system: str, prompts: list[str], responses: list[list[str]],
           sources: list[dict[str, Any]]) -> list[BenchItem]:
    """One item per turn k; ``responses[k]`` is that item's full response list."""
    return [BenchItem(task=src["domain"], id=0, prompt=prompts, response=responses[k],
                      current_prompt=prompts[k], system_str=system, turn_idx=k + 1,
                      total_turns=len(prompts),
                      meta={"source": {k2: v for k2, v in src.items() if k2 != "domain"}})
            for k, src in enumerate(sources)]


def record_transitions(record: RunRecord) -> list[BenchItem]:
    """The world-model transitions of one AgentFloor run record (ids not yet assigned).

    Raises:
        ValueError: when replaying the actions does not reproduce the recorded call log.
    """
    from agentworld_envs.domains.floor.domain import DOMAIN
    from floor_tasks.env import FloorEnv

    actions = record.trajectory.actions
    scenario = DOMAIN.resolve(f"{record.task_id}/{record.variant}")
    env = FloorEnv(record.task_id, variant=record.variant, max_steps=max(1, len(actions)))
    env.reset(seed=record.seed)
    prompts: list[str] = []
    truths: list[str] = []
    for action in actions:
        observation = env.step(action)[0]
        reading = DOMAIN.interpret(action, scenario, None)
        if reading.kind == "simulate":
            prompts.append(DOMAIN.user_message(scenario, len(prompts) + 1, reading.action_text,
                                               reading.language, None, scenario.fictional))
            truths.append(observation_turn(observation))
    replayed = [(c["call_id"], c["status"]) for c in env.trace.calls]
    recorded = [(c["call_id"], c["status"]) for c in record.trajectory.call_log]
    if replayed != recorded:
        raise ValueError(f"run {record.run_id!r}: replaying its actions gives calls "
                         f"{replayed[:4]}..., the record holds {recorded[:4]}...")
    source = {"domain": "floor", "kind": "corpus", "task_id": record.task_id,
              "variant": record.variant, "run_id": record.run_id, "ground_truth": "real"}
    return _items(DOMAIN.system_prompt(scenario, scenario.fictional), prompts,
                  [truths] * len(prompts), [source] * len(prompts))


def _numbered(items: Iterable[BenchItem], start: int) -> list[BenchItem]:
    return [BenchItem(**{**item.__dict__, "id": start + n}) for n, item in enumerate(items)]


def corpus_transitions(corpora: Sequence[str | Path], start_id: int = 0) -> list[BenchItem]:
    """All transitions of the AgentFloor run corpora, numbered from ``start_id``."""
    from floor_tasks.harness.corpus_io import read_records

    items = [item for corpus in corpora for record in read_records(corpus)
             for item in record_transitions(record)]
    return _numbered(items, start_id)


def _random_candidate(env: Any, rng: np.random.Generator) -> str:
    candidates = env.unwrapped.candidate_actions()
    return candidates[int(rng.integers(len(candidates)))]


def simulated_transitions(env: Any, episodes: int, seed: int = 0,
                          policy: Policy = _random_candidate, start_id: int = 0
                          ) -> list[BenchItem]:
    """Play ``episodes`` episodes of a simulated env and export each simulated step.

    Args:
        env: An ``AgentWorld/*`` env (from ``gym.make``).
        episodes: How many episodes; episode ``e`` is reset with seed ``seed + e``.
        seed: Seeds the resets and the policy's generator.
        policy: ``policy(env, rng) -> action``; by default a uniform draw from the scenario's
            candidate actions.
        start_id: The first item id.
    """
    rng = np.random.default_rng(seed)
    items: list[BenchItem] = []
    with _revealing(env.unwrapped.config):
        for number in range(episodes):
            env.reset(seed=seed + number)
            truths: list[str | None] = []
            done = False
            while not done:
                _, _, terminated, truncated, info = env.step(policy(env, rng))
                if info["world_model"]["called"]:
                    truths.append(info.get("real_observation"))
                done = terminated or truncated
            items += _episode_items(env.unwrapped.episode, truths)
    return _numbered(items, start_id)


@contextlib.contextmanager
def _revealing(config: Any) -> Iterator[None]:
    """Turn the env's ``reveal_reference`` on while the exporter plays, then back."""
    before, config.reveal_reference = config.reveal_reference, True
    try:
        yield
    finally:
        config.reveal_reference = before


def _episode_items(episode: Any, truths: list[str | None]) -> list[BenchItem]:
    chat = episode.chat.messages[1:]
    prompts = [m["content"] for m in chat[0::2]]
    shown = [m["content"] for m in chat[1::2]]
    raws = [t["raw_output"] for t in episode.transcript if t["kind"] == "simulate"]
    scenario = episode.scenario
    responses, sources = [], []
    for k, (truth, raw) in enumerate(zip(truths, raws, strict=True)):
        source = {"domain": episode.domain.key, "kind": "simulated", "scenario_id": scenario.id,
                  "ground_truth": "real" if truth is not None else "world_model"}
        if scenario.floor is not None:
            source.update(task_id=scenario.floor.task_id, variant=scenario.floor.variant)
        reasoning = _reasoning(raw)
        if reasoning:
            source["reasoning"] = reasoning
        sources.append(source)
        responses.append([*shown[:k], observation_turn(truth) if truth is not None else shown[k],
                          *shown[k + 1:]])
    return _items(episode.chat.messages[0]["content"], prompts, responses, sources)


def _reasoning(raw: str) -> str:
    """The text of a raw output's think blocks (empty when it has none): each ``<think>``
    runs to the first ``</think>`` after it; one left open is not reasoning. Linear time."""
    blocks, start = [], None
    for tag in THINK_TAG.finditer(raw):
        if not tag.group(1):
            start = tag.end() if start is None else start
        elif start is not None:
            blocks.append(raw[start:tag.start()].strip())
            start = None
    return "\n".join(blocks).strip()


def distinct_transitions(items: Iterable[BenchItem]) -> list[BenchItem]:
    """The first of each transition: runs that reach the same chat and get the same answer (an
    exploring run's opening call, a gold step the explorer also plays, one run recorded in two
    corpora) give it once, so that it weighs no more in training and counts once in held-out
    scores."""
    seen: dict[tuple[Any, ...], BenchItem] = {}
    for item in items:
        chat = tuple((m["role"], m["content"]) for m in item.messages())
        seen.setdefault((item.task, chat, item.ground_truth), item)
    return list(seen.values())


def task_of(item: BenchItem) -> str:
    """The split group of an item: its source task, else a digest of its system prompt."""
    task = item.source.get("task_id") or item.source.get("scenario_id")
    if task:
        return f"{item.task}:{task}"
    return f"{item.task}:{hashlib.sha256(item.system_str.encode()).hexdigest()[:16]}"


def split_by_task(items: Sequence[BenchItem], val_fraction: float, seed: int = 0
                  ) -> tuple[list[BenchItem], list[BenchItem]]:
    """Split into (train, validation) by task: all of a task's items land on one side.

    ``ceil(val_fraction * tasks)`` tasks, drawn with ``seed``, go to validation (at least one
    task stays in training).
    """
    if not 0 <= val_fraction < 1:
        raise ValueError("val_fraction must be in [0, 1)")
    tasks = sorted({task_of(item) for item in items})
    count = min(math.ceil(val_fraction * len(tasks)), max(0, len(tasks) - 1))
    order = np.random.default_rng(seed).permutation(len(tasks))
    held_out = {tasks[i] for i in order[:count]}
    train = [item for item in items if task_of(item) not in held_out]
    val = [item for item in items if task_of(item) in held_out]
    return train, val
