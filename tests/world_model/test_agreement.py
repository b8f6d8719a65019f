"""The world-model evidence's ``agree`` step: which held-out answers another setting changes."""

from __future__ import annotations

import re

import pytest

from agentworld_envs.backends import make_backend
from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.bench.items import load_items
from agentworld_envs.bench.sample import sample_path
from trainers.experiments.world_model_evidence import agreement, first_difference


def test_first_difference_is_the_first_differing_character() -> None:
    assert first_difference("abc", "abc") is None
    assert first_difference("abc", "abd") == 2
    assert first_difference("ab", "abc") == 2
    assert first_difference("", "x") == 0


def test_agreement_names_each_changed_item_where_its_answer_first_differs() -> None:
    items = load_items(sample_path())[:6]
    changed = items[2].messages()[-1]["content"][:40]
    scripted = {"name": "scripted"}
    other = {"name": "scripted", "rules": [{"match": re.escape(changed),
                                            "reply": "<predicted_observation>no</"
                                                     "predicted_observation>"}]}
    result = agreement({"reference": make_backend(scripted), "same": make_backend(scripted),
                        "other": make_backend(other)}, items, 16, batch_size=4)
    assert result["items"] == 6 and result["reference"] == "reference"
    assert set(result["cpu_seconds"]) == {"reference", "same", "other"}
    assert result["same"] == {"identical": 6, "differ": []}
    differ = result["other"]["differ"]
    assert [d["key"] for d in differ] == [i.key for i in items
                                          if changed in i.messages()[-1]["content"]]
    assert items[2].key in {d["key"] for d in differ}
    for d in differ:
        assert d["reference"][:d["position"]] == d["other"][:d["position"]]
        assert d["reference"][d["position"]] != d["other"][d["position"]]
    assert result["other"]["identical"] == 6 - len(differ)


def test_agreement_stops_at_a_failed_request_instead_of_comparing_it() -> None:
    failing = {"name": "scripted", "rules": [{"match": ".", "error": "out of memory"}]}
    with pytest.raises(TooManyFaultsError, match="out of memory"):
        agreement({"reference": make_backend({"name": "scripted"}),
                   "other": make_backend(failing)},
                  load_items(sample_path())[:2], 16)
