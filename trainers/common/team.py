"""The team being trained: its agents' policies, optimisers and trust-region state.

:func:`build_team` makes the env with ``pettingzoo.make`` and picks the rollout engine and the
policies from its task: small MLPs over the batched fast path for symbolic teams, causal LMs
over the PettingZoo API for text teams.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pettingzoo
import torch
from pettingzoo.env_registry.exceptions import PettingZooRegistryError

import team_envs  # registers the team envs
from agentworld_envs.backends.hf_settings import unreachable
from agentworld_envs.cli_errors import UnknownNameError
from team_envs.core import TeamTask
from team_envs.symbolic.tasks import SymbolicTask
from trainers.common.args import LM_FIELDS, SYMBOLIC_FIELDS, ConfigError, TeamArgs
from trainers.common.batch import RolloutBatch, Samples
from trainers.common.rollouts import SymbolicRollouts, TextRollouts
from trainers.common.updates import trainable
from trainers.policies.symbolic import SymbolicAgent, build_symbolic_agents, new_network

__all__ = ["Team", "build_team", "team_task", "agent_deltas", "agent_order", "make_optimizer",
           "check_same_vocabulary", "EVAL_SEED_OFFSET"]

EVAL_SEED_OFFSET = 1_000_003
"""Evaluation episodes use seed ``args.seed + EVAL_SEED_OFFSET``: the same episodes every time."""

PolicyFactory = Callable[[int, dict[str, Any]], Any]


@dataclass
class Team:
    """The agents of a team under training, and the randomness that drives their rollouts."""

    policies: list[Any]
    """One policy per agent (the same object for every agent when shared; LoRA policies on one
    model share its base weights, each with its own adapter)."""
    optimizers: list[torch.optim.Optimizer]
    """One optimiser per agent (the same object when the policy is shared)."""
    betas: list[float]
    """KL coefficient β_i of each agent."""
    deltas: list[float]
    """Trust-region budget δ_i of each agent."""
    rollouts: SymbolicRollouts | TextRollouts
    factory: PolicyFactory
    """Builds a policy for an agent from a spec (used for replacements and resuming)."""
    learning_rate: float
    weight_decay: float
    rng: np.random.Generator
    generator: torch.Generator
    episodes: int = 0
    """Training episodes sampled so far (the rollout budget used)."""
    collections: int = 0
    """Rollout batches collected so far."""
    clock: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ("rollout_s", "scoring_s", "new_tokens"), 0.0))
    """Running totals over every rollout (training, probes, evaluation): seconds generating
    and stepping envs, seconds scoring old log-probs, tokens generated."""
    transcript: str | None = None
    """The shared context of the last training rollout's first episode (text teams)."""

    @property
    def n_agents(self) -> int:
        """The team size."""
        return len(self.policies)

    @property
    def shared(self) -> bool:
        """Whether one policy plays every agent."""
        return self.n_agents > 1 and len({weights_key(p) for p in self.policies}) == 1

    def collect(self, prompts: int, group_size: int, *, defer_scoring: bool = False
                ) -> RolloutBatch:
        """Roll out the current team; counts towards the budget. ``defer_scoring``: old
        log-probs the sampling pass did not record are scored when needed, by the agent's
        update or :meth:`score_old` (an agent whose messages are never trained on costs no
        scoring pass); not for a shared policy, which every agent's update changes."""
        batch = self._rollout(prompts, group_size, self.rng, self.generator,
                              defer_scoring=defer_scoring and not self.shared)
        self.episodes += batch.episodes
        self.collections += 1
        self.transcript = batch.transcript
        return batch

    def sample(self, prompts: int, group_size: int, seed: int, **options: Any) -> RolloutBatch:
        """A rollout drawn from ``seed``, for probes and evaluation (``options``: ``scored``, and
        the text rollouts' reset ``options`` and ``greedy``); not counted towards the budget."""
        return self._rollout(prompts, group_size, np.random.default_rng(seed),
                             torch.Generator().manual_seed(seed), **options)

    def _rollout(self, *args: Any, **kwargs: Any) -> RolloutBatch:
        """The current team's rollout, its time and tokens added to :attr:`clock`."""
        start = time.perf_counter()
        batch = self.rollouts.collect(self.policies, *args, **kwargs)
        self.clock["rollout_s"] += time.perf_counter() - start - batch.scoring_s
        self.clock["scoring_s"] += batch.scoring_s
        self.clock["new_tokens"] += batch.new_tokens
        return batch

    @torch.no_grad()
    def score_old(self, agent: int, samples: Samples) -> None:
        """Score deferred old log-probs of ``agent``'s ``samples`` with its policy, which must
        still be the one that sampled them (before the agent's update); the time counts as
        scoring."""
        if samples.old_logp is None:
            start = time.perf_counter()
            samples.old_logp = self.policies[agent].token_logprobs(samples)
            self.clock["scoring_s"] += time.perf_counter() - start

    def evaluate(self, episodes: int, seed: int) -> float:
        """Mean team reward on ``episodes`` episodes drawn from ``seed`` (not counted)."""
        return float(self.sample(episodes, 1, seed, scored=False).rewards.mean())

    def held_out_rewards(self, seed: int, samples: int = 1, greedy: bool = False
                         ) -> np.ndarray:
        """Rewards ``(items, samples)`` on the task's held-out items, in order (none: an empty
        array), not counted: ``samples`` episodes per item, or the greedy team's one."""
        items = self.rollouts.held_out_items()
        if not items:
            return np.zeros((0, samples))
        options = [{"split": "test", "index": i} for i in range(items)]
        batch = self.sample(items, samples, seed, options=options, greedy=greedy, scored=False)
        return batch.rewards.reshape(items, samples)

    def evaluate_held_out(self, pass_k: int, seed: int) -> dict[str, float]:
        """On the task's held-out items (none: ``{}``), not counted: the greedy team's mean
        reward and solved share (reward 1), and of ``pass_k`` samples per item at the training
        temperature, the mean reward and pass@k (the share of items solved at least once)."""
        greedy = self.held_out_rewards(seed, greedy=True)
        if not greedy.size:
            return {}
        sampled = self.held_out_rewards(seed, pass_k)
        return {"held_out/greedy_reward": float(greedy.mean()),
                "held_out/greedy_solved": float(np.mean(greedy == 1.0)),
                "held_out/sampled_reward": float(sampled.mean()),
                f"held_out/pass@{pass_k}": float((sampled == 1.0).any(axis=1).mean())}

    def replace(self, agent: int, policy: Any, beta: float) -> None:
        """Swap ``agent``'s policy for a new one, with a fresh optimiser and β.

        The newcomer must read the incumbent's messages: Stage-0 and every later update score
        the team's rollouts token by token, so a text newcomer needs the same tokenizer
        (``source``); a different vocabulary raises ``ValueError`` saying so.
        """
        if self.shared:
            raise ValueError("cannot replace one agent of a shared policy")
        check_same_vocabulary(self.policies[agent], policy)
        incumbent, self.policies[agent] = self.policies[agent], policy
        release = getattr(incumbent, "release", None)
        if release:
            release(policy)
        self.optimizers[agent] = make_optimizer(policy, self.learning_rate, self.weight_decay)
        self.betas[agent] = beta


def weights_key(policy: Any) -> tuple[int, ...]:
    """Identifies the weights a policy's updates change: equal for agents sharing one policy,
    distinct for agents with their own adapters on a shared base."""
    return tuple(id(p) for p in trainable(policy))


def check_same_vocabulary(incumbent: Any, newcomer: Any) -> None:
    """Raise ``ValueError`` unless a newcomer scores the incumbent's tokens (text policies:
    the same tokenizer)."""
    old, new = getattr(incumbent, "source", None), getattr(newcomer, "source", None)
    if old != new:
        raise ValueError(
            f"the newcomer ({getattr(newcomer, 'model_name', '?')}) has another tokenizer than "
            f"the incumbent ({getattr(incumbent, 'model_name', '?')}): replacement aligns it "
            "(Stage-0) and trains it on the team's messages scored token by token, which needs "
            "the same vocabulary; pick a replacement model with the incumbent's tokenizer")


def make_optimizer(policy: Any, learning_rate: float,
                   weight_decay: float) -> torch.optim.Optimizer:
    """AdamW over the parameters a policy's updates change (its own adapter on a shared base)."""
    return torch.optim.AdamW(trainable(policy), lr=learning_rate, weight_decay=weight_decay)


def agent_deltas(args: TeamArgs, n_agents: int) -> list[float]:
    """Per-agent budgets δ_i: ``delta · (delta_ref_agents / n)²`` or a constant ``delta``.

    With fresh rollouts the occupancy penalty grows like n·√δ, so keeping it fixed as the team
    grows means δ_i ∝ 1/n².
    """
    scale = (args.delta_ref_agents / n_agents) ** 2 if args.delta_schedule == (
        "inverse_square") else 1.0
    return [args.delta * scale] * n_agents


def agent_order(order: str, n_agents: int, rng: np.random.Generator) -> list[int]:
    """This stage's update order: ``static`` or a ``random`` permutation drawn from ``rng``."""
    if order == "static":
        return list(range(n_agents))
    return [int(a) for a in rng.permutation(n_agents)]


def _make_env(args: TeamArgs) -> tuple[Any, dict[str, Any]]:
    kwargs = dict(args.env_kwargs)
    if args.n_agents is not None:
        if kwargs.setdefault("n_agents", args.n_agents) != args.n_agents:
            raise ConfigError("n_agents", f"{args.n_agents} agents, but env_kwargs asks for "
                                          f"{kwargs['n_agents']}: give the team size once")
    try:
        env = pettingzoo.make("aec", args.env_id, **kwargs)
    except PettingZooRegistryError as exc:  # its message lists PettingZoo's whole registry
        raise ConfigError("env_id", str(UnknownNameError("team env", args.env_id,
                                                         team_envs.ENV_IDS))) from exc
    except (TypeError, ValueError) as exc:
        raise ConfigError("env_kwargs", f"{args.env_id} rejected {kwargs}: {exc}") from exc
    return env, kwargs


def _symbolic_factory(task: SymbolicTask, seed: int) -> PolicyFactory:
    def build(agent: int, spec: dict[str, Any]) -> SymbolicAgent:
        network = new_network(task, spec["n_features"], spec["hidden_size"],
                              spec.get("seed", seed), agent)
        return SymbolicAgent(task, agent, network, shared=spec["shared"])
    return build


def _lm_factory(args: TeamArgs, n_agents: int) -> PolicyFactory:
    """Builds LM policies; LoRA agents on the same model share its base weights, each with its
    own adapter (``agent_<i>``, or ``agent_<i>_<k>`` for a replacement). The answerer (the
    last agent) starts its messages with ``answer_prefix``."""
    bases: dict[str, Any] = {}
    engines: dict[str, Any] = {}

    def engine(model: str) -> Any:
        """One vLLM engine per base model (``generation="vllm"``), else None."""
        if args.generation != "vllm":
            return None
        if model not in engines:
            from agentworld_envs.models.pretrained import resolve_model
            from trainers.policies.vllm_generation import VLLMGeneration

            engines[model] = VLLMGeneration(resolve_model(model), max_lora_rank=args.lora_rank,
                                            max_loras=args.n_agents or 8)
        return engines[model]

    def build(agent: int, spec: dict[str, Any]) -> Any:
        from trainers.policies.lm import CausalLMPolicy

        base = bases.get(spec["model"]) if spec["lora_rank"] else None
        adapter, k = f"agent_{agent}", len(base.module.peft_config) if base is not None else 0
        while base is not None and adapter in base.module.peft_config:
            adapter, k = f"agent_{agent}_{k}", k + 1
        policy = CausalLMPolicy(
            spec["model"], lora_rank=spec["lora_rank"], temperature=spec["temperature"],
            top_p=args.top_p, top_k=args.top_k, stop=args.stop,
            max_new_tokens=spec["max_new_tokens"], context_tokens=args.context_tokens,
            score_batch_size=args.score_batch_size, dtype=args.dtype,
            gradient_checkpointing=args.gradient_checkpointing, device=args.device,
            seed=int(spec.get("seed", args.seed)) * 1009 + agent, adapter=adapter, base=base,
            engine=engine(spec["model"]),
            response_prefix=args.answer_prefix if agent == n_agents - 1 else "")
        if spec["lora_rank"]:
            bases.setdefault(spec["model"], policy)
        return policy
    return build


def _checked_env(args: TeamArgs) -> tuple[Any, dict[str, Any]]:
    """:func:`_make_env`, with a setting of the other kind of policy refused."""
    env, kwargs = _make_env(args)
    _refuse_other_policy_settings(args, isinstance(env.unwrapped.task, SymbolicTask))
    return env, kwargs


def team_task(args: TeamArgs) -> TeamTask:
    """The task of the team :func:`build_team` builds for ``args``, read from its env alone (no
    model loads); a setting of the other kind of policy is refused, as :func:`build_team` does."""
    return _checked_env(args)[0].unwrapped.task


def _refuse_other_policy_settings(args: TeamArgs, symbolic: bool) -> None:
    """A ``ConfigError`` for a setting of the other kind of policy (an LM setting on a symbolic
    team, ``hidden_size`` on a text team), which would be ignored."""
    foreign = args.changed(LM_FIELDS if symbolic else SYMBOLIC_FIELDS)
    if foreign:
        kind, policies = ("a symbolic team", "language-model") if symbolic else (
            "a text team", "symbolic (MLP)")
        raise ConfigError(foreign[0], f"{args.env_id} is {kind}; {', '.join(foreign)} "
                                      f"set(s) {policies} policies only, so would be ignored")


def _check_device(device: str) -> None:
    """A ``ConfigError`` for a ``device`` torch cannot read, or a CUDA device this machine lacks
    (else the first forward pass fails with a traceback)."""
    try:
        parsed = torch.device(device)
    except RuntimeError as exc:
        raise ConfigError("device", f"{device!r} is not a torch device (e.g. cpu, cuda, "
                                    "cuda:1)") from exc
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if parsed.type == "cuda" and (parsed.index or 0) >= count:
        raise ConfigError("device", f"{device} is not on this machine ({count} CUDA devices)")


def _models(args: TeamArgs, env_id: str, n_agents: int) -> list[str]:
    """Each agent's model: ``models`` (one per agent) or ``model`` for all, each one that can
    load (:func:`~agentworld_envs.backends.hf_settings.unreachable`)."""
    if args.models and args.model:
        raise ConfigError("models", "give model (every agent) or models (one per agent), "
                                    "not both")
    if args.models:
        if len(args.models) != n_agents:
            raise ConfigError("models", f"{len(args.models)} models for {n_agents} agents")
        models, field_name = list(args.models), "models"
    elif not args.model:
        raise ConfigError("model", f"{env_id} is a text team: give a causal-LM directory")
    else:
        models, field_name = [args.model] * n_agents, "model"
    for model in dict.fromkeys(models):  # before anything loads: not the hub's "Repo id" error
        if problem := unreachable("model", model):
            raise ConfigError(field_name, problem)
    return models


def build_team(args: TeamArgs, shared: bool = False) -> Team:
    """The team of ``args``, freshly initialised from ``args.seed``.

    Args:
        args: Trainer settings.
        shared: One policy plays every agent (single-agent fine-tuning).
    """
    env, kwargs = _checked_env(args)
    n_agents = len(env.possible_agents)
    task = env.unwrapped.task
    symbolic = isinstance(task, SymbolicTask)
    threads = (1 if symbolic else 0) if args.torch_threads is None else args.torch_threads
    if threads:
        torch.set_num_threads(threads)
    if symbolic:
        policies = build_symbolic_agents(task, args.hidden_size, args.seed, shared=shared)
        factory = _symbolic_factory(task, args.seed)
        rollouts: SymbolicRollouts | TextRollouts = SymbolicRollouts(task)
    else:
        _check_device(args.device)
        models = _models(args, args.env_id, n_agents)
        if shared and len(set(models)) > 1:
            raise ConfigError("models", "a policy shared by every agent needs one model")
        factory = _lm_factory(args, n_agents)
        specs = [{"model": model, "lora_rank": args.lora_rank, "temperature": args.temperature,
                  "max_new_tokens": args.max_new_tokens} for model in models]
        if shared:  # one policy, each role's view of it with that role's prefix
            policy = factory(0, specs[0])
            policies = [policy.with_response_prefix(args.answer_prefix if agent == n_agents - 1
                                                    else "") for agent in range(n_agents)]
        else:
            policies = [factory(agent, spec) for agent, spec in enumerate(specs)]
        rollouts = TextRollouts(args.env_id, kwargs, env)
    optimizers: dict[int, torch.optim.Optimizer] = {}
    for policy in policies:
        if weights_key(policy) not in optimizers:
            optimizers[weights_key(policy)] = make_optimizer(policy, args.learning_rate,
                                                             args.weight_decay)
    return Team(
        policies=policies,
        optimizers=[optimizers[weights_key(p)] for p in policies],
        betas=[args.kl_coef] * n_agents,
        deltas=agent_deltas(args, n_agents),
        rollouts=rollouts,
        factory=factory,
        learning_rate=args.learning_rate,
        weight_decay=args.weight_decay,
        rng=np.random.default_rng(args.seed),
        generator=torch.Generator().manual_seed(args.seed),
    )
