"""Bench items as world-model training pairs: the chat, and the assistant text to learn.

The target is the observation inside ``<predicted_observation>`` tags, optionally preceded by
the item's reasoning (``meta["source"]["reasoning"]``, from simulated rollouts) in a think
block, so a trained model writes what the ``floor`` domain's system prompt asks for.

Example:
    >>> from agentworld_envs.bench.items import item_from_dict
    >>> item = item_from_dict({"task": "floor", "id": 0, "prompt": ["### Turn 1"],
    ...     "response": ["**Environment Observation:**\\n{}"], "current_prompt": "### Turn 1",
    ...     "system_str": "S", "turn_idx": 1, "total_turns": 1})
    >>> target_text(item, reasoning=False)
    '<predicted_observation>\\n{}\\n</predicted_observation>'
"""

from __future__ import annotations

from agentworld_envs.bench.items import BenchItem
from agentworld_envs.world.parsing import OBSERVATION_TAG

__all__ = ["target_text"]


def target_text(item: BenchItem, reasoning: bool) -> str:
    """What the world model should answer for ``item``."""
    body = f"<{OBSERVATION_TAG}>\n{item.ground_truth}\n</{OBSERVATION_TAG}>"
    thought = item.source.get("reasoning", "") if reasoning else ""
    return f"<think>\n{thought}\n</think>\n{body}" if thought else body
