"""GRPO on a few AgentFloor tasks with TRL, through the turn-level rollout (or the tool loop).

On CPU by default: the script builds a tiny model, warm-starts it on the tasks' reference
solutions (so it emits tool calls, and takes the right first step about half the time: see
:func:`tiny_model`) and runs a few GRPO steps. Each step prints its reward, loss and grad_norm,
and says so when it trained nothing (grad_norm 0). The loss of a step's first pass is about 0
whatever it learns (a group's advantages average 0); grad_norm shows the update. On a GPU,
with a real local model::

    python examples/trl_grpo_floor.py --model /models/Qwen3-1.7B --tasks A1,B3,C3 \\
        --variants v0,v1,v2,v3 --max-steps 50 --num-generations 8 --max-completion-length 1024

``--adapter tools`` uses ``environment_factory`` tool methods instead (TRL runs the tool loop;
see docs/trl.md for what that changes).

Quick check (CPU, about a minute; one step of 16 rollouts): ``python examples/trl_grpo_floor.py
--max-steps 1 --output-dir out``
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentworld_envs.cli import run_command
from agentworld_envs.cli_errors import UsageError
from trainers.common.flags import check_model_folder, parse_with_config


@dataclass
class Args:
    """Our settings (CleanRL style: one flat dataclass); TRL's ``GRPOConfig`` takes the rest
    (``--max_steps``, ``--num_generations``, ``--learning_rate``, ...; see ``--help``)."""

    model: str | None = None
    """A local model directory; by default a tiny model is built and warm-started."""
    tasks: str = "A1"
    """Comma-separated AgentFloor task ids."""
    variants: str = "v0,i1"
    """Comma-separated variants per task (rows of the dataset)."""
    adapter: Literal["turns", "tools"] = "turns"
    """``turns`` (TurnRollout, our semantics) or ``tools`` (environment_factory tool loop)."""


def grpo_settings() -> tuple[type, dict]:
    """TRL's ``GRPOConfig`` and where this script starts it: 2 steps of 16 rollouts in groups
    of 8, 160 tokens a whole episode (all turns and tool results), token-level GRPO
    (``--importance_sampling_level sequence`` is GSPO), on CPU unless CUDA is there."""
    from agentworld_envs.trl import import_trl

    GRPOConfig = import_trl().GRPOConfig  # or the install hint, in one line (trl needs torch)
    import torch

    cuda = torch.cuda.is_available()
    return GRPOConfig, {
        "output_dir": "runs/trl_grpo_floor", "max_steps": 2, "num_generations": 8,
        "per_device_train_batch_size": 16, "max_completion_length": 160, "temperature": 0.5,
        "learning_rate": 1e-3, "loss_type": "grpo", "importance_sampling_level": "token",
        "scale_rewards": "group", "report_to": [], "logging_steps": 1, "save_strategy": "no",
        "seed": 0, "disable_tqdm": True, "bf16": cuda, "dataloader_pin_memory": cuda,
        "use_cpu": not cuda}


def tiny_model(rows: list[dict], directory: Path, *, tool_methods: bool) -> str:
    """Build a tiny model and warm-start it on the rows' reference solutions, half right.

    Each row's first turn is imprinted with its own reference reply and, as often, with the
    next row's (another record or task), so the model takes the right first step about half
    the time. Its GRPO groups then hold passing and failing rollouts; a fully imprinted model
    writes the same episode in every rollout of a group, so every advantage and the gradient
    are 0. ``tool_methods``: render the tools as the ``--adapter tools`` methods.
    """
    from agentworld_envs.trl import (
        build_tiny_chat_model,
        environment_class,
        imprint,
        solution_examples,
    )

    solutions = [solution_examples(row) for row in rows]
    examples = []
    for row, solution, other in zip(rows, solutions, solutions[1:] + solutions[:1], strict=True):
        mixed = [*solution, {**solution[0], "reply": other[0]["reply"]}]
        if tool_methods:
            tools_class = environment_class(f"AgentFloor/{row['environment']}-v0")
            mixed = [{**e, "tools": [getattr(tools_class, t["function"]["name"])
                                     for t in e["tools"]]} for e in mixed]
        examples += mixed
    build_tiny_chat_model(directory, examples)
    return str(imprint(directory, examples, steps=120, lr=5e-3))


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    args, config = parse_with_config(Args, grpo_settings, argv, prog=Path(__file__).name)
    from datasets import Dataset
    from transformers import AutoTokenizer

    from agentworld_envs.trl import (
        TurnRollout,
        check_batch_fits,
        environment_class,
        environment_reward,
        floor_rows,
        import_trl,
        turn_environment_class,
    )

    GRPOTrainer = import_trl().GRPOTrainer  # or the install hint, in one line

    check_model_folder(args.model)
    tasks, variants = args.tasks.split(","), args.variants.split(",")
    try:
        rows = floor_rows(tasks, variants, system_prompt=None if args.model else
                          "Use the tools, then answer.", seed=config.seed)
    except ValueError as exc:  # a task or variant that does not exist, named
        raise UsageError(str(exc)) from None
    check_batch_fits(len(rows), config)
    turns = args.adapter == "turns"
    scratch = tempfile.TemporaryDirectory(prefix="tiny_trl_")
    model = args.model or tiny_model(rows, Path(scratch.name), tool_methods=not turns)
    make = turn_environment_class if turns else environment_class
    factory = {t: make(f"AgentFloor/{t}-v0") for t in tasks}
    trainer = GRPOTrainer(
        model=model, args=config, processing_class=AutoTokenizer.from_pretrained(model),
        train_dataset=Dataset.from_list(rows), reward_funcs=[environment_reward],
        environment_factory=factory, rollout_func=TurnRollout() if turns else None)
    start = time.perf_counter()
    with scratch:  # the tiny model's folder, removed after training
        trainer.train()
    seconds = time.perf_counter() - start
    history = [h for h in trainer.state.log_history if "reward" in h]
    for step, entry in enumerate(history, 1):
        print(f"step {step}: reward {entry['reward']:.3f} (std {entry['reward_std']:.3f}, "
              f"{1 - entry['frac_reward_zero_std']:.0%} of groups differ), loss "
              f"{entry['loss']:.2e}, grad_norm {entry['grad_norm']:.3g}, completion length "
              f"{entry['completions/mean_length']:.1f}")
        if not entry["grad_norm"]:
            print(f"step {step} trained nothing: grad_norm 0 (GRPO learns only from groups "
                  f"whose rewards differ: {1 - entry['frac_reward_zero_std']:.0%} here)")
    steps, tokens = trainer.state.global_step, trainer.state.num_input_tokens_seen
    print(f"{steps} steps in {seconds:.1f} s: {steps / seconds:.3f} steps/s, "
          f"{tokens / seconds:.0f} tokens/s")


if __name__ == "__main__":
    sys.exit(run_command(main))
