"""reasoning-v0 datasets whose items follow Python's string hashing are declared, and warn."""

from __future__ import annotations

import pytest

pytest.importorskip("reasoning_gym")

from team_envs.text import reasoning  # noqa: E402
from tests.helpers.hash_seeds import printed_under_hash_seeds  # noqa: E402

_ANSWERS = """
import json, sys
import reasoning_gym
names = sys.argv[1:]
print(json.dumps({n: [str(reasoning_gym.create_dataset(n, seed=0, size=8)[i]["answer"])
                      for i in range(8)] for n in names}))
"""
_SUSPECTS = ("knight_swap", "word_ladder", "basic_arithmetic")


def test_datasets_whose_answers_follow_the_hash_seed_are_declared() -> None:
    first, second = printed_under_hash_seeds(_ANSWERS, 1, 2, args=_SUSPECTS)
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
