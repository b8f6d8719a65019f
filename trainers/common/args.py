"""Trainer settings: the shared :class:`TeamArgs` and its validation.

Each trainer declares ``Args(TeamArgs)`` with a docstring under every field (as CleanRL does);
:func:`trainers.common.flags.parse_args` turns those docstrings into ``--help``. Invalid
settings raise :class:`ConfigError`, whose message starts with the offending field's name.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from agentworld_envs.errors import FieldedError

__all__ = ["ConfigError", "TeamArgs", "TrustRegionArgs", "LM_FIELDS", "SYMBOLIC_FIELDS",
           "check_threads", "most_threads"]

A = TypeVar("A", bound="TeamArgs")


class ConfigError(FieldedError, ValueError):
    """An invalid trainer setting; ``field`` names it."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


LM_FIELDS = ("model", "models", "lora_rank", "temperature", "top_p", "top_k", "stop",
             "max_new_tokens", "answer_prefix", "context_tokens", "score_batch_size", "dtype",
             "generation", "gradient_checkpointing", "device", "replacement_model")
"""Settings of language-model policies (text teams; ``replacement_model`` is TeamTR's): a
symbolic team refuses them."""
SYMBOLIC_FIELDS = ("hidden_size", "replacement_hidden_size")
"""Settings of symbolic policies (``replacement_hidden_size`` is TeamTR's): a text team refuses
them."""


MAX_THREADS_PER_CPU = 8
"""The most torch threads a run may ask for per CPU: more only slows it (a thread per CPU is
fastest), and tens of thousands crash torch without a message."""


def most_threads() -> int:
    """The most torch threads a run may ask for on this machine (:data:`MAX_THREADS_PER_CPU`
    per CPU)."""
    return MAX_THREADS_PER_CPU * (os.cpu_count() or 1)


def check_threads(name: str, threads: int) -> None:
    """Raise :class:`ConfigError` for more torch threads than :func:`most_threads` (tens of
    thousands crash torch without a message)."""
    if threads > most_threads():
        raise ConfigError(name, f"must be at most {most_threads()} ({MAX_THREADS_PER_CPU} per "
                                f"CPU of this machine), got {threads}")


@dataclass
class TeamArgs:
    """Settings shared by every team trainer."""

    exp_name: str = ""
    """the name of this experiment (the trainer's name when empty)"""
    seed: int = 1
    """seed of the team's weights, the rollouts and the problems (0 to 2**32 - 1)"""
    env_id: str = "team_envs/relay-v0"
    """a team env registered in PettingZoo (see `agentworld team envs`)"""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """keyword arguments of the env, as JSON on the command line, e.g. '{"vocab_size": 4}'"""
    n_agents: int | None = None
    """team size passed to the env (the env's default when unset)"""
    hidden_size: int = 64
    """symbolic teams: hidden units of each agent's MLP"""
    model: str = ""
    """text teams: a local causal-LM directory (or hub name, or smollm2) for every agent"""
    models: list[str] = field(default_factory=list)
    """text teams: one model per agent, comma-separated (a heterogeneous team; replaces model)"""
    lora_rank: int = 0
    """text teams: train LoRA adapters of this rank (0 trains all weights)"""
    temperature: float = 1.0
    """text teams: sampling temperature"""
    top_p: float = 1.0
    """text teams: nucleus sampling mass (1 is off); log-probs stay those of the tempered full
    distribution"""
    top_k: int = 0
    """text teams: sample among the k most likely tokens (0 is off)"""
    stop: list[str] = field(default_factory=list)
    """text teams: stop strings, comma-separated; a message ends at the first one"""
    max_new_tokens: int = 48
    """text teams: longest message in tokens"""
    answer_prefix: str = ""
    """text teams: the answerer (the last agent) starts every message with this text, written
    after its prompt's assistant header (a prefill, e.g. 'ANSWER:' so that a small model
    answers in the form the env reads); its tokens are prompt, not message"""
    context_tokens: int = 0
    """text teams: prompt plus message in tokens (0: the model's context length); longer prompts
    are cut in the middle, keeping their start and their end"""
    score_batch_size: int = 16
    """text teams: messages per scoring forward pass (old log-probs, updates with gradient
    accumulation, KL checks, monitors, Stage-0); 0 scores all at once"""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """text teams: weight dtype of the models"""
    generation: Literal["transformers", "vllm"] = "transformers"
    """text teams: transformers generates in-process; vllm (a CUDA machine, pip install vllm)
    serves each base once with the agents' LoRA adapters, re-saved after every update"""
    gradient_checkpointing: bool = False
    """text teams: recompute activations in the backward pass (less memory, more time)"""
    total_episodes: int = 40_000
    """the rollout budget: training episodes sampled over the whole run, by every rollout"""
    prompts_per_rollout: int = 64
    """distinct problems in each rollout batch"""
    group_size: int = 4
    """episodes per problem; advantages are normalised within each group"""
    learning_rate: float = 3e-3
    """AdamW learning rate"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    update_epochs: int = 4
    """passes over a batch in one agent update"""
    minibatches: int = 1
    """minibatches per pass (text teams in bfloat16: more than 1 warns, see validate)"""
    clip_coef: float = 0.2
    """PPO clip range on message ratios"""
    adv_clip: float = 5.0
    """advantages are clipped to plus or minus this"""
    adv_std_ddof: int = 1
    """the group std's delta degrees of freedom: 1, the sample std (the reference's verl code,
    TRL); 0, the population std (the committed TeamTR figures were measured with it)"""
    max_grad_norm: float = 1.0
    """gradient-norm clip per optimiser step"""
    kl_coef: float = 1e-3
    """initial KL coefficient beta of each agent (trainers with a KL term)"""
    delta: float = 0.05
    """per-agent trust-region budget on the per-message KL quantile (monitored by every trainer)"""
    delta_schedule: Literal["inverse_square", "constant"] = "inverse_square"
    """inverse_square: delta_i = delta * (delta_ref_agents / n)^2; constant: delta_i = delta"""
    delta_ref_agents: int = 3
    """team size at which delta_i equals delta"""
    kl_quantile: float = 0.99
    """quantile of the per-message KL compared with delta_i"""
    order: Literal["random", "static"] = "random"
    """agent update order in each stage: a fresh permutation or agent_0, agent_1, ..."""
    eval_episodes: int = 1024
    """episodes per evaluation (not counted in the budget)"""
    eval_every: int = 5
    """evaluate every this many stages (and at the end)"""
    pass_k: int = 4
    """tasks with held-out items (team_envs/reasoning-v0): samples per item for pass@k, at
    the start and the end, beside the greedy team's reward"""
    log_dir: str = "runs"
    """TensorBoard root; empty disables TensorBoard"""
    checkpoint_dir: str = ""
    """save per-agent checkpoints here after every stage; empty disables checkpoints"""
    resume: bool = False
    """continue from the checkpoint in checkpoint_dir"""
    device: str = "cpu"
    """torch device of LM policies"""
    torch_threads: int | None = None
    """torch CPU threads; unset: 1 for symbolic teams (fastest for their small MLPs), torch's
    default (every core) for language-model teams; 0 keeps torch's default"""

    def __post_init__(self) -> None:
        self.validate()

    def changed(self, names: tuple[str, ...]) -> list[str]:
        """Those of the fields ``names`` set to other than their defaults."""
        changed = []
        for item in dataclasses.fields(self):
            default = item.default if item.default_factory is dataclasses.MISSING else (
                item.default_factory())
            if item.name in names and getattr(self, item.name) != default:
                changed.append(item.name)
        return changed

    @property
    def rollout_episodes(self) -> int:
        """Episodes in one rollout batch."""
        return self.prompts_per_rollout * self.group_size

    def validate(self) -> None:
        """Reject invalid settings with a :class:`ConfigError` naming the field."""
        _check_types(self)
        positive = ("hidden_size", "max_new_tokens", "total_episodes", "prompts_per_rollout",
                    "update_epochs", "minibatches", "delta_ref_agents", "eval_episodes",
                    "eval_every", "pass_k")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(name, f"must be at least 1, got {getattr(self, name)}")
        for name in ("learning_rate", "clip_coef", "adv_clip", "max_grad_norm", "delta",
                     "temperature"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise ConfigError(name, f"must be a positive number, got {value}")
        for name in ("weight_decay", "kl_coef", "lora_rank", "torch_threads", "top_k",
                     "context_tokens", "score_batch_size"):
            if (getattr(self, name) or 0) < 0:
                raise ConfigError(name, f"must not be negative, got {getattr(self, name)}")
        check_threads("torch_threads", self.torch_threads or 0)
        if not 0 <= self.seed < 2**32:  # numpy refuses negative seeds; derived ones overflow
            raise ConfigError("seed", f"must be from 0 to 2**32 - 1, got {self.seed}")
        if self.adv_std_ddof not in (0, 1):
            raise ConfigError("adv_std_ddof", f"must be 0 or 1, got {self.adv_std_ddof}")
        if self.group_size < 2:
            raise ConfigError("group_size", f"must be at least 2 to normalise advantages within "
                                            f"a group, got {self.group_size}")
        if self.dtype != "float32" and not self.lora_rank:
            raise ConfigError("dtype", f"{self.dtype} weights train only as LoRA adapters (peft "
                                       "keeps those in float32): set lora_rank; AdamW steps on "
                                       f"{self.dtype} weights lose most small updates")
        if self.dtype == "bfloat16" and self.minibatches > 1:
            warnings.warn(
                "minibatches > 1 in bfloat16: a message's log-probs depend on the shape of the "
                "pass that scores it, so an update's minibatches see ratios off 1 before any "
                "step (on SmolLM2-135M on a CPU, message log-ratios of up to 0.59, beyond the "
                "clip of 0.2); with minibatches=1 they are exact", stacklevel=2)
        if self.generation == "vllm" and not self.lora_rank:
            raise ConfigError("generation", "vllm serves the agents as LoRA adapters: set "
                                            "lora_rank")
        if not 0 < self.top_p <= 1:
            raise ConfigError("top_p", f"must lie in (0, 1], got {self.top_p}")
        if self.context_tokens and self.context_tokens <= self.max_new_tokens:
            raise ConfigError("context_tokens", f"{self.context_tokens} leaves no room for a "
                                                f"prompt beside {self.max_new_tokens} new tokens")
        if not 0 < self.kl_quantile <= 1:
            raise ConfigError("kl_quantile", f"must lie in (0, 1], got {self.kl_quantile}")
        if self.n_agents is not None and not 2 <= self.n_agents <= 8:
            raise ConfigError("n_agents", f"must be from 2 to 8, got {self.n_agents}")
        if self.total_episodes < self.rollout_episodes:
            raise ConfigError("total_episodes", f"{self.total_episodes} is less than one rollout "
                                                f"batch ({self.rollout_episodes} episodes)")
        if self.resume and not self.checkpoint_dir:
            raise ConfigError("resume", "needs checkpoint_dir")


@dataclass
class TrustRegionArgs(TeamArgs):
    """Settings of trainers that enforce the per-agent KL trust region with backtracking."""

    beta_growth: float = 1.5
    """beta_i is multiplied by this on every trust-region violation"""
    max_backtracks: int = 5
    """shrink a violating update at most this many times, then keep the agent unchanged"""
    backtrack: Literal["interpolate", "beta_only"] = "interpolate"
    """how a violating update shrinks: interpolate halves the step towards the old parameters at
    every failed check (a line search); beta_only restores and redoes it with the larger beta
    (the reference's recipe, whose step barely shrinks while beta is small)"""

    def validate(self) -> None:
        """Also check the trust-region fields."""
        super().validate()
        if not self.beta_growth > 1:
            raise ConfigError("beta_growth", f"must exceed 1, got {self.beta_growth}")
        if self.max_backtracks < 0:
            raise ConfigError("max_backtracks", f"must not be negative, got {self.max_backtracks}")
        if self.backtrack == "beta_only" and not self.kl_coef > 0:
            raise ConfigError("kl_coef", "backtrack beta_only grows beta from kl_coef, so it must "
                                         f"be positive, got {self.kl_coef}")


def _check_types(args: TeamArgs) -> None:
    hints = typing.get_type_hints(type(args))
    for item in dataclasses.fields(args):
        value, hint = getattr(args, item.name), hints[item.name]
        if not _matches(value, hint):
            raise ConfigError(item.name, f"expected {_type_name(hint)}, got {value!r}")


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, option) for option in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(
            value)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (dict, list):
        return isinstance(value, origin) and (origin is dict or all(
            _matches(item, typing.get_args(hint)[0]) for item in value))
    return isinstance(value, hint)


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) is Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(hint)))
    if hint is float:
        return "a finite number"
    return getattr(hint, "__name__", str(hint))
