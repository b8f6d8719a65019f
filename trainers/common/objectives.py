"""Advantages, message ratios, the PPO-clip surrogate and the per-message KL of team trainers.

All quantities are per message: an agent's action is a whole message, so its ratio is the
product of its tokens' ratios and its KL is the sum of its tokens' KLs (by the chain rule, the
KL of the message). Padding is excluded through the samples' mask.
"""

from __future__ import annotations

import numpy as np
import torch

from trainers.common.batch import RolloutBatch

__all__ = [
    "group_advantages",
    "message_advantages",
    "message_log_ratio",
    "message_kl",
    "exact_message_kl",
    "ppo_clip_loss",
    "episode_log_ratio",
    "leave_one_out_centred",
    "surrogate_gain",
    "kl_summary",
]

_TOKEN_CLAMP = 10.0
_MESSAGE_CLAMP = 20.0


def group_advantages(rewards: np.ndarray, groups: np.ndarray, clip: float, ddof: int = 1,
                     eps: float = 1e-6) -> np.ndarray:
    """GRPO advantages: reward minus its group's mean, over the group's std, clipped to ±clip.

    The std's delta degrees of freedom ``ddof``: 1, the sample std (``torch.std``'s), as in the
    reference's verl code, (R − μ)/(σ + 1e-6), and TRL's ``GRPOTrainer``; 0, the population
    std. A group whose episodes all score the same, or a group of one, gets advantage 0.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    mean = np.bincount(inverse, rewards) / counts
    var = np.bincount(inverse, (rewards - mean[inverse]) ** 2) / np.maximum(counts - ddof, 1)
    advantages = (rewards - mean[inverse]) / (np.sqrt(var[inverse]) + eps)
    return np.clip(advantages, -clip, clip)


def message_advantages(batch: RolloutBatch, agent: int, clip: float, ddof: int) -> torch.Tensor:
    """``(M,)`` advantage of each of ``agent``'s messages: its episode's group advantage
    (:func:`group_advantages`)."""
    advantages = group_advantages(batch.rewards, batch.groups, clip, ddof)
    return torch.as_tensor(advantages[batch.samples[agent].episode], dtype=torch.float32)


def message_log_ratio(new_logp: torch.Tensor, old_logp: torch.Tensor,
                      mask: torch.Tensor) -> torch.Tensor:
    """``(M,)`` log of each message's probability ratio: masked sum of clamped token ratios."""
    delta = (new_logp - old_logp).clamp(-_TOKEN_CLAMP, _TOKEN_CLAMP)
    return (delta * mask).sum(dim=1)


def message_kl(new_logp: torch.Tensor, old_logp: torch.Tensor,
               mask: torch.Tensor) -> torch.Tensor:
    """``(M,)`` per-message KL(old ‖ new): the masked sum of per-token ``(e^Δ - 1) - Δ``.

    With Δ = logp_new - logp_old on tokens sampled from the old policy, each term is a
    non-negative, unbiased estimate of that token's KL(old ‖ new).
    """
    delta = (new_logp - old_logp).clamp(-_TOKEN_CLAMP, _TOKEN_CLAMP)
    return ((torch.expm1(delta) - delta) * mask).sum(dim=1)


def exact_message_kl(new_dist: torch.Tensor, old_dist: torch.Tensor,
                     mask: torch.Tensor) -> torch.Tensor:
    """``(M,)`` per-message KL(old ‖ new) from full ``(M, T, V)`` log-distributions.

    The masked sum over positions of each position's exact KL: the Rao-Blackwellised form of
    :func:`message_kl`, with no sampling noise from the message's own tokens.
    """
    per_token = (old_dist.exp() * (old_dist - new_dist)).sum(dim=-1)
    return (per_token * mask).sum(dim=1)


def ppo_clip_loss(log_ratio: torch.Tensor, advantages: torch.Tensor, clip: float,
                  weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The negated PPO-clip surrogate over messages, and the fraction of clipped ratios.

    Args:
        log_ratio: ``(M,)`` message log-ratios.
        advantages: ``(M,)`` advantages.
        clip: The clip range ε.
        weights: ``(M,)`` multipliers applied outside the clip (HAPPO's factor), or None.
    """
    ratio = log_ratio.clamp(-_MESSAGE_CLAMP, _MESSAGE_CLAMP).exp()
    surrogate = torch.minimum(ratio * advantages,
                              ratio.clamp(1.0 - clip, 1.0 + clip) * advantages)
    if weights is not None:
        surrogate = weights * surrogate
    clipped = ((ratio - 1.0).abs() > clip).float().mean()
    return -surrogate.mean(), clipped


def episode_log_ratio(log_ratio: torch.Tensor, episode: np.ndarray,
                      episodes: int) -> torch.Tensor:
    """``(B,)`` log-ratio of each episode: the sum over the agent's messages in it."""
    total = torch.zeros(episodes, dtype=log_ratio.dtype)
    return total.index_add(0, torch.from_numpy(np.asarray(episode)), log_ratio)


def leave_one_out_centred(rewards: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each reward minus the mean of the *other* rewards of its group (0 in a group of one).

    The baseline excludes the episode itself, so it is independent of that episode's actions;
    centring on the full group mean instead shrinks every (ρ − 1)·(R − b) term by (G − 1)/G.
    """
    rewards = np.asarray(rewards, dtype=np.float64)
    _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    others = counts[inverse] - 1
    totals = np.bincount(inverse, rewards)[inverse]
    baseline = np.divide(totals - rewards, others, out=rewards.copy(), where=others > 0)
    return rewards - baseline


def surrogate_gain(log_ratio: torch.Tensor, agent_episodes: np.ndarray,
                   batch: RolloutBatch) -> float:
    """Unbiased importance-sampled estimate of a policy change's gain in team reward on ``batch``.

    ``mean[(ρ - 1) · (R - b)]`` with ρ the episode ratio of the changed agent and b the
    leave-one-out mean of the episode's group (:func:`leave_one_out_centred`), so the expectation
    is exactly the change of the expected team reward. On rollouts of the current team (everyone
    else unchanged) that is the true gain; on stale rollouts, the gain at the old occupancy.
    """
    rho = episode_log_ratio(log_ratio.detach(), agent_episodes, batch.episodes)
    rho = rho.clamp(-_MESSAGE_CLAMP, _MESSAGE_CLAMP).exp().double().numpy()
    return float(np.mean((rho - 1.0) * leave_one_out_centred(batch.rewards, batch.groups)))


def kl_summary(kl: torch.Tensor, delta: float, quantile: float) -> dict[str, float]:
    """Quantiles of per-message KL, the checked ``quantile`` and the share of messages > delta."""
    if kl.numel() == 0:
        return dict.fromkeys(("kl_mean", "kl_q50", "kl_q90", "kl_q99", "kl_max", "kl_checked",
                              "kl_beyond"), 0.0)
    kl = kl.detach().double()
    levels = torch.tensor([0.5, 0.9, 0.99, quantile], dtype=kl.dtype)
    q50, q90, q99, checked = torch.quantile(kl, levels).tolist()
    return {"kl_mean": float(kl.mean()), "kl_q50": q50, "kl_q90": q90, "kl_q99": q99,
            "kl_max": float(kl.max()), "kl_checked": checked,
            "kl_beyond": float((kl > delta).double().mean())}
