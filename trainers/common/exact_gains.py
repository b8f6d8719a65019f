"""Exact expected team rewards of small symbolic chains, by enumeration over the message space.

In a relay or compositional chain where every agent hears only the agent before it
(``window=1``) and says one symbol (``message_length=1``), an episode is a Markov chain over
(the correct message so far, the last message said): agent i's correct message depends on the
previous one and its private number, its message on the message it heard and its private number.
Pushing that joint distribution down the chain gives the expected team reward exactly, in
O(n·V³) for V symbols, with no sampling noise. :class:`ExactGainProbe` uses it to score each
update of a stage exactly: its true gain, and its gain at the stage-start occupancy (what a
surrogate on stale rollouts estimates, since an importance ratio of one agent's change is exact
in expectation).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch

from team_envs.symbolic import CompositionalTask, RelayTask, SymbolicTask
from trainers.policies.symbolic import SymbolicAgent

__all__ = ["exact_supported", "exact_team_reward", "ExactGainProbe", "expert_probs",
           "imitate"]


def exact_supported(task: SymbolicTask) -> bool:
    """Whether :func:`exact_team_reward` can enumerate ``task``."""
    return (isinstance(task, RelayTask | CompositionalTask) and task.window == 1
            and task.message_length == 1)


def _next_correct(task: SymbolicTask, agent: int, correct: np.ndarray,
                  private: int | None) -> np.ndarray:
    """Agent ``agent``'s correct message for each previous correct message ``correct``."""
    if isinstance(task, RelayTask):
        return np.full_like(correct, private) if agent == 0 else correct
    role, vocab = task.roles[agent], task.vocab_size
    if role == "add":
        return (correct + private) % vocab
    if role == "sub":
        return (correct - private) % vocab
    return correct


def _observations(task: SymbolicTask, agent: int) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Every ``(context, private)`` the agent can observe, heard symbol-major, and the
    ``(heard, private)`` shape they fill (``heard`` is 1 for the first agent, ``private`` 1 for
    agents without one)."""
    privates = task.private_nvec(agent)
    heard = [task.pad] if agent == 0 else list(range(task.vocab_size))
    values = list(range(privates[0])) if privates else [0]
    rows = [(h, x) for h in heard for x in values]
    context = np.full((len(rows), task.n_agents), task.pad, dtype=np.int64)
    if agent > 0:
        context[:, agent - 1] = [h for h, _ in rows]
    private = np.array([[x] for _, x in rows], dtype=np.int64)[:, :len(privates)]
    return context, private, (len(heard), len(values))


def _log_probs(task: SymbolicTask, policy: SymbolicAgent, agent: int) -> torch.Tensor:
    """``(heard, private, V)`` message log-distribution for every observation, with gradients."""
    context, private, shape = _observations(task, agent)
    return policy.log_probs(context, private)[:, 0].reshape(*shape, task.vocab_size)


def _message_probs(task: SymbolicTask, policy: SymbolicAgent, agent: int) -> np.ndarray:
    with torch.no_grad():
        return _log_probs(task, policy, agent).exp().double().numpy()


def expert_probs(task: SymbolicTask, agent: int, accuracy: float) -> np.ndarray:
    """``(heard, private, V)``: the correct reply to what was heard with probability
    ``accuracy``, every other symbol equally likely (a relay agent that copies, say)."""
    if not exact_supported(task):
        raise ValueError("expert replies need a relay or compositional chain with window=1 "
                         "and message_length=1")
    vocab, privates = task.vocab_size, task.private_nvec(agent)
    heard = np.zeros(1, dtype=np.int64) if agent == 0 else np.arange(vocab)
    values = range(privates[0]) if privates else [None]
    probs = np.full((len(heard), len(values), vocab), (1 - accuracy) / (vocab - 1))
    for column, x in enumerate(values):
        probs[np.arange(len(heard)), column, _next_correct(task, agent, heard, x)] = accuracy
    return probs


def imitate(task: SymbolicTask, policy: SymbolicAgent, agent: int, target: np.ndarray,
            steps: int = 300, learning_rate: float = 0.03) -> float:
    """Fit the agent's message distribution to ``target`` (``(heard, private, V)``) on every
    observation by minimising KL(target ‖ policy) with Adam; returns the final mean KL."""
    target_t = torch.as_tensor(target, dtype=torch.float32)
    optimizer = torch.optim.Adam(policy.module.parameters(), lr=learning_rate)
    for _ in range(steps):
        kl = (target_t * (target_t.clamp_min(1e-12).log() - _log_probs(task, policy, agent))
              ).sum(-1).mean()
        optimizer.zero_grad(set_to_none=True)
        kl.backward()
        optimizer.step()
    return float(kl.detach())


def exact_team_reward(task: SymbolicTask, policies: Sequence[SymbolicAgent]) -> float:
    """The expected team reward of ``policies`` on ``task``, by enumeration.

    Raises:
        ValueError: When the task is not a one-symbol, window-1 relay or compositional chain.
    """
    if not exact_supported(task):
        raise ValueError("exact team rewards need a relay or compositional chain with window=1 "
                         "and message_length=1")
    vocab = task.vocab_size
    correct = np.arange(vocab)
    joint = np.zeros((vocab, 1))  # (previous correct message, heard message); starts at 0, pad
    joint[0, 0] = 1.0
    accuracy = []
    for agent in range(task.n_agents):
        probs = _message_probs(task, policies[agent], agent)
        privates = task.private_nvec(agent)
        following = np.zeros((vocab, vocab))
        for x in range(probs.shape[1]):
            transition = np.zeros((vocab, vocab))
            transition[correct, _next_correct(task, agent, correct, x if privates else None)] = 1
            following += transition.T @ joint @ probs[:, x] / probs.shape[1]
        joint = following
        accuracy.append(float(np.trace(joint)))
    return accuracy[-1] if task.credit == "final" else float(np.mean(accuracy))


class ExactGainProbe:
    """Exact gains of the updates in one stage (not counted in the budget).

    For agent i's update, the **true gain** is J(team after) − J(team before); the **stale gain**
    is J(stage-start team with agent i's new policy) − J(stage-start team), the gain the update
    has at the stage-start occupancy. Their difference is the stale bias.

    Args:
        task: The chain (see :func:`exact_supported`).
        policies: The team at the start of the stage (copied).
    """

    def __init__(self, task: SymbolicTask, policies: Sequence[SymbolicAgent]) -> None:
        self.task = task
        self.start = [copy.deepcopy(policy) for policy in policies]
        self.start_value = exact_team_reward(task, self.start)
        self.value_before = self.start_value

    def before(self, policies: Sequence[SymbolicAgent]) -> None:
        """Value the team just before an agent's update."""
        self.value_before = exact_team_reward(self.task, policies)

    def after(self, policies: Sequence[SymbolicAgent], agent: int) -> dict[str, float]:
        """The update's exact true and stale gains."""
        stale_team = list(self.start)
        stale_team[agent] = policies[agent]
        return {"exact_true_gain": exact_team_reward(self.task, policies) - self.value_before,
                "exact_stale_gain": exact_team_reward(self.task, stale_team) - self.start_value}
