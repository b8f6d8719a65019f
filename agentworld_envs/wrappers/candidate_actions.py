"""Text actions as a ``Discrete`` choice among the env's admissible candidate actions.

The env must offer ``candidate_actions() -> list[str]`` (found with ``get_wrapper_attr``, so on
the unwrapped env or any wrapper): the admissible actions of its current state. AgentFloor envs
return their variant's gold steps among distractors; AgentWorld envs return their scenario's
candidates. The list is read again after every reset and step, so it may change between states.

Padding policy: the action space is ``Discrete(max_candidates)`` for every state. When a state has
``n < max_candidates`` candidates, indices ``0 .. n-1`` choose them and every index from ``n`` up
is padding: it plays ``fallback_action`` (by default a plain-text give-up answer, which ends a
tool-use episode unsolved), and the step's ``info["padding_action"]`` is True. A state with more
than ``max_candidates`` candidates raises ``ValueError``, never drops a candidate.

``info["action_mask"]`` (bool, one entry per index, True for real candidates) and
``info["candidates"]`` (the current list) come with every reset and step, and
:meth:`DiscreteCandidateActions.action_masks` returns the current mask, as
``sb3_contrib.MaskablePPO`` expects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from agentworld_envs.protocol.integers import check_int

__all__ = ["GIVE_UP_ACTION", "CandidateMenu", "DiscreteCandidateActions"]

GIVE_UP_ACTION = "I could not determine the answer."
"""The default action of a padding index: a final answer that solves nothing."""


class CandidateMenu:
    """A state's candidate actions padded to a fixed number of choices.

    Args:
        candidates: The admissible actions, in the env's order.
        size: Number of choices (``max_candidates``).
        fallback_action: What a padding index plays.

    Raises:
        ValueError: when there are more candidates than ``size``.

    Example:
        >>> menu = CandidateMenu(["a", "b"], size=3, fallback_action="give up")
        >>> menu.action(1), menu.action(2), menu.mask.tolist()
        ('b', 'give up', [True, True, False])
    """

    def __init__(self, candidates: Sequence[str], size: int, fallback_action: str) -> None:
        if len(candidates) > size:
            raise ValueError(f"{len(candidates)} candidate actions do not fit "
                             f"max_candidates={size}; raise max_candidates")
        self.candidates = tuple(candidates)
        self.fallback_action = fallback_action
        self.mask = np.arange(size) < len(self.candidates)
        """True for the indices that choose a real candidate."""

    def is_padding(self, index: int) -> bool:
        """Whether ``index`` is a padding index."""
        return index >= len(self.candidates)

    def action(self, index: int) -> str:
        """The text action of ``index``: its candidate, or the fallback for padding."""
        if not 0 <= index < len(self.mask):
            raise ValueError(f"action index {index} is outside 0..{len(self.mask) - 1}")
        return self.fallback_action if self.is_padding(index) else self.candidates[index]


class DiscreteCandidateActions(gym.ActionWrapper, gym.utils.RecordConstructorArgs):
    """Make the action ``Discrete(max_candidates)``: an index into the admissible candidates.

    See the module docstring for the padding policy and the action mask.

    Args:
        env: A text-action env offering ``candidate_actions()``.
        max_candidates: Number of choices, at least the largest candidate list of the env.
        fallback_action: The text action played by a padding index.

    Example:
        >>> import gymnasium as gym, floor_tasks
        >>> env = DiscreteCandidateActions(gym.make("AgentFloor/A01-v0"), max_candidates=8)
        >>> obs, info = env.reset(seed=0, options={"variant": "v0"})
        >>> info["action_mask"].tolist()
        [True, True, True, True, True, False, False, False]
        >>> gold = info["candidates"].index(floor_tasks.solution("A01", "v0")[0])
        >>> env.step(gold)[1]
        1.0
        >>> env.reset(seed=0, options={"variant": "v0"})[1]["candidates"][0] == env.action(0)
        True
        >>> env.step(7)[4]["padding_action"], env.action(7)
        (True, 'I could not determine the answer.')

    Change logs:
        * v0.1.0 - Initially added.
    """

    def __init__(self, env: gym.Env, max_candidates: int = 32,
                 fallback_action: str = GIVE_UP_ACTION) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, max_candidates=max_candidates, fallback_action=fallback_action)
        gym.ActionWrapper.__init__(self, env)
        if not isinstance(fallback_action, str):
            raise ValueError(f"fallback_action must be a text action, got {fallback_action!r}")
        self.action_space = spaces.Discrete(check_int("max_candidates", max_candidates, 1))
        self.fallback_action = fallback_action
        self._menu: CandidateMenu | None = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset the env and read the first state's candidates."""
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, self._with_menu(info)

    def step(self, action: int) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Play the candidate chosen by ``action``, then read the next state's candidates."""
        padding = self._current_menu().is_padding(int(action))
        observation, reward, terminated, truncated, info = self.env.step(self.action(action))
        info = self._with_menu(info)
        info["padding_action"] = padding
        return observation, reward, terminated, truncated, info

    def action(self, action: int) -> str:
        """The text action of an index in the current state."""
        return self._current_menu().action(int(action))

    def action_masks(self) -> np.ndarray:
        """The current action mask (True for real candidates), for ``MaskablePPO``."""
        return self._current_menu().mask.copy()

    def _current_menu(self) -> CandidateMenu:
        if self._menu is None:
            raise gym.error.ResetNeeded("call reset() before choosing a candidate action")
        return self._menu

    def _with_menu(self, info: dict[str, Any]) -> dict[str, Any]:
        self._menu = None  # a state whose candidates do not fit leaves no stale menu to play
        candidates = self.env.get_wrapper_attr("candidate_actions")()
        self._menu = CandidateMenu(candidates, self.action_space.n, self.fallback_action)
        return {**info, "candidates": list(self._menu.candidates),
                "action_mask": self._menu.mask.copy()}
