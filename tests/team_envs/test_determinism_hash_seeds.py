"""reasoning-v0 datasets whose items follow Python's string hashing are declared, and warn."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("reasoning_gym")

from team_envs.text import reasoning  # noqa: E402

_ANSWERS = """
import json, sys
import reasoning_gym
names = sys.argv[1:]
print(json.dumps({n: [str(reasoning_gym.create_dataset(n, seed=0, size=8)[i]["answer"])
                      for i in range(8)] for n in names}))
"""
_SUSPECTS = ("knight_swap", "word_ladder", "basic_arithmetic")


def _answers(*hash_seeds: int) -> list[dict[str, list[str]]]:
    """The suspects' first answers in one process per hash seed (run side by side)."""
    runs = [subprocess.Popen([sys.executable, "-c", _ANSWERS, *_SUSPECTS], text=True,
                             env={**os.environ, "PYTHONHASHSEED": str(seed)},
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            for seed in hash_seeds]
    outputs = [run.communicate()[0] for run in runs]
    assert [run.returncode for run in runs] == [0] * len(runs)
    return [json.loads(out.strip().splitlines()[-1]) for out in outputs]


def test_datasets_whose_answers_follow_the_hash_seed_are_declared() -> None:
    first, second = _answers(1, 2)
    hashed = {name for name in _SUSPECTS if first[name] != second[name]}
    assert hashed, "no suspect differs between hash seeds: the probe proves nothing"
    assert hashed <= reasoning._HASH_DEPENDENT


@pytest.mark.parametrize("task, config", [
    ("knight_swap", None),
    ("word_ladder", None),
    ("composite", "ransom_note"),
])
def test_a_hash_dependent_dataset_warns_without_a_fixed_hash_seed(monkeypatch, task: str,
                                                                  config: str | None) -> None:
    if config is not None:
        from reasoning_gym.composite import DatasetSpec

        config = {"datasets": [DatasetSpec("basic_arithmetic", 1.0, {}),
                               DatasetSpec(config, 1.0, {})]}
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    with pytest.warns(UserWarning, match="PYTHONHASHSEED"):
        reasoning.env(task=task, config=config, n_agents=2, held_out=2, size=20)


def test_a_composite_with_a_malformed_part_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="reasoning-gym refused composite with config"):
        reasoning.env(task="composite",
                      config={"datasets": [{"name": "basic_arithmetic", "weight": 1}]})
