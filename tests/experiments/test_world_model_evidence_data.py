"""The evidence's data step keeps each transition once: runs that reach the same chat and get
the same answer (an explorer's opening call, a gold step it also plays) are one item, so none
weighs twice in training or counts twice among the held-out scores."""

from __future__ import annotations

from pathlib import Path

from agentworld_envs.bench.items import load_items
from trainers.experiments.world_model_evidence import make_data


def test_the_data_step_writes_each_transition_once(tmp_path: Path) -> None:
    make_data(tmp_path, explore_repeats=1, mcp_episodes=4, val_family="tickets")
    for domain in ("floor", "mcp"):
        items = [item for split in ("train", "val")
                 for item in load_items(tmp_path / split / f"{domain}.jsonl")]
        keys = [(i.task, tuple((m["role"], m["content"]) for m in i.messages()), i.ground_truth)
                for i in items]
        assert items and len(set(keys)) == len(keys), (domain, len(keys) - len(set(keys)))
