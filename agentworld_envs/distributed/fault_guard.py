"""Turns an exception in one sub-env's ``step`` into the end of that sub-env's episode only."""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym

from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.protocol.warn_outside import warn_outside

__all__ = ["FaultGuard", "fault_text"]

_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
"""The terminal colour codes in Ray's error messages."""


def fault_text(exc: BaseException) -> str:
    """``Type: message``, the message's first line only; for a Ray actor whose constructor
    raised, that error's own ``Type: message`` (the last line of the traceback Ray sends)."""
    message = _COLOUR.sub("", str(exc)).strip().splitlines()
    if getattr(exc, "actor_init_failed", False) and message:
        return message[-1].strip()
    return f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__


class FaultGuard(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A ``step`` that raises instead returns the last observation, reward 0, ``truncated`` and
    ``info["fault"]`` (``Type: message``), and warns; the vector env's autoreset (or the
    caller, with autoreset disabled) then starts a fresh episode. A spent fault budget
    (``TooManyFaultsError``, past the env's ``max_faults``) is raised: the run stops.

    Example:
        >>> import gymnasium as gym, floor_tasks
        >>> env = FaultGuard(gym.make("AgentFloor/A1-v0"))
        >>> _ = env.reset(seed=0)
        >>> env.step("The answer.")[2]
        True
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        self._last_observation: Any = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset, keeping the observation for a faulted step."""
        self._last_observation, info = self.env.reset(**kwargs)
        return self._last_observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step; an exception ends the episode as truncated."""
        try:
            observation, reward, terminated, truncated, info = self.env.step(action)
        except TooManyFaultsError:  # the user's fault budget is spent: the run stops
            raise
        except Exception as exc:  # noqa: BLE001 - any sub-env error costs that sub-env only
            fault = fault_text(exc)
            warn_outside(f"a sub-env's step raised {fault}; its episode is truncated",
                         RuntimeWarning)  # the fault's text is new every time
            return self._last_observation, 0.0, False, True, {"fault": fault}
        self._last_observation = observation
        return observation, reward, terminated, truncated, info
