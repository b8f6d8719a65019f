"""RL for a world model on TRL's ``GRPOTrainer``: GSPO (or GRPO) with the hybrid reward.

Each step TRL samples ``group_size`` outputs for each of ``prompts_per_step`` training items,
rewards them with :func:`~trainers.world_model.rewards.rule_reward` (and, with a judge,
:func:`~trainers.world_model.rewards.make_judge_reward`, weighted ``[1 - w, w]``), normalises
the rewards within each group (``scale_rewards="group"``) and makes ``epochs`` clipped updates
on the samples (``num_iterations``). GSPO clips the length-normalised *sequence* importance ratio
(``importance_sampling_level="sequence"``); GRPO clips each token's ratio and averages over the
output's tokens (``"token"``); both with ``loss_type="grpo"`` and no KL term. The reward, each
reward function and each rule check are logged to the console and TensorBoard (``out/runs``).

Example (CLI)::

    agentworld wm rl --train data/train.jsonl --model runs/wm --out runs/wm_rl --steps 50
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentworld_envs.backends.faults import DEFAULT_MAX_FAULTS, FaultTally
from agentworld_envs.bench.items import BenchItem, load_items
from trainers.world_model.rewards import make_judge_reward, rule_reward
from trainers.world_model.sft import load_model, require_trl

__all__ = ["IMPORTANCE_SAMPLING", "RLArgs", "RLResult", "grpo_config", "prompt_text",
           "rl_dataset", "train_rl"]

IMPORTANCE_SAMPLING = {"gspo": "sequence", "grpo": "token"}
"""Our algorithm name -> TRL's ``importance_sampling_level`` (with ``loss_type="grpo"``)."""


@dataclass
class RLArgs:
    """Settings of one RL run.

    Attributes:
        train: Training items (AgentWorldBench JSONL file or directory).
        model: The world model to improve (a local causal LM, e.g. an SFT output).
        out: Where the improved model is saved.
        algorithm: gspo (sequence-level ratio) or grpo (token-level ratio).
        steps: Sampling-and-update rounds (TRL max_steps).
        prompts_per_step: Items per round.
        group_size: Outputs sampled per item (TRL num_generations).
        epochs: Gradient updates per round on the same samples (TRL num_iterations).
        lr: Learning rate (constant).
        clip: Ratio clip range: 1 +/- clip (TRL epsilon).
        temperature: Sampling temperature.
        max_new_tokens: Longest output (TRL max_completion_length).
        max_length: Longest prompt in tokens (oldest tokens dropped).
        judge: Judge backend as JSON (empty: rule reward only).
        judge_weight: The rubric's share of the reward when a judge is given.
        max_faults: Samples left without a judge's verdict (a failed call or an unreadable
            verdict) to go on after; one more stops the run (-1: never stop). A run that
            ends with any such sample saves the model and then exits non-zero, saying so.
        grad_clip: Gradient-norm clip (TRL max_grad_norm).
        seed: Seeds item draws and sampling.
        threads: torch CPU threads (0: torch's default).
        save_every: Also save a checkpoint to out/checkpoint-N every this many steps (0: only
            the final model).
        device: cpu, or an accelerator (TRL places the model; bf16 mixed precision there).
    """

    train: str
    model: str
    out: str
    algorithm: Literal["gspo", "grpo"] = "gspo"
    steps: int = 20
    prompts_per_step: int = 4
    group_size: int = 4
    epochs: int = 2
    lr: float = 1e-4
    clip: float = 0.2
    temperature: float = 1.0
    max_new_tokens: int = 256
    max_length: int = 1024
    judge: str = ""
    judge_weight: float = 0.3
    max_faults: int = DEFAULT_MAX_FAULTS
    grad_clip: float = 1.0
    seed: int = 0
    threads: int = 0
    save_every: int = 0
    device: str = "cpu"


@dataclass
class RLResult:
    """What TRL logged at each step: the reward, each reward function's mean, the loss, ..."""

    out: str
    history: list[dict[str, float]] = field(default_factory=list)


def grpo_config(args: RLArgs) -> Any:
    """TRL's ``GRPOConfig`` for ``args`` (one log line and TensorBoard point per step)."""
    from trl import GRPOConfig

    if args.algorithm not in IMPORTANCE_SAMPLING:
        raise ValueError(f"unknown algorithm {args.algorithm!r}: use gspo or grpo")
    on_cpu = args.device == "cpu"
    return GRPOConfig(
        output_dir=args.out, max_steps=args.steps,
        per_device_train_batch_size=args.prompts_per_step * args.group_size,
        num_generations=args.group_size, num_iterations=args.epochs,
        loss_type="grpo", importance_sampling_level=IMPORTANCE_SAMPLING[args.algorithm],
        scale_rewards="group", beta=0.0, epsilon=args.clip,
        reward_weights=[1 - args.judge_weight, args.judge_weight] if args.judge else [1.0],
        learning_rate=args.lr, lr_scheduler_type="constant", max_grad_norm=args.grad_clip,
        temperature=args.temperature, top_p=1.0, top_k=0,
        max_completion_length=args.max_new_tokens, seed=args.seed, data_seed=args.seed,
        logging_steps=1, report_to=["tensorboard"],
        save_strategy="steps" if args.save_every else "no", save_steps=args.save_every,
        use_cpu=on_cpu, bf16=not on_cpu, activation_checkpointing=False)


def prompt_text(tokenizer: Any, item: BenchItem, max_length: int) -> str:
    """The item's chat rendered for generation, cut to its last ``max_length`` tokens."""
    text = tokenizer.apply_chat_template(item.messages(), add_generation_prompt=True,
                                         tokenize=False)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer.decode(ids[-max_length:]) if len(ids) > max_length else text


def rl_dataset(tokenizer: Any, items: Sequence[BenchItem], max_length: int) -> Any:
    """One row per item: the rendered ``prompt``, and the ``ground_truth`` and ``item_index``
    that the reward functions read."""
    from datasets import Dataset

    return Dataset.from_list([
        {"prompt": prompt_text(tokenizer, item, max_length), "ground_truth": item.ground_truth,
         "item_index": index} for index, item in enumerate(items)])


def train_rl(args: RLArgs) -> RLResult:
    """Run TRL's GRPO trainer, save the model to ``args.out`` and return the logged history."""
    torch = require_trl()
    from trl import GRPOTrainer

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    items = load_items(args.train)
    model, tokenizer = load_model(args.model, args.device)
    judged = FaultTally(args.max_faults, "judge verdicts")
    rewards = [rule_reward] + ([make_judge_reward(json.loads(args.judge), items, judged)]
                               if args.judge else [])
    trainer = GRPOTrainer(model=model, reward_funcs=rewards, args=grpo_config(args),
                          train_dataset=rl_dataset(tokenizer, items, args.max_length),
                          processing_class=tokenizer)
    trainer.train()
    trainer.save_model(args.out)
    result = RLResult(out=args.out, history=[e for e in trainer.state.log_history
                                             if "reward" in e])
    Path(args.out, "rl_args.json").write_text(json.dumps(
        {"rl": asdict(args), "history": result.history}, indent=2), encoding="utf-8")
    judged.check(f"the model is saved in {args.out}, but those samples were rewarded by the "
                 "rule checks alone")
    return result
