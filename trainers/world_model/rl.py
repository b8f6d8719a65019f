"""RL for a world model on TRL's ``GRPOTrainer``: GSPO (or GRPO) with the hybrid reward.

A run has our :class:`RLArgs` (data, model, judge, prompt length) and TRL's ``GRPOConfig``,
built by :func:`grpo_config` from :data:`GRPO_DEFAULTS`. Each step TRL samples
``num_generations`` outputs for each training item of the batch, rewards them with
:func:`~trainers.world_model.rewards.rule_reward` (and, with a judge,
:func:`~trainers.world_model.rewards.make_judge_reward`, weighted ``[1 - w, w]``), normalises
the rewards within each group (``scale_rewards="group"``) and makes ``num_iterations`` clipped
updates on the samples. GSPO, the default, clips the length-normalised *sequence* importance
ratio (``importance_sampling_level="sequence"``); GRPO clips each token's ratio and averages
over the output's tokens (``"token"``); both with ``loss_type="grpo"`` and no KL term. The
reward, each reward function and each rule check are logged to the console and TensorBoard
(``output_dir/runs``).

Example (CLI: our flags, then any of ``GRPOConfig``'s)::

    agentworld wm rl --train data/train.jsonl --model runs/wm --output_dir runs/wm_rl \
        --max_steps 50 --importance_sampling_level token   # GRPO
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentworld_envs.backends import make_backend, parse_backend_arg
from agentworld_envs.backends.faults import DEFAULT_MAX_FAULTS, FaultTally
from agentworld_envs.backends.registry import answering_settings
from agentworld_envs.bench.items import BenchItem
from agentworld_envs.bench.journal import fingerprint
from trainers.common.args import ConfigError, check_threads
from trainers.world_model.rewards import make_judge_reward, rule_reward
from trainers.world_model.sft import (
    chat,
    check_at_least,
    check_model,
    check_view,
    device_defaults,
    epoch_seeded,
    load_model,
    require_trl,
    resume_checkpoint,
    training_items,
)

__all__ = ["DEFAULT_JUDGE_WEIGHT", "GRPO_DEFAULTS", "NothingLearnedError", "RLArgs", "RLResult",
           "grpo_config", "grpo_settings", "prompt_text", "rl_dataset", "train_rl"]

GRPO_DEFAULTS: dict[str, Any] = {
    "output_dir": "runs/wm_rl", "max_steps": 20, "per_device_train_batch_size": 16,
    "num_generations": 4, "num_iterations": 2, "loss_type": "grpo",
    "importance_sampling_level": "sequence", "scale_rewards": "group", "beta": 0.0,
    "epsilon": 0.2, "learning_rate": 1e-4, "lr_scheduler_type": "constant",
    "max_grad_norm": 1.0, "temperature": 1.0, "top_p": 1.0, "top_k": 0,
    "max_completion_length": 256, "seed": 0, "logging_steps": 1,
    "report_to": ["tensorboard"], "save_strategy": "no", "activation_checkpointing": False}
"""Where our ``GRPOConfig`` starts, in place of TRL's defaults: GSPO (sequence-level ratio,
the GRPO loss, group-scaled rewards, no KL), 4 samples for each of 4 items a step, 2 updates
on each batch, a constant learning rate, plain sampling, a log line and TensorBoard point per
step, no checkpoints unless asked, and bf16 only on an accelerator."""


DEFAULT_JUDGE_WEIGHT = 0.3
"""The rubric's share of the reward when a judge is given and ``judge_weight`` is not."""


@dataclass
class RLArgs:
    """Our settings of one RL run (TRL's ``GRPOConfig`` holds the rest).

    Attributes:
        train: Training items (AgentWorldBench JSONL file or directory).
        model: The world model to improve (a local causal LM, e.g. an SFT output, or a
            LoRA adapter's folder, whose adapter is trained).
        max_prompt_length: Longest prompt in tokens (oldest tokens dropped; TRL's
            ``GRPOConfig`` has no prompt cap).
        judge: Judge backend: a name or JSON, as ``wm bench --judge`` takes it (empty: rule
            reward only).
        judge_weight: The rubric's share of the reward, in [0, 1] (``reward_weights`` =
            [1 - w, w]; default 0.3); only with a judge (without one the reward is the rule
            score's, [1]).
        max_faults: Samples left without a judge's verdict (a failed call or an unreadable
            verdict) to go on after; one more stops the run (-1: never stop). A run that
            ends with any such sample saves the model and then exits non-zero, saying so.
        threads: torch CPU threads (0: torch's default).
        view: Show the policy each chat through this view, as ``wm sft --view`` did (the
            judge reads the whole item); empty shows it whole.
    """

    train: str
    model: str
    max_prompt_length: int = 1024
    judge: str = ""
    judge_weight: float | None = None
    max_faults: int = DEFAULT_MAX_FAULTS
    threads: int = 0
    view: str = ""

    def __post_init__(self) -> None:
        check_at_least(self, 1, "max_prompt_length")
        check_at_least(self, -1, "max_faults")
        check_at_least(self, 0, "threads")
        check_threads("threads", self.threads)
        check_view(self.view)
        if self.judge_weight is not None:
            if not self.judge:
                raise ConfigError("judge_weight", "weighs the judge's reward: give --judge too, "
                                                  "or leave it out")
            if not 0 <= self.judge_weight <= 1:
                raise ConfigError("judge_weight", f"must be in [0, 1], not {self.judge_weight}")

    def reward_weights(self) -> list[float]:
        """The rule reward's and (with a judge) the rubric's weights."""
        if not self.judge:
            return [1.0]
        weight = DEFAULT_JUDGE_WEIGHT if self.judge_weight is None else self.judge_weight
        return [1 - weight, weight]


class NothingLearnedError(RuntimeError):
    """A run in which GRPO learned nothing (:attr:`RLResult.learned` is false); its model is
    saved all the same."""


@dataclass
class RLResult:
    """What TRL logged at each step: the reward, each reward function's mean, the loss, ..."""

    out: str
    history: list[dict[str, float]] = field(default_factory=list)

    @property
    def learned(self) -> bool:
        """Whether any step had a group whose samples scored differently: GRPO learns only from
        those (a tied group's advantages are all 0), so a run without one left the model as it
        was."""
        return any(entry.get("frac_reward_zero_std", 0.0) < 1.0 for entry in self.history)


def grpo_settings() -> tuple[type, dict[str, Any]]:
    """TRL's ``GRPOConfig`` and where ours starts: :data:`GRPO_DEFAULTS`, with
    :func:`~trainers.world_model.sft.device_defaults` (loads TRL, with the install hint)."""
    defaults = {**GRPO_DEFAULTS, **device_defaults()}
    from trl import GRPOConfig

    return GRPOConfig, defaults


def grpo_config(**overrides: Any) -> Any:
    """TRL's ``GRPOConfig`` from :func:`grpo_settings`, with ``overrides`` (any of its
    fields)."""
    config_cls, defaults = grpo_settings()
    return config_cls(**{**defaults, **overrides})


def prompt_text(tokenizer: Any, item: BenchItem, max_length: int, view: str = "") -> str:
    """The item's chat (through ``view`` when one is named) rendered for generation, cut to
    its last ``max_length`` tokens."""
    text = tokenizer.apply_chat_template(chat(item, view), add_generation_prompt=True,
                                         tokenize=False)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer.decode(ids[-max_length:]) if len(ids) > max_length else text


def rl_dataset(tokenizer: Any, items: Sequence[BenchItem], max_length: int, view: str = ""
               ) -> Any:
    """One row per item: the rendered ``prompt`` (through ``view``), and the ``ground_truth``
    and ``item_index`` that the reward functions read."""
    from datasets import Dataset

    return Dataset.from_list([
        {"prompt": prompt_text(tokenizer, item, max_length, view),
         "ground_truth": item.ground_truth,
         "item_index": index} for index, item in enumerate(items)])


def train_rl(args: RLArgs, config: Any = None) -> RLResult:
    """Run TRL's GRPO trainer, save the model to ``config.output_dir`` and return the logged
    history. ``config``: TRL's ``GRPOConfig`` (default: :func:`grpo_config`); its
    ``reward_weights`` are :meth:`RLArgs.reward_weights`, and its ``resume_from_checkpoint``
    is read by :func:`~trainers.world_model.sft.resume_checkpoint`. The judge's config, the
    checkpoint, the data and a resumed run's settings
    (:func:`~trainers.world_model.budget.keep_settings`) are checked before the model loads;
    the judge is built once, and closed when the run ends."""
    torch = require_trl()
    from trl import GRPOTrainer

    from trainers.world_model.budget import (
        KeptTally,
        keep_settings,
        keeping_callbacks,
        run_settings,
    )

    config = config if config is not None else grpo_config()
    config = copy.copy(config)  # replace() would redo the config's derived settings
    config.reward_weights = args.reward_weights()
    judge_config = parse_backend_arg(args.judge) if args.judge else None
    checkpoint = resume_checkpoint(config)
    check_at_least(config, 1, "max_completion_length")
    check_model(args.model)
    items = training_items(args.train)
    ours = {**asdict(args), "judge": fingerprint(answering_settings(judge_config))}
    del ours["judge_weight"]  # compared as the config's reward_weights
    kept = keep_settings(checkpoint, run_settings(config, **ours))
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(config.seed)
    judged = FaultTally(args.max_faults, "judge verdicts")
    with make_backend(judge_config) if judge_config else contextlib.nullcontext() as judge:
        model, tokenizer = load_model(args.model)
        rewards = [rule_reward] + ([make_judge_reward(judge, items, judged)]
                                   if judge is not None else [])
        trainer_cls = epoch_seeded(keeping_callbacks(GRPOTrainer))
        trainer = trainer_cls(model=model, reward_funcs=rewards, args=config,
                              train_dataset=rl_dataset(tokenizer, items, args.max_prompt_length,
                                                       args.view),
                              processing_class=tokenizer, callbacks=[KeptTally(judged), kept])
        trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model(config.output_dir)
    result = RLResult(out=config.output_dir, history=[e for e in trainer.state.log_history
                                                      if "reward" in e])
    Path(config.output_dir, "rl_args.json").write_text(json.dumps(
        {"rl": asdict(args), "trl": json.loads(config.to_json_string()),
         "resumed_from": checkpoint, "history": result.history}, indent=2), encoding="utf-8")
    judged.check(f"the model is saved in {config.output_dir}, but those samples were "
                 "rewarded by the rule checks alone")
    return result
