"""One agent's policy update: PPO-clip (+ β·KL) on its messages, with an optional trust region.

:func:`policy_update` runs ``update_epochs`` passes of minibatch steps. :func:`trust_region_update`
wraps it in TeamTR's check: after the update, the ``kl_quantile`` quantile of the per-message
KL(old ‖ new) on the update's rollouts must not exceed δ_i; otherwise β_i is multiplied by
``beta_growth`` and the step shrinks (a line search halfway back towards the old parameters, or
the reference's restore-and-redo with the larger β), at most ``max_backtracks`` times. If no
attempt fits, the agent keeps its old parameters and optimiser state.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from trainers.common.batch import RolloutBatch, Samples
from trainers.common.objectives import (
    group_advantages,
    kl_summary,
    message_kl,
    message_log_ratio,
    ppo_clip_loss,
)

__all__ = ["AgentPolicy", "UpdateSettings", "TrustRegionResult", "trainable", "accumulate",
           "policy_update",
           "simultaneous_update", "trust_region_update", "trust_region_summary", "measure_kl",
           "message_log_ratios", "log_ratios_and_kl", "snapshot", "restore", "BACKTRACK_MODES"]


class AgentPolicy(Protocol):
    """What the updates need from a policy (LM policies also have ``score_batch_size``, the
    messages per forward pass, and ``trainable_parameters()``, their own adapter's)."""

    module: torch.nn.Module

    def token_logprobs(self, samples: Samples) -> torch.Tensor:
        """Per-token log-probs ``(M, T)`` of the samples' messages, with gradients."""

    def score(self, samples: Samples) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-token log-probs ``(M, T)`` and per-message KL(old ‖ policy) ``(M,)``."""


@dataclass(frozen=True)
class UpdateSettings:
    """Optimisation settings of one agent update (taken from the trainer's Args)."""

    epochs: int
    minibatches: int
    clip: float
    max_grad_norm: float

    @classmethod
    def from_args(cls, args: Any) -> UpdateSettings:
        """Read ``update_epochs``, ``minibatches``, ``clip_coef`` and ``max_grad_norm``."""
        return cls(args.update_epochs, args.minibatches, args.clip_coef, args.max_grad_norm)


def trainable(policy: AgentPolicy) -> list[torch.nn.Parameter]:
    """The parameters an agent's update changes: ``policy.trainable_parameters()`` where the
    policy says (an adapter on a shared base), else its module's that require gradients."""
    own = getattr(policy, "trainable_parameters", None)
    return own() if own else [p for p in policy.module.parameters() if p.requires_grad]


def accumulate(policy: AgentPolicy, samples: Samples, rows: np.ndarray,
               loss_of: Callable[[Samples, np.ndarray], tuple[torch.Tensor, dict[str, float]]]
               ) -> dict[str, float]:
    """Backpropagate a mean-over-messages loss on ``samples[rows]`` in micro-batches of at most
    the policy's ``score_batch_size`` messages (all at once without one).

    ``loss_of(part, part_rows)`` returns a micro-batch's mean loss and statistics; each loss is
    weighted by its share of ``rows`` before ``backward``, so the accumulated gradient is that of
    one batch. Returns the statistics averaged with the same weights.

    Rows that take more than one micro-batch are taken in order, so that each micro-batch holds
    the rows that a scoring pass over the same rows (which runs in order) puts together: in
    bfloat16 a message's log-probs depend on the shape of the pass, its rows and their padding
    (on SmolLM2-135M, sequence log-ratios of up to 0.59 at zero update in shuffled micro-batches,
    beyond PPO's clip). An update with one minibatch thus sees its old log-probs exactly.

    Raises:
        FloatingPointError: a micro-batch's loss is NaN or infinite, before its ``backward``
            (an optimiser step on its gradient would turn every weight into NaN).
    """
    size = getattr(policy, "score_batch_size", 0) or len(rows)
    if len(rows) > size:
        rows = np.sort(rows)
    totals: dict[str, float] = {}
    for start in range(0, len(rows), size):
        part_rows = rows[start:start + size]
        share = len(part_rows) / len(rows)
        loss, stats = loss_of(samples.subset(part_rows), part_rows)
        if not torch.isfinite(loss):
            raise FloatingPointError(
                f"agent {samples.agent}: the update's loss is {float(loss.detach())} (a NaN or "
                "infinite team reward, log-prob or KL in its batch); stopped before the step, "
                "which would turn the agent's weights into NaN")
        (loss * share).backward()
        for name, value in stats.items():
            totals[name] = totals.get(name, 0.0) + share * value
    return totals


def _ppo_loss(policy: AgentPolicy, advantages: torch.Tensor, clip: float, beta: float = 0.0,
              weights: torch.Tensor | None = None, scores: Samples | None = None
              ) -> Callable[[Samples, np.ndarray], tuple[torch.Tensor, dict[str, float]]]:
    """The PPO-clip plus ``beta`` · KL loss of the messages at some rows, for :func:`accumulate`
    (``advantages`` and ``weights``: one per message of the samples). With ``scores`` (the
    samples, their old log-probs deferred), a pass before any step: each message's log-probs
    are its old ones, written into ``scores``."""
    def loss_of(part: Samples, rows: np.ndarray) -> tuple[torch.Tensor, dict[str, float]]:
        if scores is None:
            new_logp, kl = policy.score(part)
        else:
            new_logp = policy.token_logprobs(part)
            part.old_logp = new_logp.detach()
            scores.old_logp[torch.from_numpy(rows)] = part.old_logp
            kl = message_kl(new_logp, part.old_logp, part.mask)
        log_ratio = message_log_ratio(new_logp, part.old_logp, part.mask)
        pg_loss, clipfrac = ppo_clip_loss(log_ratio, advantages[rows], clip,
                                          None if weights is None else weights[rows])
        kl = kl.mean()
        return pg_loss + beta * kl, {"policy_loss": float(pg_loss.detach()),
                                     "kl_loss": float(kl.detach()), "clipfrac": float(clipfrac)}
    return loss_of


def policy_update(policy: AgentPolicy, optimizer: torch.optim.Optimizer, samples: Samples,
                  advantages: torch.Tensor, settings: UpdateSettings, generator: torch.Generator,
                  beta: float = 0.0, weights: torch.Tensor | None = None) -> dict[str, float]:
    """PPO-clip plus ``beta`` · KL(old ‖ new) on one agent's messages.

    Old log-probs left deferred (``samples.old_logp`` None) are those of the first pass, taken
    before any step: with one minibatch, that pass's own (its micro-batches are the scoring
    pass's, so they equal what a scoring pass would give), else a scoring pass first.

    Args:
        policy: The agent's policy.
        optimizer: Its optimiser.
        samples: Its messages; ``old_logp`` are the log-probs they were sampled with, or None.
        advantages: ``(M,)`` advantage of each message.
        settings: Epochs, minibatches, clip range and gradient clip.
        generator: Shuffles minibatches.
        beta: KL coefficient.
        weights: ``(M,)`` factors applied outside the clip (HAPPO), or None.

    Returns:
        Loss statistics of the last pass.
    """
    if len(samples) == 0:
        return {}
    params = trainable(policy)
    deferred = samples.old_logp is None
    if deferred and settings.minibatches > 1:  # later minibatches would run after a step
        with torch.no_grad():
            samples.old_logp = policy.token_logprobs(samples)
        deferred = False
    if deferred:
        samples.old_logp = torch.zeros_like(samples.mask)
    for epoch in range(settings.epochs):
        loss_of = _ppo_loss(policy, advantages, settings.clip, beta, weights,
                            samples if deferred and epoch == 0 else None)
        order = torch.randperm(len(samples), generator=generator)
        stats: list[dict[str, float]] = []  # this pass's (chunk may give fewer than asked)
        for chunk in order.chunk(settings.minibatches):
            optimizer.zero_grad(set_to_none=True)
            stats.append(accumulate(policy, samples, chunk.numpy(), loss_of))
            torch.nn.utils.clip_grad_norm_(params, settings.max_grad_norm)
            optimizer.step()
    return {name: float(np.mean([s[name] for s in stats])) for name in stats[-1]}


def simultaneous_update(policies: list[AgentPolicy], optimizers: list[torch.optim.Optimizer],
                        batch: RolloutBatch, adv_clip: float, adv_std_ddof: int,
                        settings: UpdateSettings,
                        generator: torch.Generator) -> dict[str, float]:
    """Update every agent at once on one batch: each step sums all agents' PPO-clip losses.

    Minibatches are sets of episodes, holding every agent's messages in them; the gradient norm
    is clipped over all parameters together and every optimiser steps. With a policy shared by
    all agents this is single-agent GRPO over the team's messages, each role's loss a mean over
    its own messages and the roles' losses summed. Returns the mean loss of the last pass.
    """
    advantages = torch.as_tensor(group_advantages(batch.rewards, batch.groups, adv_clip,
                                                  adv_std_ddof),
                                 dtype=torch.float32)
    unique = list({id(o): o for o in optimizers}.values())
    params = list({id(p): p for policy in policies for p in trainable(policy)}.values())
    for _ in range(settings.epochs):
        order = torch.randperm(batch.episodes, generator=generator)
        losses: list[float] = []  # this pass's (chunk may give fewer than asked)
        for chunk in order.chunk(settings.minibatches):
            chosen = np.zeros(batch.episodes, dtype=bool)
            chosen[chunk.numpy()] = True
            for optimizer in unique:
                optimizer.zero_grad(set_to_none=True)
            loss = 0.0
            for agent, samples in enumerate(batch.samples):
                rows = np.flatnonzero(chosen[samples.episode])
                if len(rows) == 0:
                    continue
                loss += accumulate(policies[agent], samples, rows, _ppo_loss(
                    policies[agent], advantages[samples.episode], settings.clip))["policy_loss"]
            torch.nn.utils.clip_grad_norm_(params, settings.max_grad_norm)
            for optimizer in unique:
                optimizer.step()
            losses.append(loss)
    return {"policy_loss": float(np.mean(losses))}


@torch.no_grad()
def measure_kl(policy: AgentPolicy, samples: Samples) -> torch.Tensor:
    """``(M,)`` per-message KL(old ‖ current) on ``samples``."""
    return policy.score(samples)[1]


@torch.no_grad()
def message_log_ratios(policy: AgentPolicy, samples: Samples) -> torch.Tensor:
    """``(M,)`` log-ratio current/old of each message."""
    return message_log_ratio(policy.token_logprobs(samples), samples.old_logp, samples.mask)


@torch.no_grad()
def log_ratios_and_kl(policy: AgentPolicy, samples: Samples) -> tuple[torch.Tensor, torch.Tensor]:
    """``(M,)`` log-ratio current/old and KL(old ‖ current) of each message, from one scoring
    pass."""
    logp, kl = policy.score(samples)
    return message_log_ratio(logp, samples.old_logp, samples.mask), kl


def snapshot(policy: AgentPolicy, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Copies of the policy's trainable parameters and the optimiser's state."""
    return {"params": [p.detach().clone() for p in trainable(policy)],
            "optimizer": copy.deepcopy(optimizer.state_dict())}


@torch.no_grad()
def restore(policy: AgentPolicy, optimizer: torch.optim.Optimizer, saved: dict[str, Any]) -> None:
    """Put back what :func:`snapshot` saved."""
    for param, value in zip(trainable(policy), saved["params"], strict=True):
        param.copy_(value)
    optimizer.load_state_dict(copy.deepcopy(saved["optimizer"]))


@dataclass
class TrustRegionResult:
    """The outcome of a trust-region update."""

    accepted: bool
    beta: float
    """β_i after the update (raised once per violation)."""
    backtracks: int
    """Failed checks before acceptance (``max_backtracks`` + 1 attempts when rejected)."""
    kl: dict[str, float]
    """KL statistics of the final attempt: the kept parameters when accepted (before the restore
    otherwise)."""
    losses: dict[str, float] = field(default_factory=dict)
    step_fraction: float = 1.0
    """The kept fraction of the optimiser's step (``interpolate``: 2^-backtracks; 0 if rejected;
    ``beta_only``: 1 or 0)."""
    log_ratios: torch.Tensor | None = None
    """``(M,)`` log-ratio kept/old of each message, from the accepted attempt's KL check (what
    :func:`message_log_ratios` would score again); None when rejected."""


BACKTRACK_MODES = ("interpolate", "beta_only")


@torch.no_grad()
def _interpolate(policy: AgentPolicy, start: list[torch.Tensor], end: list[torch.Tensor],
                 fraction: float) -> None:
    for param, old, new in zip(trainable(policy), start, end, strict=True):
        param.copy_(old + fraction * (new - old))


def trust_region_update(policy: AgentPolicy, optimizer: torch.optim.Optimizer, samples: Samples,
                        advantages: torch.Tensor, settings: UpdateSettings,
                        generator: torch.Generator, *, delta: float, beta: float,
                        quantile: float, beta_growth: float, max_backtracks: int,
                        backtrack: str = "interpolate") -> TrustRegionResult:
    """TeamTR's per-agent step: update, check the KL quantile against ``delta``, backtrack.

    Every failed check multiplies β by ``beta_growth``. ``backtrack`` says how the step shrinks:

    * ``interpolate`` (line search): the parameters move halfway back towards the restored ones,
      θ = θ_old + 2^-k (θ_step − θ_old) after k failed checks, so the KL falls about fourfold per
      backtrack and a step that fits is found unless δ is far below the step's scale;
    * ``beta_only`` (the reference's literal recipe): restore and redo the whole update with the
      larger β; the step barely shrinks while β is small beside the PPO term.

    If no attempt fits, the agent's parameters and optimiser state are restored.

    Returns:
        Whether an attempt fit, the new β, the number of backtracks, the KL statistics, the
        kept step fraction and, when accepted, the messages' log-ratios from the last check.
    """
    if backtrack not in BACKTRACK_MODES:
        raise ValueError(f"backtrack must be one of {BACKTRACK_MODES}, got {backtrack!r}")
    saved = snapshot(policy, optimizer)
    kl_stats: dict[str, float] = {}
    losses: dict[str, float] = {}
    stepped: list[torch.Tensor] = []
    for attempt in range(max_backtracks + 1):
        fraction = 0.5 ** attempt if backtrack == "interpolate" else 1.0
        if attempt == 0 or backtrack == "beta_only":
            losses = policy_update(policy, optimizer, samples, advantages, settings, generator,
                                   beta=beta)
            if backtrack == "interpolate":
                stepped = [p.detach().clone() for p in trainable(policy)]
        else:
            _interpolate(policy, saved["params"], stepped, fraction)
        log_ratios, kl = log_ratios_and_kl(policy, samples)
        kl_stats = kl_summary(kl, delta, quantile)
        if kl_stats["kl_checked"] <= delta:
            return TrustRegionResult(True, beta, attempt, kl_stats, losses, fraction, log_ratios)
        beta *= beta_growth
        if backtrack == "beta_only":
            restore(policy, optimizer, saved)
    restore(policy, optimizer, saved)
    return TrustRegionResult(False, beta, max_backtracks, kl_stats, losses, 0.0)


def trust_region_summary(results: list[TrustRegionResult]) -> dict[str, float]:
    """A stage's trust-region record: accepted and rejected updates, the out-of-region fraction,
    and (when any update was accepted) the accepted updates' mean per-message KL and the mean of
    their 0.99-quantiles."""
    accepted = [r for r in results if r.accepted]
    record = {"accepted_updates": float(len(accepted)),
              "rejected_updates": float(len(results) - len(accepted)),
              "out_of_region_fraction": 1.0 - len(accepted) / max(1, len(results))}
    if accepted:
        record["accepted_kl_mean"] = float(np.mean([r.kl["kl_mean"] for r in accepted]))
        record["accepted_kl_q99"] = float(np.mean([r.kl["kl_q99"] for r in accepted]))
        record["accepted_step_fraction"] = float(np.mean([r.step_fraction for r in accepted]))
    return {f"trust_region/{name}": value for name, value in record.items()}
