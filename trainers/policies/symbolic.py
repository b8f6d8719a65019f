"""Small torch policies for symbolic teams: an MLP from one-hot observations to message logits.

An agent's features are the one-hot encoding of the context it hears and of its private input.
A shared policy (one network playing every role, as in single-agent fine-tuning) pads the
private part to the widest agent's and appends a one-hot agent index.

Messages are sampled by inverse-CDF from uniforms drawn from an explicit ``torch.Generator``, so
two policies that differ slightly sample the same message from the same uniforms almost always
(common random numbers for paired evaluations).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from team_envs.symbolic.tasks import SymbolicTask
from trainers.common.batch import Samples
from trainers.common.objectives import exact_message_kl

__all__ = ["SymbolicMessages", "MessageMLP", "SymbolicAgent", "build_symbolic_agents",
           "new_network", "feature_width"]


@dataclass
class SymbolicMessages:
    """An agent's messages in a batch: what it observed and what it said."""

    context: np.ndarray
    """``(M, n * length)`` heard context."""
    private: np.ndarray
    """``(M, P)`` private input."""
    actions: np.ndarray
    """``(M, length)`` message symbols."""

    def __len__(self) -> int:
        return len(self.actions)

    def subset(self, index: np.ndarray) -> SymbolicMessages:
        """The messages at ``index``."""
        return SymbolicMessages(self.context[index], self.private[index], self.actions[index])


def _private_width(task: SymbolicTask, agent: int) -> int:
    return int(sum(task.private_nvec(agent)))


def feature_width(task: SymbolicTask, agent: int, shared: bool) -> int:
    """Input size of ``agent``'s network (the same for every agent when ``shared``)."""
    context = task.n_agents * task.message_length * (task.vocab_size + 1)
    if shared:
        widest = max(_private_width(task, a) for a in range(task.n_agents))
        return context + widest + task.n_agents
    return context + _private_width(task, agent)


def encode(task: SymbolicTask, agent: int, context: np.ndarray, private: np.ndarray,
           shared: bool) -> torch.Tensor:
    """One-hot features of a batch of ``agent``'s observations."""
    size = len(context)
    parts = [nn.functional.one_hot(torch.from_numpy(context), task.vocab_size + 1)
             .reshape(size, -1).float()]
    nvec = task.private_nvec(agent)
    width = max(_private_width(task, a) for a in range(task.n_agents)) if shared else sum(nvec)
    one_hot_private = torch.zeros(size, width)
    if nvec:
        offsets = torch.as_tensor(np.concatenate([[0], np.cumsum(nvec)[:-1]]))
        one_hot_private.scatter_(1, torch.from_numpy(private) + offsets, 1.0)
    parts.append(one_hot_private)
    if shared:
        parts.append(nn.functional.one_hot(torch.full((size,), agent), task.n_agents).float())
    return torch.cat(parts, dim=1)


class MessageMLP(nn.Module):
    """Two tanh hidden layers to ``length x vocab`` logits; the output starts near uniform.

    Args:
        n_features: Input size.
        vocab_size: Symbols per position.
        message_length: Positions per message.
        hidden_size: Units per hidden layer.
        generator: Draws the initial weights.
    """

    def __init__(self, n_features: int, vocab_size: int, message_length: int, hidden_size: int,
                 generator: torch.Generator) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.message_length = message_length
        self.net = nn.Sequential(
            nn.Linear(n_features, hidden_size), nn.Tanh(),
            nn.Linear(hidden_size, hidden_size), nn.Tanh(),
            nn.Linear(hidden_size, message_length * vocab_size))
        linears = [m for m in self.net if isinstance(m, nn.Linear)]
        for layer in linears:
            gain = 0.01 if layer is linears[-1] else float(np.sqrt(2))
            nn.init.orthogonal_(layer.weight, gain=gain, generator=generator)
            nn.init.zeros_(layer.bias)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Log-probabilities ``(batch, length, vocab)``."""
        logits = self.net(features).reshape(-1, self.message_length, self.vocab_size)
        return torch.log_softmax(logits, dim=-1)


class SymbolicAgent:
    """One agent of a symbolic team, backed by a (possibly shared) :class:`MessageMLP`.

    Args:
        task: The task.
        agent: The agent's index.
        network: Its network.
        shared: Whether ``network`` plays every agent (features carry the agent index).
    """

    def __init__(self, task: SymbolicTask, agent: int, network: MessageMLP,
                 shared: bool = False) -> None:
        self.task = task
        self.agent = agent
        self.module = network
        self.shared = shared

    def log_probs(self, context: np.ndarray, private: np.ndarray) -> torch.Tensor:
        """Log-probabilities ``(batch, length, vocab)`` of every message symbol."""
        return self.module(encode(self.task, self.agent, context, private, self.shared))

    def sample(self, context: np.ndarray, private: np.ndarray, generator: torch.Generator
               ) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
        """Sample messages.

        Returns:
            The symbols ``(B, length)``, their log-probabilities and the full
            log-distributions ``(B, length, vocab)`` they were drawn from.
        """
        log_probs = self.log_probs(context, private)
        uniform = torch.rand(log_probs.shape[:2], generator=generator)
        cdf = log_probs.exp().cumsum(dim=-1)
        actions = (uniform.unsqueeze(-1) > cdf).sum(dim=-1).clamp_(max=self.task.vocab_size - 1)
        return (actions.numpy(), log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1),
                log_probs)

    def _scored(self, samples: Samples) -> tuple[torch.Tensor, torch.Tensor]:
        messages: SymbolicMessages = samples.payload
        log_probs = self.log_probs(messages.context, messages.private)
        actions = torch.from_numpy(messages.actions).unsqueeze(-1)
        return log_probs, log_probs.gather(-1, actions).squeeze(-1)

    def token_logprobs(self, samples: Samples) -> torch.Tensor:
        """Per-symbol log-probabilities ``(M, length)`` of recorded messages, with gradients."""
        return self._scored(samples)[1]

    def score(self, samples: Samples) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-symbol log-probs of the messages and the exact per-message KL(old ‖ self)."""
        log_probs, logp = self._scored(samples)
        return logp, exact_message_kl(log_probs, samples.old_dist, samples.mask)

    def spec(self) -> dict[str, int | bool]:
        """Plain data describing the network, stored in checkpoints."""
        first = self.module.net[0]
        return {"n_features": first.in_features, "hidden_size": first.out_features,
                "shared": self.shared}


def build_symbolic_agents(task: SymbolicTask, hidden_size: int, seed: int,
                          shared: bool = False) -> list[SymbolicAgent]:
    """Fresh agents for ``task``: one network each, or one network for all when ``shared``.

    Args:
        task: The task.
        hidden_size: Units per hidden layer.
        seed: Seeds the initial weights (agent ``i`` uses ``seed`` and ``i``).
        shared: One network for every agent.
    """
    if shared:
        one = new_network(task, feature_width(task, 0, True), hidden_size, seed, 0)
        return [SymbolicAgent(task, a, one, shared=True) for a in range(task.n_agents)]
    return [SymbolicAgent(task, a, new_network(task, feature_width(task, a, False),
                                               hidden_size, seed, a))
            for a in range(task.n_agents)]


def new_network(task: SymbolicTask, n_features: int, hidden_size: int, seed: int,
                agent: int) -> MessageMLP:
    """A freshly initialised network for ``agent``, its weights drawn from ``seed``."""
    generator = torch.Generator().manual_seed(int(seed) * 1009 + agent)
    return MessageMLP(n_features, task.vocab_size, task.message_length, hidden_size, generator)
