"""``wm sft`` data: with ``all_turns`` each observation is learned where the assistant wrote it,
not where the same text first appears (a system prompt's example, a user turn); an unknown
``--view`` is a one-line error before anything loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.bench.items import item_from_dict, write_items
from agentworld_envs.bench.sample import load_sample
from agentworld_envs.cli import main

pytest.importorskip("trl")

OBSERVATION = '{"status": "ok", "result": 3}'


def test_all_turns_learns_each_observation_in_its_own_turn(tiny_lm_dir: Path) -> None:
    from transformers import AutoTokenizer

    from trainers.world_model.sft import SFTArgs, sft_example

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    item = item_from_dict({
        "task": "floor", "id": 0, "prompt": ["### Turn 1\nlook it up", "### Turn 2\nagain"],
        "response": [f"**Environment Observation:**\n{OBSERVATION}",
                     "**Environment Observation:**\n[]"],
        "current_prompt": "### Turn 2\nagain", "turn_idx": 2, "total_turns": 2,
        "system_str": f"Simulate the tools. An answer looks like {OBSERVATION} here."})
    ids, labels = sft_example(tokenizer, item, SFTArgs(train="", all_turns=True), 10**6)
    spans, span = [], []
    for token, label in zip(ids, labels, strict=True):
        if label >= 0:
            span.append(token)
        elif span:
            spans, span = [*spans, tokenizer.decode(span)], []
    spans += [tokenizer.decode(span)] if span else []
    assert spans == [f"{OBSERVATION}<|im_end|>",
                     "<predicted_observation>\n[]\n</predicted_observation><|im_end|>"]
    first = next(k for k, label in enumerate(labels) if label >= 0)
    assert tokenizer.decode(ids[:first]).endswith("**Environment Observation:**\n")


def test_an_unknown_view_is_one_line_before_anything_loads(
        tiny_lm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train = write_items([i for i in load_sample() if i.task == "floor"][:1],
                        tmp_path / "train.jsonl")
    out = tmp_path / "out"
    assert main(["wm", "sft", "--train", str(train), "--model", str(tiny_lm_dir),
                 "--view", "compcat", "--output_dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "view: unknown view 'compcat' (known: compact" in err, err
    assert not out.exists()
