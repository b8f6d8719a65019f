"""Symbolic team tasks: each message is a few symbols from a small vocabulary.

Agents speak once each, in order ``agent_0, agent_1, ...``. An agent reads its private input and
the messages of the ``window`` agents that spoke just before it (all earlier agents when
``window`` is None), so information has to travel down the chain.

Every rule is vectorised over a batch of episodes with numpy: the PettingZoo env plays a
:class:`SymbolicBatch` of one episode, and trainers roll out thousands of episodes at once with
the same :class:`SymbolicBatch`, so both paths share one implementation of the task.

Families, each in the module of its env:

* :class:`~team_envs.symbolic.relay.RelayTask`: ``agent_0`` sees a secret; the last agent must
  say it.
* :class:`~team_envs.symbolic.referential.ReferentialTask`: ``agent_0`` sees a target object;
  the last agent sees shuffled candidates and must name the target's position.
* :class:`~team_envs.symbolic.compositional.CompositionalTask`: every agent holds a private
  number and a role (``add``, ``sub`` or ``relay``); the last agent must say the result of
  folding all roles over the numbers.

Relay and compositional chains are :class:`ChainTask` s: every agent has a correct message (the
secret, or the running total). With ``credit="final"`` only the last message is scored; with
``credit="steps"`` the verifier scores every message (the fraction of correct ones), so each
agent gets a learning signal from the start while its correct reply still depends on what the
agents before it say.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence, Sized
from typing import Any

import numpy as np
from gymnasium import spaces

from agentworld_envs.protocol.text_space import UnicodeText
from team_envs.core import TeamEpisode, TeamTask, agent_name, check_int, check_team_size

__all__ = [
    "SYMBOLS",
    "SymbolicTask",
    "SymbolicBatch",
    "SymbolicEpisode",
    "ChainTask",
]

SYMBOLS = "abcdefghijklmnopqrstuvwxyz"
"""Symbol names: symbol ``k`` is written as the ``k``-th lower-case letter."""
_SILENT = "_"
_MAX_MESSAGE_LENGTH = 8


class SymbolicTask(TeamTask):
    """Rules shared by the symbolic families; subclasses define inputs and the verifier.

    Args:
        n_agents: Team size, 2 to 8.
        vocab_size: Symbols per message position, 2 to 26.
        message_length: Symbols per message, 1 to 8.
        window: How many preceding speakers each agent hears (None: all of them).
        max_cycles: PettingZoo's cap on cycles (``pettingzoo.make(..., max_cycles=)``). An
            episode is one cycle (every agent speaks once), so any cap of 1 or more leaves it
            whole; below 1 raises ``ValueError``.
    """

    def __init__(self, n_agents: int = 3, vocab_size: int = 4, message_length: int = 1,
                 window: int | None = 1, max_cycles: int | None = None) -> None:
        if max_cycles is not None:
            check_int("max_cycles", max_cycles, 1)
        self.vocab_size = check_int("vocab_size", vocab_size, 2, len(SYMBOLS))
        self.message_length = check_int("message_length", message_length, 1,
                                         _MAX_MESSAGE_LENGTH)
        n_agents = check_team_size(n_agents)
        self.window = None if window is None else check_int("window", window, 1, n_agents)
        self.roles = self._roles(n_agents)
        self._heard_masks = [self._heard_mask(agent) for agent in range(n_agents)]

    def _roles(self, n_agents: int) -> tuple[str, ...]:
        return ("sender",) + ("relay",) * (n_agents - 2) + ("receiver",)

    @property
    def pad(self) -> int:
        """The value marking an empty (unsaid, unheard or invalid) symbol: ``vocab_size``."""
        return self.vocab_size

    @abc.abstractmethod
    def private_nvec(self, agent: int) -> tuple[int, ...]:
        """The number of values of each entry of ``agent``'s private input (may be empty)."""

    @abc.abstractmethod
    def sample_private(self, rng: np.random.Generator, size: int) -> list[np.ndarray]:
        """Draw ``size`` episodes' private inputs: one ``(size, len(nvec))`` array per agent."""

    @abc.abstractmethod
    def score(self, private: Sequence[np.ndarray], messages: np.ndarray) -> np.ndarray:
        """The verifier: team reward in [0, 1] per episode, from ``(size, n, length)`` messages."""

    @abc.abstractmethod
    def describe_private(self, agent: int, private: np.ndarray) -> str:
        """One episode's private input of ``agent``, as text."""

    def hears(self, agent: int) -> range:
        """The speakers whose messages ``agent`` reads."""
        start = 0 if self.window is None else max(0, agent - self.window)
        return range(start, agent)

    def _heard_mask(self, agent: int) -> np.ndarray:
        """Which of the flat ``n * length`` message symbols ``agent`` hears."""
        mask = np.zeros((self.n_agents, self.message_length), dtype=bool)
        speakers = self.hears(agent)
        mask[speakers.start:speakers.stop] = True
        return mask.reshape(-1)

    def context(self, messages: np.ndarray, agent: int) -> np.ndarray:
        """What ``agent`` hears: the ``(size, n * length)`` messages, padded where unheard."""
        return np.where(self._heard_masks[agent], messages.reshape(messages.shape[0], -1),
                        self.pad)

    def observation_space(self, agent: int) -> spaces.Dict:
        """``text``, ``turn``, the heard ``context`` and, if the agent has one, ``private``."""
        entries: dict[str, spaces.Space] = {
            "text": UnicodeText(),
            "turn": spaces.Discrete(self.n_agents + 1),
            "context": spaces.MultiDiscrete(
                [self.vocab_size + 1] * (self.n_agents * self.message_length)),
        }
        if self.private_nvec(agent):
            entries["private"] = spaces.MultiDiscrete(list(self.private_nvec(agent)))
        return spaces.Dict(entries)

    def state_space(self) -> spaces.MultiDiscrete:
        """The global state: the turn, every agent's message symbols (``pad`` where unsaid)
        and every agent's private input, flat."""
        return spaces.MultiDiscrete(
            [self.n_agents + 1] + [self.vocab_size + 1] * (self.n_agents * self.message_length)
            + [value for agent in range(self.n_agents) for value in self.private_nvec(agent)])

    def action_space(self, agent: int) -> spaces.MultiDiscrete:
        """A message: ``message_length`` symbols in ``[0, vocab_size)``."""
        return spaces.MultiDiscrete([self.vocab_size] * self.message_length)

    def batch(self, private: Sequence[np.ndarray]) -> SymbolicBatch:
        """A batch of fresh episodes with these private inputs."""
        return SymbolicBatch(self, list(private))

    def new_episode(self, rng: np.random.Generator,
                    options: dict[str, Any] | None = None) -> SymbolicEpisode:
        """One episode (a batch of one) with inputs drawn from ``rng``; ``options`` asking for
        a held-out split raise ``ValueError``, as on the text teams."""
        self.refuse_held_out(options)
        return SymbolicEpisode(self, self.batch(self.sample_private(rng, 1)))

    def parse_message(self, action: Any) -> np.ndarray | None:
        """Read a message from symbol ids (an int, a sequence, an array) or letters (``"c a"``).

        Returns None when the action is not a valid message.
        """
        if isinstance(action, str):  # split no further than one word past a whole message
            words = action.split(maxsplit=self.message_length)
            letters = list(words[0]) if len(words) == 1 and len(
                words[0]) <= self.message_length else words
            values = [SYMBOLS.find(letter) if len(letter) == 1 else -1 for letter in letters]
        elif isinstance(action, bool | np.bool_):
            return None
        elif isinstance(action, int | np.integer):
            values = [int(action)]
        else:
            try:  # a sized action of the wrong length is refused before numpy reads it
                if isinstance(action, Sized) and len(action) != self.message_length:
                    return None
                array = np.asarray(action)
            except Exception:  # whatever a foreign object's __len__ or __array__ raises
                return None
            if array.dtype.kind not in "iu" or array.ndim != 1:
                return None
            values = array.tolist()
        if len(values) != self.message_length or not all(
                0 <= v < self.vocab_size for v in values):
            return None
        return np.array(values, dtype=np.int64)

    def symbols(self, message: np.ndarray) -> str:
        """A message as letters, ``_`` for an empty symbol."""
        return " ".join(SYMBOLS[v] if v < self.vocab_size else _SILENT
                        for v in np.asarray(message).tolist())


class SymbolicBatch:
    """A batch of episodes played in lockstep: what the env and the trainers' fast path step.

    Args:
        task: The task.
        private: One ``(size, len(nvec))`` private-input array per agent.
    """

    def __init__(self, task: SymbolicTask, private: list[np.ndarray]) -> None:
        self.task = task
        self.private = private
        self.messages = np.full((private[0].shape[0], task.n_agents, task.message_length),
                                task.pad, dtype=np.int64)
        self.turn = 0

    @property
    def size(self) -> int:
        """The number of episodes."""
        return self.messages.shape[0]

    @property
    def speaker(self) -> int | None:
        """The agent whose turn it is; None after the last agent has spoken."""
        return self.turn if self.turn < self.task.n_agents else None

    def observe(self, agent: int) -> tuple[np.ndarray, np.ndarray]:
        """``(context, private)`` arrays of ``agent`` for every episode."""
        return self.task.context(self.messages, agent), self.private[agent]

    def act(self, messages: np.ndarray) -> None:
        """Record the speaker's ``(size, length)`` integer messages; a message with an
        out-of-range symbol becomes an empty message, as in the env.

        Raises:
            TypeError: ``messages`` are not integers.
        """
        messages = np.asarray(messages)
        if messages.dtype.kind not in "iu":
            raise TypeError(f"messages must be integer symbol ids, got dtype {messages.dtype}")
        messages = messages.reshape(self.size, -1)
        valid = ((messages >= 0) & (messages < self.task.vocab_size)).all(axis=1, keepdims=True)
        self.record(np.where(valid, messages, self.task.pad))

    def record(self, messages: np.ndarray) -> None:
        """Record the speaker's messages, already checked to hold only symbols and pads.

        Raises:
            RuntimeError: every agent has spoken already.
        """
        if self.speaker is None:
            raise RuntimeError(f"all {self.task.n_agents} agents have spoken; start a new batch")
        self.messages[:, self.turn] = messages
        self.turn += 1

    def score(self) -> np.ndarray:
        """The team reward of every episode."""
        return self.task.score(self.private, self.messages)


class SymbolicEpisode(TeamEpisode):
    """A PettingZoo episode: a :class:`SymbolicBatch` of one, with text rendering.

    The text of each private input, of each message and of the fixed parts of each agent's
    observation text is built once, when the episode starts or the message is recorded.
    """

    def __init__(self, task: SymbolicTask, batch: SymbolicBatch) -> None:
        self.task = task
        self.batch = batch
        self._inputs = [task.describe_private(agent, batch.private[agent][0])
                        for agent in range(task.n_agents)]
        self._said = [task.symbols(batch.messages[0, agent]) for agent in range(batch.turn)]
        self._frames = [self._frame(agent) for agent in range(task.n_agents)]

    @property
    def speaker(self) -> int | None:
        """The agent whose turn it is."""
        return self.batch.speaker

    def observe(self, agent: int) -> dict[str, Any]:
        """Text, turn, heard context and private input of ``agent``."""
        context, private = self.batch.observe(agent)
        observation = {"text": self._text(agent), "turn": self.batch.turn,
                       "context": context[0]}
        if private.shape[1]:
            observation["private"] = private[0].copy()
        return observation

    def _frame(self, agent: int) -> tuple[str, str, str]:
        """``agent``'s observation text before the turn, before the heard messages, and after."""
        task = self.task
        return (f"{task.family} team; you are {agent_name(agent)} ({task.roles[agent]}); turn ",
                f" of {task.n_agents}\nyour input: {self._inputs[agent]}\nheard: ",
                f"\nreply with {task.message_length} symbol(s) from: "
                f"{' '.join(SYMBOLS[:task.vocab_size])}")

    def _text(self, agent: int) -> str:
        turn = self.batch.turn
        speakers = self.task.hears(agent)
        heard = "; ".join(f"{agent_name(j)}: {self._said[j]}"
                          for j in range(speakers.start, min(speakers.stop, turn)))
        before_turn, before_heard, after = self._frames[agent]
        return f"{before_turn}{turn}{before_heard}{heard or 'nothing yet'}{after}"

    def act(self, action: Any) -> dict[str, Any]:
        """Record the speaker's message; an unreadable one becomes an empty message."""
        message = self.task.parse_message(action)
        invalid = message is None
        if invalid:
            message = np.full(self.task.message_length, self.task.pad, dtype=np.int64)
        self.batch.record(message)
        self._said.append(self.task.symbols(message))
        return {"invalid_action": invalid, "message": self._said[-1]}

    def verdict(self) -> tuple[float, dict[str, Any]]:
        """The team reward, and whether it is full marks."""
        reward = float(self.batch.score()[0])
        return reward, {"passed": reward == 1.0, "reward": reward}

    def state(self) -> np.ndarray:
        """The turn, all messages and all private inputs (:meth:`SymbolicTask.state_space`)."""
        batch = self.batch
        return np.concatenate([[batch.turn], batch.messages[0].reshape(-1),
                               *(private[0] for private in batch.private)]).astype(np.int64)

    def render(self) -> str:
        """Private inputs and messages so far."""
        task = self.task
        said = self._said + ["..."] * (task.n_agents - len(self._said))
        return "\n".join(f"{agent_name(agent)} ({task.roles[agent]}) [{self._inputs[agent]}]: "
                         f"{said[agent]}" for agent in range(task.n_agents))


class ChainTask(SymbolicTask):
    """A chain in which every agent has a correct message; the verifier checks the last or all.

    Args:
        credit: ``"final"`` scores the last message, ``"steps"`` every message.
        **kwargs: See :class:`SymbolicTask`.
    """

    def __init__(self, credit: str = "final", **kwargs: Any) -> None:
        if credit not in ("final", "steps"):
            raise ValueError(f"credit must be 'final' or 'steps', got {credit!r}")
        self.credit = credit
        super().__init__(**kwargs)

    @abc.abstractmethod
    def targets(self, private: Sequence[np.ndarray]) -> np.ndarray:
        """The correct message of every agent: ``(size, n, length)``."""

    def score(self, private: Sequence[np.ndarray], messages: np.ndarray) -> np.ndarray:
        """Fraction of correct symbols in the last message, or in all messages."""
        correct = messages == self.targets(private)  # means as sums: the same floats, faster
        if self.credit == "final":
            return correct[:, -1].sum(axis=1) / self.message_length
        return correct.sum(axis=(1, 2)) / (self.n_agents * self.message_length)
