"""A resumed ``wm rl`` run still counts the judge faults of the steps before its checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample

pytest.importorskip("trl")

SCORES = dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), 3)
VERDICTS = {"unreadable": '<final_evaluation>\n{"strengths": []}\n</final_evaluation>',
            "scored": f"<final_evaluation>{json.dumps({'scores': SCORES})}</final_evaluation>"}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("restore", [False, True], ids=["", "restoring callback states"])
def test_faults_before_the_checkpoint_still_fail_the_resumed_run(restore: bool,
                                                                 tiny_lm_dir: Path,
                                                                 tmp_path: Path) -> None:
    """Before, the resumed run started a fresh tally: it ended without an error although its
    model was trained on two steps whose samples the judge never scored."""
    from trainers.world_model.rl import RLArgs, grpo_config, train_rl

    train = write_items([i for i in load_sample() if i.task == "floor"][:2],
                        tmp_path / "train.jsonl")

    def run(verdict: str, steps: int, **more: object) -> None:
        judge = json.dumps({"name": "scripted",
                            "rules": [{"match": ".", "reply": VERDICTS[verdict]}]})
        train_rl(RLArgs(train=str(train), model=str(tiny_lm_dir), max_prompt_length=256,
                        judge=judge, max_faults=-1, threads=1),
                 grpo_config(output_dir=str(tmp_path / "rl"), max_steps=steps,
                             per_device_train_batch_size=2, num_generations=2,
                             num_iterations=1, max_completion_length=4, save_strategy="steps",
                             save_steps=2, report_to=[], disable_tqdm=True, **more))

    with pytest.raises(TooManyFaultsError, match="4 of 4 judge verdicts failed"):
        run("unreadable", 2)  # interrupted here, after checkpoint-2
    with pytest.raises(TooManyFaultsError, match="4 of 8 judge verdicts failed"):
        run("scored", 4, resume_from_checkpoint="last",
            restore_callback_states_from_checkpoint=restore)
