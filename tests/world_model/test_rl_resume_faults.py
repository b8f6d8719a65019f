"""A resumed ``wm rl`` run still counts the judge faults of the steps before its checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample

pytest.importorskip("trl")

VERDICTS = {"unreadable": '<final_evaluation>\n{"strengths": []}\n</final_evaluation>'}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("restore", [False, True], ids=["", "restoring callback states"])
def test_faults_before_the_checkpoint_still_fail_the_resumed_run(restore: bool,
                                                                 tiny_lm_dir: Path,
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """Before, the resumed run started a fresh tally: it ended without an error although its
    model was trained on two steps whose samples the judge never scored."""
    import trainers.world_model.rl as rl
    from trainers.world_model.rewards import rule_reward

    train = write_items([i for i in load_sample() if i.task == "floor"][:2],
                        tmp_path / "train.jsonl")
    steps: list[int] = []

    def killed_at_step_3(*args: object, **kwargs: object) -> list[float]:
        steps.append(1)  # the rule reward is asked once a step
        if len(steps) == 3:
            raise KeyboardInterrupt  # a kill after checkpoint-2
        return rule_reward(*args, **kwargs)

    monkeypatch.setattr(rl, "rule_reward", killed_at_step_3)
    judge = json.dumps({"name": "scripted",
                        "rules": [{"match": ".", "reply": VERDICTS["unreadable"]}]})

    def run(**more: object) -> None:
        rl.train_rl(rl.RLArgs(train=str(train), model=str(tiny_lm_dir), max_prompt_length=256,
                              judge=judge, max_faults=-1, threads=1),
                    rl.grpo_config(output_dir=str(tmp_path / "rl"), max_steps=4,
                                   per_device_train_batch_size=2, num_generations=2,
                                   num_iterations=1, max_completion_length=4,
                                   save_strategy="steps", save_steps=2, report_to=[],
                                   disable_tqdm=True, **more))

    with pytest.raises(KeyboardInterrupt):
        run()
    with pytest.raises(TooManyFaultsError, match="8 of 8 judge verdicts failed"):
        run(resume_from_checkpoint="last", restore_callback_states_from_checkpoint=restore)
