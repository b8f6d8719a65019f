"""Supervised next-observation training of a world model, on TRL's ``SFTTrainer``.

A run has two settings objects, as TRL's own scripts do: :class:`SFTArgs` (what is ours: the
data, the model, the view, LoRA, a time budget) and TRL's ``SFTConfig`` (the optimiser, steps,
batch size, sequence length, logging, checkpoints, precision), built by :func:`sft_config` from
:data:`SFT_DEFAULTS`. Each bench item becomes one tokenised prompt-completion row: ``input_ids``
and a ``completion_mask`` over the target tokens; ``completion_only_loss`` makes TRL turn the
mask into labels, so the loss is next-token cross-entropy on the target only. The rows are
tokenised here rather than by TRL so that a too-long pair keeps its target and the prompt's
*end* (TRL truncates from the end, which would cut the target off), and so that ``all_turns``
can mark every observation of a trajectory. The model is a local pretrained causal LM
(``model``) or built from scratch (:mod:`trainers.world_model.scratch`) with a tokenizer
trained on the training items. Deterministic for a given seed on a given machine.
``--resume_from_checkpoint`` (a ``checkpoint-N`` folder, or ``last``: the newest whole one
in ``output_dir``) goes on from a checkpoint, making only the remaining steps, with the settings
it was trained with (:func:`~trainers.world_model.budget.keep_settings`).

Example (CLI: our flags, then any of ``SFTConfig``'s)::

    agentworld wm sft --train data/train.jsonl --max-minutes 9 --output_dir runs/wm \
        --max_steps 400 --learning_rate 1e-3
"""

from __future__ import annotations

import itertools
import json
import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentworld_envs.bench.items import BenchItem, load_items
from agentworld_envs.models.compact_view import VIEWS
from agentworld_envs.models.pretrained import BASES, resolve_model
from agentworld_envs.world.parsing import clean_response_marker
from trainers.common.args import ConfigError, check_threads
from trainers.common.flags import holds_model
from trainers.world_model.examples import target_text
from trainers.world_model.scratch import MARKUP_TOKENS, ScratchSpec, build_model, build_tokenizer

__all__ = ["SFT_DEFAULTS", "SFTArgs", "SFTResult", "accelerated", "chat", "check_at_least",
           "check_model", "check_view", "device_defaults", "encode",
           "epoch_seeded", "final_turns", "is_adapter", "load_causal_lm", "load_model",
           "load_tokenizer", "lora_config", "prepare_model", "prepare_tokenizer", "require_trl",
           "resume_checkpoint", "sft_config", "sft_dataset", "sft_example", "sft_settings",
           "tokenizer_folder", "train_sft", "training_items"]

_HINT = 'world-model training needs TRL, torch and transformers: pip install "agentworld[train]"'

SFT_DEFAULTS: dict[str, Any] = {
    "output_dir": "runs/wm", "max_steps": 300, "per_device_train_batch_size": 8,
    "learning_rate": 2e-3, "warmup_steps": 20, "weight_decay": 0.01, "max_grad_norm": 1.0,
    "lr_scheduler_type": "cosine_with_min_lr", "lr_scheduler_kwargs": {"min_lr_rate": 0.1},
    "max_length": 2048, "completion_only_loss": True,
    "train_sampling_strategy": "group_by_length", "seed": 0, "logging_steps": 10,
    "report_to": ["tensorboard"], "save_strategy": "no",
    "include_num_input_tokens_seen": "non_padding", "activation_checkpointing": False}
"""Where our ``SFTConfig`` starts, in place of TRL's defaults: a small model's learning rate
with warm-up and a cosine decay to a tenth, a step budget, TensorBoard logs in
``output_dir/runs``, no checkpoints unless asked (``--save_strategy steps --save_steps N``),
and bf16 only on an accelerator (:func:`accelerated`)."""


@dataclass
class SFTArgs:
    """Our settings of one SFT run (TRL's ``SFTConfig`` holds the rest).

    Attributes:
        train: Training items (AgentWorldBench JSONL file or directory).
        model: A local causal LM to fine-tune (a base's name, a model folder, or a LoRA
            adapter's folder); empty builds one from scratch.
        reasoning: Put each item's reasoning (where it has one) before the observation.
        all_turns: Also learn the earlier observations of each chat (one sequence per
            trajectory, its last item, with a loss on every assistant turn); otherwise only
            each item's own target.
        drop_overlong: Leave out sequences longer than ``max_length`` instead of cutting them
            (a cut pair keeps its target and the prompt's end; with ``all_turns``, a cut
            trajectory keeps its end).
        max_minutes: Also stop after this many minutes of training (0: no limit). The learning
            rate then warms up over ``warmup_steps`` and decays along a cosine to a tenth over
            the step or time budget, whichever runs out first, in place of
            ``lr_scheduler_type``.
        threads: torch CPU threads (0: torch's default).
        vocab_size: From scratch: BPE vocabulary size.
        hidden_size: From scratch: model width.
        layers: From scratch: transformer blocks.
        heads: From scratch: attention heads.
        intermediate_size: From scratch: MLP width.
        section_start: From scratch: where the model's view of the system prompt starts.
        section_end: From scratch: where that view ends.
        lora_rank: Train a LoRA adapter of this rank on every linear layer of ``model`` (0:
            train all the weights, or the adapter ``model`` is); only the adapter is saved.
        lora_alpha: LoRA scaling numerator.
        lora_layers: Put the adapter on the top this many transformer blocks only (0: all);
            the backward pass then stops there, so a step costs less.
        view: Show the model each chat through this view (``compact``: see
            :mod:`agentworld_envs.models.compact_view`); empty shows it whole.
    """

    train: str
    model: str = ""
    reasoning: bool = False
    all_turns: bool = False
    drop_overlong: bool = False
    max_minutes: float = 0.0
    threads: int = 0
    vocab_size: int = ScratchSpec.vocab_size
    hidden_size: int = ScratchSpec.hidden_size
    layers: int = ScratchSpec.layers
    heads: int = ScratchSpec.heads
    intermediate_size: int = ScratchSpec.intermediate_size
    section_start: str = ScratchSpec.section_start
    section_end: str = ScratchSpec.section_end
    lora_rank: int = 0
    lora_alpha: int = 32
    lora_layers: int = 0
    view: str = ""

    def __post_init__(self) -> None:
        check_at_least(self, 0, "max_minutes", "threads", "lora_rank", "lora_layers")
        check_threads("threads", self.threads)
        check_view(self.view)
        if self.all_turns and self.view:
            raise ConfigError("all_turns", "learns the whole chat, so it cannot be used with a "
                                           "view")
        if self.lora_rank and not self.model:
            raise ConfigError("lora_rank", "a LoRA adapter needs a pretrained model (--model)")
        if not self.model:
            self._check_scratch_sizes()

    def _check_scratch_sizes(self) -> None:
        """Refuse from-scratch sizes that build no working model (:func:`~.scratch.build_model`:
        a Qwen2 with half as many key/value heads, rotary embeddings on each head)."""
        check_at_least(self, 1, "hidden_size", "layers", "heads", "intermediate_size")
        check_at_least(self, len(MARKUP_TOKENS) + 1, "vocab_size")
        width = self.hidden_size // self.heads
        if width * self.heads != self.hidden_size or width % 2:
            raise ConfigError("hidden_size", f"{self.hidden_size} does not split into "
                                             f"{self.heads} heads of an even width")
        if self.heads % max(1, self.heads // 2):
            raise ConfigError("heads", f"{self.heads} heads cannot share {self.heads // 2} "
                                       "key/value heads (half of them): use 1, 3 or an even "
                                       "number")

    def spec(self, max_length: int) -> ScratchSpec:
        """The from-scratch model's sizes, with room for ``max_length`` positions."""
        return ScratchSpec(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                           layers=self.layers, heads=self.heads,
                           intermediate_size=self.intermediate_size,
                           max_positions=max(max_length, ScratchSpec.max_positions),
                           section_start=self.section_start, section_end=self.section_end)


@dataclass
class SFTResult:
    """What a run did: the loss per logged step, counts and throughput (``steps`` and
    ``losses`` count from the start of training, those before a checkpoint resumed from
    included; ``train_seconds`` and ``tokens`` are this run's)."""

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


def check_at_least(settings: Any, low: float, *names: str) -> None:
    """Raise :class:`ConfigError` for the first of the fields ``names`` below ``low``."""
    for name in names:
        value = getattr(settings, name)
        if value is None or not value >= low:
            raise ConfigError(name, f"must be at least {low}, not {value}")


def check_view(view: str) -> None:
    """Raise :class:`ConfigError` for a ``view`` that is not one of :data:`VIEWS` (empty: the
    chat whole)."""
    if view and view not in VIEWS:
        raise ConfigError("view", f"unknown view {view!r} (known: {', '.join(VIEWS)}; empty "
                                  "shows the chat whole)")


def check_model(model: str) -> None:
    """Raise :class:`ConfigError` for a ``model`` that cannot load: a path that is no model
    folder (no ``config.json``, nor a LoRA adapter's ``adapter_config.json``), or a name that
    is neither a base's nor one the hub could answer
    (:func:`~agentworld_envs.backends.hf_settings.unreachable`)."""
    from agentworld_envs.backends.hf_settings import unreachable

    if model in BASES or holds_model(model):
        return
    if Path(model).expanduser().exists() or unreachable("model", model):
        raise ConfigError("model", f"{model} is not a local model folder (it has no "
                                   f"config.json) nor a base's name ({', '.join(BASES)})")


def training_items(path: str) -> list[BenchItem]:
    """The items of ``path`` (a file, or a folder of ``*.jsonl`` files) to train on.

    Raises:
        ConfigError: for a folder holding a validation split (``val*.jsonl``, as ``wm export``
            writes beside ``train.jsonl``), or no items at all.
    """
    held_out = sorted(Path(path).glob("val*.jsonl")) if Path(path).is_dir() else []
    if held_out:
        raise ConfigError("train", f"{path} holds {held_out[0].name}, a validation split, and "
                                   "a folder trains on all its files: pass the training file "
                                   f"itself (--train {Path(path) / 'train.jsonl'})")
    items = load_items(path)
    if not items:
        raise ConfigError("train", f"{path} holds no items to train on")
    return items


def _whole(checkpoint: Path) -> bool:
    """Whether ``checkpoint`` was saved whole: its ``trainer_state.json`` (which Transformers
    writes last, and which keeps the run's settings and fault tally) reads as JSON."""
    try:
        state = json.loads(Path(checkpoint, "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(state, dict)


def _last_checkpoint(output: Path) -> str:
    """The newest whole ``checkpoint-N`` folder in ``output`` (:func:`_whole`); a newer one a
    kill cut short while saving is passed over, with a warning naming it.

    Raises:
        ConfigError: when ``output`` holds no whole checkpoint.
    """
    numbered = {int(name[1]): path for path in (output.iterdir() if output.is_dir() else ())
                if (name := re.fullmatch(r"checkpoint-(\d+)", path.name))}
    newest_first = [numbered[step] for step in sorted(numbered, reverse=True)]
    cut = list(itertools.takewhile(lambda path: not _whole(path), newest_first))
    named = ", ".join(path.name for path in cut)
    if not newest_first:
        raise ConfigError("resume_from_checkpoint",
                          f"last: {output} holds no checkpoint-N folder to resume from")
    if len(cut) == len(newest_first):
        raise ConfigError("resume_from_checkpoint",
                          f"last: {output} holds no whole checkpoint to resume from ({named}: "
                          "cut short while saving, no readable trainer_state.json)")
    whole = newest_first[len(cut)]
    if cut:
        warnings.warn(f"resume_from_checkpoint last: passing over {named} in {output}, cut "
                      f"short while saving (no readable trainer_state.json): resuming "
                      f"{whole.name}", stacklevel=4)
    return str(whole)


def resume_checkpoint(config: Any) -> str | None:
    """The checkpoint ``config.resume_from_checkpoint`` names: a ``checkpoint-N`` folder, or
    ``last``, the newest whole one in ``config.output_dir`` (:func:`_last_checkpoint`); None
    when the run starts afresh.

    Raises:
        ConfigError: when there is no such checkpoint.
    """
    value = config.resume_from_checkpoint
    if value == "last":
        value = _last_checkpoint(Path(config.output_dir))
    if value and not Path(value, "trainer_state.json").is_file():
        raise ConfigError("resume_from_checkpoint",
                          f"{value} is not a checkpoint folder (it has no trainer_state.json)")
    return value or None


class _EpochSeededSampler:
    """A sampler that draws its order from ``sampler.generator``, seeded with ``seed + epoch``
    at the start of each epoch (the trainer calls :meth:`set_epoch` before each)."""

    def __init__(self, sampler: Any, seed: int, generator: Any) -> None:
        self.sampler, self.seed = sampler, seed
        sampler.generator = generator
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        """Seed the order of ``epoch``."""
        self.sampler.generator.manual_seed(self.seed + epoch)

    def __iter__(self) -> Any:
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


def epoch_seeded(trainer_cls: type) -> type:
    """``trainer_cls`` drawing each epoch's order of the training rows from the data seed and
    the epoch, as Accelerate draws a plain shuffle's.

    Transformers' length-grouped sampler (our SFT default) draws it from the global RNG, and
    TRL's GRPO sampler from one generator seeded once, so an epoch's order depended on the
    epochs the process had run before it: a run resumed from a checkpoint in a later epoch drew
    another order and skipped other rows than those its checkpoint had trained (some trained
    twice in that epoch, others not at all)."""
    torch = require_trl()

    class EpochSeeded(trainer_cls):  # type: ignore[valid-type, misc]
        def _get_train_sampler(self, *args: Any, **kwargs: Any) -> Any:
            sampler = super()._get_train_sampler(*args, **kwargs)
            if isinstance(sampler, torch.utils.data.RandomSampler) or \
                    not hasattr(sampler, "generator"):
                return sampler  # Accelerate seeds a plain shuffle by epoch itself
            seed = self.args.seed if self.args.data_seed is None else self.args.data_seed
            return _EpochSeededSampler(sampler, seed, torch.Generator())

    EpochSeeded.__name__ = EpochSeeded.__qualname__ = trainer_cls.__name__
    return EpochSeeded


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
    each after the chat rendered up to its turn, so that the same text in the system prompt or
    a user turn is never taken for it; any template that renders contents verbatim works) and
    each piece is tokenised on its own. A history turn's ``**Environment Observation:**``
    marker is not learned, so the start of an answer is learned only from targets (the tagged
    form the model must write); the end-of-turn token after each observation is learned.
    """
    turns = [*item.messages(), {"role": "assistant", "content": target_text(item, reasoning)}]
    text = tokenizer.apply_chat_template(turns, tokenize=False)
    ids: list[int] = []
    labels: list[int] = []
    cursor = 0
    for index, message in enumerate(turns):
        if message["role"] != "assistant":
            continue
        learned = message["content"].strip()
        if message is not turns[-1]:
            learned = clean_response_marker(learned).strip()
        before = tokenizer.apply_chat_template(turns[:index], add_generation_prompt=True,
                                               tokenize=False)
        start = text.index(learned, max(cursor, len(before) if text.startswith(before) else 0))
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


def sft_example(tokenizer: Any, item: BenchItem, args: SFTArgs, max_length: int
                ) -> tuple[list[int], list[int]]:
    """One training sequence of at most ``max_length`` tokens and its labels (-100 where no
    loss is taken)."""
    if args.all_turns:
        return _labelled(tokenizer, item, args.reasoning, max_length)
    prompt, target = encode(tokenizer, item, args.reasoning, max_length, args.view)
    return prompt + target, [-100] * len(prompt) + target


def final_turns(items: Sequence[BenchItem]) -> list[BenchItem]:
    """The items that end their trajectory: every other item's chat is a prefix of one."""
    last: dict[tuple[Any, ...], BenchItem] = {}
    for item in items:
        key = (item.task, item.system_str, tuple(item.prompt), tuple(item.response))
        if key not in last or item.turn_idx > last[key].turn_idx:
            last[key] = item
    return list(last.values())


def load_tokenizer(path: str) -> Any:
    """A local model's tokenizer, padding with EOS where it has no pad token.

    Raises:
        ConfigError: the tokenizer has no chat template (the world model reads chats).
    """
    require_trl()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if not tokenizer.chat_template:
        raise ConfigError("model", f"{path} has no chat template (its tokenizer's "
                                   "chat_template is not set), and the world model reads chats")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def is_adapter(model: str) -> bool:
    """Whether ``model`` is a LoRA adapter's folder (what ``--lora-rank`` saves)."""
    return Path(model, "adapter_config.json").is_file()


def _adapter_base(adapter: str) -> str:
    """The folder of a LoRA adapter's base model (a base's name, as a shipped adapter records
    it, resolved)."""
    from peft import PeftConfig

    return resolve_model(PeftConfig.from_pretrained(adapter).base_model_name_or_path)


def load_causal_lm(model: str) -> Any:
    """The causal LM to train (on the CPU: the trainer places it): a base's name, a model
    folder, or a LoRA adapter's folder, loaded on its base with the adapter trainable
    (transformers would load it frozen, leaving no weight to train)."""
    from transformers import AutoModelForCausalLM

    if not is_adapter(model):
        return AutoModelForCausalLM.from_pretrained(resolve_model(model))
    from peft import PeftModel

    base = AutoModelForCausalLM.from_pretrained(_adapter_base(model))
    return PeftModel.from_pretrained(base, model, is_trainable=True)


def tokenizer_folder(model: str) -> str:
    """Where ``model``'s tokenizer is: its folder, or its base's for an adapter saved without
    one (as the shipped adapters are)."""
    if is_adapter(model) and not Path(model, "tokenizer_config.json").is_file():
        return _adapter_base(model)
    return resolve_model(model)


def load_model(model: str) -> tuple[Any, Any]:
    """:func:`load_causal_lm` and the model's tokenizer."""
    tokenizer = load_tokenizer(tokenizer_folder(model))
    return load_causal_lm(model), tokenizer


def prepare_tokenizer(args: SFTArgs, items: list[BenchItem], config: Any) -> Any:
    """The tokenizer to train with: ``args.model``'s, or one trained on ``items``."""
    if args.model:
        return load_tokenizer(tokenizer_folder(args.model))
    texts = [m["content"] for item in items for m in item.messages()]
    texts += [target_text(item, args.reasoning) for item in items]
    return build_tokenizer(texts, args.spec(config.max_length))


def prepare_model(args: SFTArgs, tokenizer: Any, config: Any) -> Any:
    """The model to train: ``args.model`` loaded, or built from scratch for ``tokenizer``
    (seeded by ``config.seed``)."""
    if args.model:
        return load_causal_lm(args.model)
    return build_model(tokenizer, args.spec(config.max_length), config.seed)


def sft_dataset(tokenizer: Any, items: Sequence[BenchItem], args: SFTArgs, max_length: int
                ) -> Any:
    """The tokenised prompt-completion rows (``input_ids``, ``completion_mask``) of ``items``
    (with ``all_turns``, of their trajectories' last items), each at most ``max_length``
    tokens: longer ones cut, or with ``drop_overlong`` left out.

    Raises:
        ConfigError: when ``drop_overlong`` leaves nothing to train on, or when every target
            was cut (none would be learned whole: no closing tag, no EOS).
    """
    from datasets import Dataset

    chosen = final_turns(items) if args.all_turns else items
    rows = []
    for item in chosen:
        if args.drop_overlong and len(sft_example(tokenizer, item, args, 10**9)[0]) > max_length:
            continue
        ids, labels = sft_example(tokenizer, item, args, max_length)
        rows.append({"input_ids": ids, "completion_mask": [int(x != -100) for x in labels]})
    if not rows:
        raise ConfigError("drop_overlong", f"all {len(chosen)} sequences are longer than "
                                           f"max_length {max_length}: nothing is left to train on")
    if not args.all_turns and all(row["input_ids"][-1] != tokenizer.eos_token_id for row in rows):
        raise ConfigError("max_length", f"every one of the {len(rows)} targets is cut to the "
                                        f"{max(1, max_length - 64)} tokens max_length "
                                        f"{max_length} leaves it (64 stay for the prompt), so "
                                        "none would be learned whole: raise max_length")
    return Dataset.from_list(rows)


_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
"""The linear layers of a Llama/Qwen2 block (PEFT's ``all-linear`` cannot be layer-limited)."""


def lora_config(args: SFTArgs, layers: int) -> Any:
    """PEFT's ``LoraConfig`` on the linear layers of the top ``args.lora_layers`` of a model's
    ``layers`` blocks (all with 0), or None when ``args.lora_rank`` is 0."""
    if not args.lora_rank:
        return None
    from peft import LoraConfig

    top = min(args.lora_layers or layers, layers)
    return LoraConfig(r=args.lora_rank, lora_alpha=args.lora_alpha, lora_dropout=0.0,
                      target_modules=_LINEAR, task_type="CAUSAL_LM",
                      layers_to_transform=list(range(layers - top, layers)))


def accelerated() -> bool:
    """Whether torch sees a CUDA device: ``bf16`` defaults to this (TRL's default, bf16
    everywhere, refuses to start on a CPU)."""
    return bool(require_trl().cuda.is_available())


def device_defaults() -> dict[str, bool]:
    """The settings that follow :func:`accelerated`: ``bf16``, and ``dataloader_pin_memory``
    (pinned memory serves only an accelerator; on a CPU torch warns at every data loader)."""
    cuda = accelerated()
    return {"bf16": cuda, "dataloader_pin_memory": cuda}


def sft_settings() -> tuple[type, dict[str, Any]]:
    """TRL's ``SFTConfig`` and where ours starts: :data:`SFT_DEFAULTS`, with
    :func:`device_defaults` (loads TRL, with the install hint)."""
    defaults = {**SFT_DEFAULTS, **device_defaults()}
    from trl import SFTConfig

    return SFTConfig, defaults


def sft_config(**overrides: Any) -> Any:
    """TRL's ``SFTConfig`` from :func:`sft_settings`, with ``overrides`` (any of its fields)."""
    config_cls, defaults = sft_settings()
    return config_cls(**{**defaults, **overrides})


def train_sft(args: SFTArgs, config: Any = None,
              log: Callable[[int, float], None] | None = None) -> SFTResult:
    """Train, save the model and tokenizer to ``config.output_dir``, and return what happened.

    Args:
        args: Our settings of the run.
        config: TRL's ``SFTConfig`` (default: :func:`sft_config`).
        log: Also called as ``log(step, loss)`` whenever the loss is logged.
    """
    torch = require_trl()
    from trl import SFTTrainer

    from trainers.world_model.budget import (
        BudgetedSFTTrainer,
        LossHook,
        TrainingBudget,
        keep_settings,
        keeping_callbacks,
        run_settings,
    )

    config = config if config is not None else sft_config()
    checkpoint = resume_checkpoint(config)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(config.seed)
    check_at_least(config, 1, "max_length")
    if args.model:
        check_model(args.model)
        if args.lora_rank and is_adapter(args.model):
            raise ConfigError("lora_rank", f"{args.model} is a LoRA adapter: leave --lora-rank "
                                           "out to train that adapter further")
    items = training_items(args.train)
    kept = keep_settings(checkpoint, run_settings(config, **asdict(args)))
    tokenizer = prepare_tokenizer(args, items, config)
    dataset = sft_dataset(tokenizer, items, args, config.max_length)
    model = prepare_model(args, tokenizer, config)
    parts = {"model": model, "args": config, "processing_class": tokenizer,
             "train_dataset": dataset, "callbacks": [kept, *([LossHook(log)] if log else [])],
             "peft_config": lora_config(args, model.config.num_hidden_layers)}
    trainer_cls = epoch_seeded(keeping_callbacks(BudgetedSFTTrainer if args.max_minutes
                                                 else SFTTrainer))
    trainer = trainer_cls(**parts, budget=TrainingBudget(
        config.max_steps, args.max_minutes, int(config.warmup_steps))) if args.max_minutes \
        else trainer_cls(**parts)
    before = json.loads(Path(checkpoint, "trainer_state.json").read_text(encoding="utf-8")
                        ).get("num_input_tokens_seen", 0) if checkpoint else 0
    metrics = trainer.train(resume_from_checkpoint=checkpoint).metrics
    trainer.save_model(config.output_dir)
    result = SFTResult(
        out=config.output_dir, steps=trainer.state.global_step,
        losses=[(e["step"], e["loss"]) for e in trainer.state.log_history if "loss" in e],
        train_seconds=metrics["train_runtime"],
        tokens=int(trainer.state.num_input_tokens_seen) - before,
        parameters=sum(p.numel() for p in model.parameters()))
    Path(config.output_dir, "training_args.json").write_text(json.dumps(
        {"sft": asdict(args), "trl": json.loads(config.to_json_string()),
         "resumed_from": checkpoint, "steps_done": result.steps, "losses": result.losses,
         "train_seconds": round(result.train_seconds, 2), "tokens": result.tokens,
         "parameters": result.parameters}, indent=2), encoding="utf-8")
    return result
