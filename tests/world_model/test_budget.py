"""``--max-minutes`` keeps the run TRL's config describes: epochs (``max_steps`` -1) and a
warm-up given as a share of the steps (``warmup_steps`` below 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample

pytest.importorskip("trl")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_time_budget_trains_every_epoch_step_with_the_warm_up_share(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    """Before, the budget counted ``max_steps`` -1 as one step (the run stopped after step 1 of
    4, saying it was saved) and ``int(0.5)`` warm-up steps (none)."""
    from trainers.world_model.sft import SFTArgs, sft_config, train_sft

    train = write_items([i for i in load_sample() if i.task == "floor"][:4],
                        tmp_path / "train.jsonl")
    out = tmp_path / "out"
    config = sft_config(output_dir=str(out), max_steps=-1, num_train_epochs=2,
                        per_device_train_batch_size=2, max_length=256, warmup_steps=0.5,
                        learning_rate=1e-3, logging_steps=1, report_to=[], disable_tqdm=True,
                        save_strategy="epoch")
    result = train_sft(SFTArgs(train=str(train), model=str(tiny_lm_dir), threads=1,
                               max_minutes=60.0), config)
    assert result.steps == 4 and len(result.losses) == 4  # 4 items, 2 a step, 2 epochs
    state = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())
    rates = [e["learning_rate"] for e in state["log_history"] if "loss" in e]
    assert rates[0] < rates[1] == pytest.approx(1e-3)  # warm-up: 2 of the 4 steps
