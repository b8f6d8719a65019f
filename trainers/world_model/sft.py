"""Supervised next-observation training of a world model, on TRL's ``SFTTrainer``.

Each bench item becomes one tokenised prompt-completion row: ``input_ids`` and a
``completion_mask`` over the target tokens; ``completion_only_loss`` makes TRL turn the mask into
labels, so the loss is next-token cross-entropy on the target only (the prompt is masked). The
rows are tokenised here rather than by TRL so that a too-long pair keeps its target and the
prompt's *end* (TRL truncates from the end, which would cut the target off), and so that
``all_turns`` can mark every observation of a trajectory. The model is a local pretrained
causal LM (``model``) or built from scratch (:mod:`trainers.world_model.scratch`) with a
tokenizer trained on the training items. TensorBoard logs go to ``out/runs``; checkpoints (with
``save_every``) to ``out/checkpoint-N``. Deterministic for a given seed on a given machine.

Example (CLI)::

    agentworld wm sft --train data/train.jsonl --out runs/wm --steps 400 --max-minutes 9
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentworld_envs.bench.items import BenchItem, load_items
from agentworld_envs.models.compact_view import VIEWS
from agentworld_envs.models.pretrained import resolve_model
from agentworld_envs.world.parsing import clean_response_marker
from trainers.world_model.examples import target_text
from trainers.world_model.scratch import ScratchSpec, build_model, build_tokenizer

__all__ = ["SFTArgs", "SFTResult", "chat", "encode", "final_turns", "load_model", "lora_config",
           "prepare_model", "require_trl", "sft_config", "sft_dataset", "sft_example", "train_sft"]

_HINT = 'world-model training needs TRL, torch and transformers: pip install "agentworld[train]"'


@dataclass
class SFTArgs:
    """Settings of one SFT run.

    Attributes:
        train: Training items (AgentWorldBench JSONL file or directory).
        out: Where the trained model and tokenizer are saved.
        model: A local causal LM to fine-tune; empty builds one from scratch.
        reasoning: Put each item's reasoning (where it has one) before the observation.
        all_turns: Also learn the earlier observations of each chat (one sequence per
            trajectory, its last item, with a loss on every assistant turn); otherwise only
            each item's own target.
        steps: Optimiser steps (TRL max_steps).
        batch_size: Sequences per step (TRL per_device_train_batch_size).
        lr: Peak learning rate (linear warm-up, then cosine decay to a tenth over the step or
            time budget, whichever runs out first).
        warmup: Warm-up steps.
        weight_decay: AdamW weight decay.
        grad_clip: Gradient-norm clip (TRL max_grad_norm).
        max_length: Longest sequence in tokens; longer prompts lose their oldest tokens
            (or, with ``drop_overlong``, the pair is left out).
        drop_overlong: Leave out pairs longer than ``max_length`` instead of cutting them.
        max_minutes: Stop early after this much training time (0: no limit).
        seed: Seeds the model, the data order and torch.
        threads: torch CPU threads (0: torch's default).
        log_every: Log the loss (console and TensorBoard) every this many steps.
        save_every: Also save a checkpoint to out/checkpoint-N every this many steps (0: only
            the final model).
        vocab_size: From scratch: BPE vocabulary size.
        hidden_size: From scratch: model width.
        layers: From scratch: transformer blocks.
        heads: From scratch: attention heads.
        intermediate_size: From scratch: MLP width.
        section_start: From scratch: where the model's view of the system prompt starts.
        section_end: From scratch: where that view ends.
        device: cpu, or an accelerator (TRL places the model; bf16 mixed precision there).
        lora_rank: Train a LoRA adapter of this rank on every linear layer of ``model`` (0:
            train all the weights); only the adapter is saved.
        lora_alpha: LoRA scaling numerator.
        lora_layers: Put the adapter on the top this many transformer blocks only (0: all);
            the backward pass then stops there, so a step costs less.
        view: Show the model each chat through this view (``compact``: see
            :mod:`agentworld_envs.models.compact_view`); empty shows it whole.
    """

    train: str
    out: str
    model: str = ""
    reasoning: bool = False
    all_turns: bool = False
    steps: int = 300
    batch_size: int = 8
    lr: float = 2e-3
    warmup: int = 20
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    max_length: int = 2048
    drop_overlong: bool = False
    max_minutes: float = 0.0
    seed: int = 0
    threads: int = 0
    log_every: int = 10
    save_every: int = 0
    vocab_size: int = ScratchSpec.vocab_size
    hidden_size: int = ScratchSpec.hidden_size
    layers: int = ScratchSpec.layers
    heads: int = ScratchSpec.heads
    intermediate_size: int = ScratchSpec.intermediate_size
    section_start: str = ScratchSpec.section_start
    section_end: str = ScratchSpec.section_end
    device: str = "cpu"
    lora_rank: int = 0
    lora_alpha: int = 32
    lora_layers: int = 0
    view: str = ""

    def spec(self) -> ScratchSpec:
        """The from-scratch model's sizes."""
        return ScratchSpec(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                           layers=self.layers, heads=self.heads,
                           intermediate_size=self.intermediate_size,
                           max_positions=max(self.max_length, ScratchSpec.max_positions),
                           section_start=self.section_start, section_end=self.section_end)


@dataclass
class SFTResult:
    """What a run did: the loss per logged step, counts and throughput."""

    out: str
    steps: int
    losses: list[tuple[int, float]] = field(default_factory=list)
    train_seconds: float = 0.0
    tokens: int = 0
    parameters: int = 0

    @property
    def tokens_per_second(self) -> float:
        """Training tokens (prompt and target) per second."""
        return self.tokens / self.train_seconds if self.train_seconds else math.nan


def require_trl() -> Any:
    """Import torch, transformers and TRL (with an install hint); return torch."""
    try:
        import torch
        import transformers  # noqa: F401 - checked here so the hint covers all three
        import trl  # noqa: F401
    except ImportError as exc:
        raise ImportError(_HINT) from exc
    return torch


def chat(item: BenchItem, view: str = "") -> list[dict[str, Any]]:
    """The item's chat as the model sees it: through ``view`` when one is named."""
    return VIEWS[view](item.messages()) if view else item.messages()


def encode(tokenizer: Any, item: BenchItem, reasoning: bool, max_length: int, view: str = ""
           ) -> tuple[list[int], list[int]]:
    """Token ids of the prompt (chat with generation prompt) and of the target (with EOS).

    A too-long pair keeps the target (cut to leave 64 prompt tokens) and the prompt's end.
    """
    prompt = tokenizer.apply_chat_template(chat(item, view), add_generation_prompt=True,
                                           tokenize=False)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    target_ids = tokenizer(target_text(item, reasoning) + tokenizer.eos_token,
                           add_special_tokens=False)["input_ids"]
    target_ids = target_ids[: max(1, max_length - 64)]
    room = max_length - len(target_ids)
    return prompt_ids[-room:] if room > 0 else [], target_ids


def _labelled(tokenizer: Any, item: BenchItem, reasoning: bool, max_length: int
              ) -> tuple[list[int], list[int]]:
    """Ids of the whole chat ending in the target, labelled on every observation.

    The rendered chat is cut into pieces at each assistant turn's observation (found in order,
    so any template that renders contents verbatim works) and each piece is tokenised on its
    own. A history turn's ``**Environment Observation:**`` marker is not learned, so the start
    of an answer is learned only from targets (the tagged form the model must write); the
    end-of-turn token after each observation is learned.
    """
    turns = [*item.messages(), {"role": "assistant", "content": target_text(item, reasoning)}]
    text = tokenizer.apply_chat_template(turns, tokenize=False)
    ids: list[int] = []
    labels: list[int] = []
    cursor = 0
    for message in (m for m in turns if m["role"] == "assistant"):
        learned = message["content"].strip()
        if message is not turns[-1]:
            learned = clean_response_marker(learned).strip()
        start = text.index(learned, cursor)
        end = start + len(learned)
        if text.startswith(tokenizer.eos_token, end):
            end += len(tokenizer.eos_token)
        for piece, learn in ((text[cursor:start], False), (text[start:end], True)):
            tokens = tokenizer(piece, add_special_tokens=False)["input_ids"]
            ids += tokens
            labels += tokens if learn else [-100] * len(tokens)
        cursor = end
    tail = tokenizer(text[cursor:], add_special_tokens=False)["input_ids"]
    ids, labels = ids + tail, labels + [-100] * len(tail)
    return ids[-max_length:], labels[-max_length:]


def sft_example(tokenizer: Any, item: BenchItem, args: SFTArgs) -> tuple[list[int], list[int]]:
    """One training sequence and its labels (-100 where no loss is taken)."""
    if args.all_turns:
        if args.view:
            raise ValueError("all_turns learns the whole chat; it cannot be used with a view")
        return _labelled(tokenizer, item, args.reasoning, args.max_length)
    prompt, target = encode(tokenizer, item, args.reasoning, args.max_length, args.view)
    return prompt + target, [-100] * len(prompt) + target


def final_turns(items: Sequence[BenchItem]) -> list[BenchItem]:
    """The items that end their trajectory: every other item's chat is a prefix of one."""
    last: dict[tuple[Any, ...], BenchItem] = {}
    for item in items:
        key = (item.task, item.system_str, tuple(item.prompt), tuple(item.response))
        if key not in last or item.turn_idx > last[key].turn_idx:
            last[key] = item
    return list(last.values())


def load_model(path: str, device: str = "cpu") -> tuple[Any, Any]:
    """A local causal LM and its tokenizer."""
    require_trl()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return AutoModelForCausalLM.from_pretrained(path).to(device), tokenizer


def prepare_model(args: SFTArgs, items: list[BenchItem]) -> tuple[Any, Any]:
    """The model and tokenizer to train: ``args.model`` loaded, or both built from scratch
    (the tokenizer trained on ``items``)."""
    if args.model:
        return load_model(resolve_model(args.model), args.device)
    texts = [m["content"] for item in items for m in item.messages()]
    texts += [target_text(item, args.reasoning) for item in items]
    tokenizer = build_tokenizer(texts, args.spec())
    return build_model(tokenizer, args.spec(), args.seed).to(args.device), tokenizer


def sft_dataset(tokenizer: Any, items: Sequence[BenchItem], args: SFTArgs) -> Any:
    """The tokenised prompt-completion rows (``input_ids``, ``completion_mask``) of ``items``
    (with ``all_turns``, of their trajectories' last items)."""
    from datasets import Dataset

    chosen = final_turns(items) if args.all_turns else items
    rows = []
    for item in chosen:
        if args.drop_overlong and not args.all_turns:
            prompt, target = encode(tokenizer, item, args.reasoning, 10**9, args.view)
            if len(prompt) + len(target) > args.max_length:
                continue
        ids, labels = sft_example(tokenizer, item, args)
        rows.append({"input_ids": ids, "completion_mask": [int(x != -100) for x in labels]})
    return Dataset.from_list(rows)


_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
"""The linear layers of a Llama/Qwen2 block (PEFT's ``all-linear`` cannot be layer-limited)."""


def lora_config(args: SFTArgs, layers: int) -> Any:
    """PEFT's ``LoraConfig`` on the linear layers of the top ``args.lora_layers`` of a model's
    ``layers`` blocks (all with 0), or None when ``args.lora_rank`` is 0."""
    if not args.lora_rank:
        return None
    if not args.model:
        raise ValueError("a LoRA adapter needs a pretrained model (--model)")
    from peft import LoraConfig

    top = min(args.lora_layers or layers, layers)
    return LoraConfig(r=args.lora_rank, lora_alpha=args.lora_alpha, lora_dropout=0.0,
                      target_modules=_LINEAR, task_type="CAUSAL_LM",
                      layers_to_transform=list(range(layers - top, layers)))


def sft_config(args: SFTArgs) -> Any:
    """TRL's ``SFTConfig`` for ``args``: target-only loss, TensorBoard, checkpoints."""
    from trl import SFTConfig

    on_cpu = args.device == "cpu"
    return SFTConfig(
        output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
        learning_rate=args.lr, weight_decay=args.weight_decay, max_grad_norm=args.grad_clip,
        max_length=args.max_length, completion_only_loss=True,
        train_sampling_strategy="group_by_length", seed=args.seed, data_seed=args.seed,
        logging_steps=args.log_every, report_to=["tensorboard"],
        save_strategy="steps" if args.save_every else "no", save_steps=args.save_every,
        include_num_input_tokens_seen="non_padding", use_cpu=on_cpu, bf16=not on_cpu,
        activation_checkpointing=False)


def train_sft(args: SFTArgs, log: Callable[[int, float], None] | None = None) -> SFTResult:
    """Train, save the model and tokenizer to ``args.out``, and return what happened.

    Args:
        args: The run's settings.
        log: Also called as ``log(step, loss)`` whenever the loss is logged.
    """
    torch = require_trl()
    from trainers.world_model.budget import BudgetedSFTTrainer, LossHook, TrainingBudget

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    items = load_items(args.train)
    model, tokenizer = prepare_model(args, items)
    trainer = BudgetedSFTTrainer(
        model=model, args=sft_config(args), train_dataset=sft_dataset(tokenizer, items, args),
        processing_class=tokenizer, callbacks=[LossHook(log)] if log else None,
        peft_config=lora_config(args, model.config.num_hidden_layers),
        budget=TrainingBudget(args.steps, args.max_minutes, args.warmup))
    metrics = trainer.train().metrics
    trainer.save_model(args.out)
    result = SFTResult(
        out=args.out, steps=trainer.state.global_step,
        losses=[(e["step"], e["loss"]) for e in trainer.state.log_history if "loss" in e],
        train_seconds=metrics["train_runtime"], tokens=int(trainer.state.num_input_tokens_seen),
        parameters=sum(p.numel() for p in model.parameters()))
    Path(args.out, "training_args.json").write_text(json.dumps(
        {"sft": asdict(args), "steps_done": result.steps, "losses": result.losses,
         "train_seconds": round(result.train_seconds, 2), "tokens": result.tokens,
         "parameters": result.parameters}, indent=2), encoding="utf-8")
    return result
