"""The shared-context team env: n agents take turns appending messages to one context.

A :class:`TeamTask` holds the rules of a task family (spaces, who speaks, the verifier); each
episode is a :class:`TeamEpisode`. :class:`SharedContextEnv` turns any task into a PettingZoo AEC
env and :class:`SharedContextParallelEnv` into its turn-based Parallel form, so every task module
only declares::

    class raw_env(SharedContextEnv):
        task_type = MyTask

    def env(**kwargs):
        return wrap(raw_env(**kwargs))

    def parallel_env(**kwargs):
        return SharedContextParallelEnv(raw_env(**kwargs))

The team reward arrives once, when the episode ends: every agent receives the verifier's reward.
An episode that hits its message cap is truncated with reward 0. A message of any content never
raises: an unreadable one is recorded as an invalid (empty) message and flagged with
``info["invalid_action"]``. Using an env out of order (``step``, ``observe`` or ``last`` before
``reset``, ``step`` or ``last`` after the episode ended) raises :class:`ResetNeeded`.

A task holds rules only, and each env its own episode, so envs may share one task instance
(``team_task=``, e.g. ``pettingzoo.make("aec", env_id, team_task=other.unwrapped.task)``): a
task that is costly to build (a reasoning-gym dataset) is built once for many episode slots.
An env is plain Python, so ``copy.deepcopy`` and ``pickle`` carry its whole state: a copy made
mid-episode goes on with that episode.
"""

from __future__ import annotations

import abc
import difflib
import inspect
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import wrappers

from agentworld_envs.protocol.integers import check_int
from agentworld_envs.protocol.seeding import generator_state, restore_generator

_UNEXPECTED = re.compile(r"got an unexpected keyword argument '(\w+)'")
"""How Python refuses a keyword a constructor does not take."""

__all__ = [
    "MIN_AGENTS",
    "MAX_AGENTS",
    "ResetNeeded",
    "TeamTask",
    "TeamEpisode",
    "SharedContextEnv",
    "SharedContextParallelEnv",
    "agent_name",
    "check_flag",
    "check_int",
    "check_roles",
    "check_team_size",
    "wrap",
]

MIN_AGENTS = 2
MAX_AGENTS = 8
_LASTING_INFO = ("role", "team_reward", "verdict")
"""Info keys that hold for an agent beyond its own last message."""


class ResetNeeded(gymnasium.error.ResetNeeded, AssertionError):
    """A team env was used before ``reset()``, or stepped after its episode ended.

    It is both Gymnasium's ``ResetNeeded`` and the ``AssertionError`` that PettingZoo's
    order-enforcing wrapper raises for the same misuse, so either convention catches it.
    """


def agent_name(index: int) -> str:
    """The PettingZoo name of agent ``index``: ``agent_0``, ``agent_1``, ..."""
    return f"agent_{index}"


def check_team_size(n_agents: int) -> int:
    """Validate a team size (2 to 8 agents) and return it."""
    if not isinstance(n_agents, int | np.integer) or not MIN_AGENTS <= n_agents <= MAX_AGENTS:
        raise ValueError(f"n_agents must be an integer from {MIN_AGENTS} to {MAX_AGENTS}, "
                         f"got {n_agents!r}")
    return int(n_agents)


def check_flag(name: str, value: Any) -> bool:
    """``value`` as a bool (a numpy bool too); a ``ValueError`` naming ``name`` for anything
    else, which a truth test would read as on or off (``"false"`` as on)."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_roles(roles: Sequence[str], n_agents: int | None = None) -> tuple[str, ...]:
    """Validate a team's roles (2 to 8 of them, as many as ``n_agents`` when that is given) and
    return them as a tuple."""
    if isinstance(roles, str):
        raise ValueError(f"roles must be a list of role names, not the string {roles!r}")
    if not isinstance(roles, Iterable):
        raise ValueError(f"roles must be a list of role names, got {roles!r}")
    roles = tuple(roles)
    if not all(isinstance(role, str) for role in roles):
        raise ValueError(f"roles must be role names (strings), got {list(roles)!r}")
    if n_agents is not None and check_team_size(n_agents) != len(roles):
        raise ValueError(f"n_agents={n_agents!r} but {len(roles)} roles were given; give one "
                         f"role per agent, or leave n_agents out")
    if not MIN_AGENTS <= len(roles) <= MAX_AGENTS:
        raise ValueError(f"roles must name {MIN_AGENTS} to {MAX_AGENTS} roles, one per agent, "
                         f"got {len(roles)}")
    return roles


class TeamEpisode(abc.ABC):
    """One episode of a team task: the shared context and the rules that advance it."""

    @property
    @abc.abstractmethod
    def speaker(self) -> int | None:
        """The index of the agent whose turn it is; None once the episode has ended."""

    @property
    def truncated(self) -> bool:
        """True when the episode hit its message cap before ending."""
        return False

    @abc.abstractmethod
    def observe(self, agent: int) -> dict[str, Any]:
        """What ``agent`` sees now: an element of its observation space."""

    @abc.abstractmethod
    def act(self, action: Any) -> dict[str, Any]:
        """Append the speaker's message to the context and return step info. Never raises."""

    @abc.abstractmethod
    def verdict(self) -> tuple[float, dict[str, Any]]:
        """The verifier's team reward for the finished episode, with its details."""

    @abc.abstractmethod
    def render(self) -> str:
        """The episode so far as text."""

    def state(self) -> np.ndarray:
        """The global state, an element of the task's :meth:`TeamTask.state_space` (tasks
        that have one)."""
        raise NotImplementedError


class TeamTask(abc.ABC):
    """The rules of a task family: the team's roles and spaces, and how episodes start.

    A task keeps no episode state (that lives in its :class:`TeamEpisode`), so one instance may
    serve several envs at once (``team_task=`` of :class:`SharedContextEnv`).
    """

    family: ClassVar[str]
    """The task family's name (``relay``, ``arithmetic_chain``, ...)."""
    roles: tuple[str, ...]

    @property
    def n_agents(self) -> int:
        """The team size."""
        return len(self.roles)

    @abc.abstractmethod
    def observation_space(self, agent: int) -> spaces.Dict:
        """The observation space of ``agent``; a Dict with a ``"text"`` entry."""

    @abc.abstractmethod
    def action_space(self, agent: int) -> spaces.Space:
        """The action (message) space of ``agent``."""

    @abc.abstractmethod
    def new_episode(self, rng: np.random.Generator,
                    options: dict[str, Any] | None = None) -> TeamEpisode:
        """Start an episode, drawing every random choice from ``rng``."""

    def state_space(self) -> spaces.Space | None:
        """The space of the episodes' global state (for centralised critics); None where the
        task has no global state short of the agents' observations."""
        return None

    def refuse_held_out(self, options: dict[str, Any] | None) -> None:
        """Raise ``ValueError`` for ``options`` asking for a held-out split, on a task that
        keeps none (every episode is drawn from the seed): an evaluation would otherwise get
        training draws without a word."""
        split = (options or {}).get("split", "train")
        if split != "train":
            raise ValueError(f"{self.family} keeps no held-out split (options['split'] = "
                             f"{split!r}): every episode is drawn from the seed")


class SharedContextEnv(AECEnv):
    """A :class:`TeamTask` as a PettingZoo AEC env; subclasses set ``task_type``.

    Tasks with a global state (the symbolic families) give the env ``state_space`` and
    ``state()``, as PettingZoo's ``state_test`` expects; on the others ``state()`` raises
    ``NotImplementedError``, as PettingZoo's base env does.

    The env is not an ``EzPickle``: that rebuilds an env from its constructor arguments, never
    reset, so a copy or pickle made mid-episode lost the episode (PettingZoo's tictactoe was
    fixed the same way, PettingZoo#1307). Everything here is plain Python and copies as is.

    Args:
        render_mode: ``"ansi"``: :meth:`render` returns the shared context as text;
            ``"human"``: it prints it.
        team_task: A ``task_type`` instance to play, possibly shared with other envs (each env
            keeps its own episode), instead of building one from ``task_kwargs``.
        **task_kwargs: Passed to ``task_type``.

    Raises:
        TypeError: ``team_task`` is not a ``task_type``, or comes with ``task_kwargs``; a name
            in ``task_kwargs`` that ``task_type`` takes no setting of (the message lists them).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"], "name": "shared_context_v0",
        "is_parallelizable": False, "render_fps": 1}
    task_type: ClassVar[type[TeamTask]]

    @classmethod
    def _build_task(cls, task_kwargs: Mapping[str, Any]) -> TeamTask:
        """``task_type(**task_kwargs)``; a setting it does not take is refused naming the env's
        settings (the task's constructor said only ``FloorTeamTask.__init__() got an
        unexpected keyword argument``, naming a class the user never wrote)."""
        try:
            return cls.task_type(**task_kwargs)
        except TypeError as error:
            unknown = _UNEXPECTED.search(str(error))
            if unknown is None or unknown[1] not in task_kwargs:
                raise
        known = {"render_mode"}
        for klass in cls.task_type.__mro__:  # each constructor hands on its **kwargs
            if (init := klass.__dict__.get("__init__")) is None:
                continue
            parameters = inspect.signature(init).parameters.values()
            known |= {p.name for p in parameters if p.name != "self" and p.kind in (
                p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            if not any(p.kind is p.VAR_KEYWORD for p in parameters):
                break
        near = difflib.get_close_matches(unknown[1], known, n=1)
        raise TypeError(f"{cls.metadata['name']} takes no setting {unknown[1]!r}"
                        f"{f' (did you mean {near[0]!r}?)' if near else ''}; its settings: "
                        f"{', '.join(sorted(known))}") from None

    def __init__(self, render_mode: str | None = None, *, team_task: TeamTask | None = None,
                 **task_kwargs: Any) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unsupported render_mode {render_mode!r}; use 'ansi', 'human' "
                             f"or None")
        self.render_mode = render_mode
        if team_task is None:
            self.task = self._build_task(task_kwargs)
        elif task_kwargs:
            raise TypeError(f"give team_task or the task's keyword arguments, not both (got "
                            f"team_task and {sorted(task_kwargs)})")
        elif not isinstance(team_task, self.task_type):
            raise TypeError(f"team_task must be an instance of {self.task_type.__name__}, got "
                            f"{type(team_task).__name__}")
        else:
            self.task = team_task
        self.possible_agents = [agent_name(i) for i in range(self.task.n_agents)]
        self._index = {name: i for i, name in enumerate(self.possible_agents)}
        self._observation_spaces = {name: self.task.observation_space(i)
                                    for name, i in self._index.items()}
        self._action_spaces = {name: self.task.action_space(i) for name, i in self._index.items()}
        if (state_space := self.task.state_space()) is not None:
            self.state_space = state_space
        self._rng: np.random.Generator | None = None
        self.episode: TeamEpisode | None = None

    def observation_space(self, agent: str) -> spaces.Dict:
        """The cached observation space of ``agent``."""
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The cached action space of ``agent``."""
        return self._action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        """The env's random generator, seeded by ``reset(seed=...)``."""
        if self._rng is None:
            self._rng, _ = seeding.np_random()
        return self._rng

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode; the same seed gives the same episode. A reset that raises (a bad
        option) leaves the episode under way and ``np_random`` as they were."""
        rng = self.np_random if seed is None else seeding.np_random(seed)[0]
        drawn = generator_state(rng)
        try:
            self.episode = self.task.new_episode(rng, options)
        except Exception:
            restore_generator(rng, drawn)  # the draws of the refused episode are undone
            raise
        self._rng = rng
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {name: {"role": self.task.roles[i]} for name, i in self._index.items()}
        self.agent_selection = self.possible_agents[self.episode.speaker]

    def require_episode(self, call: str, *, live: bool = False) -> TeamEpisode:
        """The current episode; :class:`ResetNeeded` when there is none (or, with ``live``,
        when every agent has left it)."""
        if self.episode is None:
            raise ResetNeeded(f"reset() needs to be called before {call}()")
        if live and not self.agents:
            raise ResetNeeded(f"the episode has ended; call reset() before {call}()")
        return self.episode

    def observe(self, agent: str) -> dict[str, Any]:
        """What ``agent`` sees now."""
        return self.require_episode("observe").observe(self._index[agent])

    def last(self, observe: bool = True) -> tuple[Any, ...]:
        """The selected agent's observation, reward, termination, truncation and info;
        :class:`ResetNeeded` once every agent has left the episode."""
        self.require_episode("last", live=True)
        return super().last(observe)

    def step(self, action: Any) -> None:
        """Append the selected agent's message; at the end every agent gets the team reward."""
        self.require_episode("step", live=True)
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        self.infos[agent] = {"role": self.task.roles[self._index[agent]],
                             **self.episode.act(action)}
        episode, speaker = self.episode, self.episode.speaker
        if speaker is None or episode.truncated:
            self._finish(episode.truncated)
        else:
            self.agent_selection = self.possible_agents[speaker]
        self._accumulate_rewards()

    def _finish(self, truncated: bool) -> None:
        reward, verdict = (0.0, {"passed": False, "reason": "message cap reached"}) if (
            truncated) else self.episode.verdict()
        for name in self.agents:
            self.rewards[name] = float(reward)
            self.terminations[name] = not truncated
            self.truncations[name] = truncated
            self.infos[name] = {**self.infos[name], "team_reward": float(reward),
                                "verdict": verdict}
        self.agent_selection = self.agents[0]

    def state(self) -> np.ndarray:
        """The episode's global state, in ``state_space``."""
        if not hasattr(self, "state_space"):
            raise NotImplementedError(f"{type(self.task).__name__} has no global state; the "
                                      f"agents' observations are all there is")
        return self.require_episode("state").state()

    def render(self) -> str | None:
        """The shared context as text in ``ansi`` mode, printed in ``human`` mode (returning
        None, as PettingZoo's ``render_test`` expects; characters the terminal cannot show,
        such as lone surrogates, are printed as escapes); None without an episode, and without a
        mode (with PettingZoo's warning)."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render "
                                  "mode.")
            return None
        if self.episode is None:
            return None
        text = self.episode.render()
        if self.render_mode == "human":
            encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
            print(text.encode(encoding, "backslashreplace").decode(encoding))
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""


class SharedContextParallelEnv(ParallelEnv):
    """The turn-based Parallel form of a :class:`SharedContextEnv`.

    One ``step(actions)`` plays one message: only the action of the agent whose turn it is
    (``infos[agent]["next_speaker"]``, and ``infos[agent]["active"]`` True for that agent
    alone, the mask MARL libraries read) is used; a missing one counts as an invalid
    message, and the other agents' actions are ignored, so a library may pass every agent's.
    ``actions`` must be a mapping whose keys are agent names (``possible_agents``). All
    agents stay live until the episode ends, then all finish together with the team reward.
    PettingZoo's ``aec_to_parallel`` would instead make every agent speak at once, before seeing
    the messages of the same round, which breaks the shared-context chain.
    """

    def __init__(self, aec_env: SharedContextEnv) -> None:
        self.aec_env = aec_env
        self.possible_agents = aec_env.possible_agents
        self.metadata = aec_env.metadata
        self.render_mode = aec_env.render_mode
        self.agents: list[str] = []
        if hasattr(aec_env, "state_space"):
            self.state_space = aec_env.state_space

    @property
    def task(self) -> TeamTask:
        """The task the env plays."""
        return self.aec_env.task

    def observation_space(self, agent: str) -> spaces.Dict:
        """The cached observation space of ``agent``."""
        return self.aec_env.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        """The cached action space of ``agent``."""
        return self.aec_env.action_space(agent)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Start an episode; returns every agent's observation and info."""
        self.aec_env.reset(seed=seed, options=options)
        self.agents = self.aec_env.agents[:]
        return self._observations(), self._infos()

    def step(self, actions: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
        """Play the current speaker's message.

        Raises:
            ResetNeeded: before ``reset()``, or after the episode ended.
            TypeError: ``actions`` is not a mapping.
            ValueError: a key of ``actions`` is not an agent of this env.
        """
        aec = self.aec_env
        aec.require_episode("step")
        if not self.agents:
            raise ResetNeeded("the episode has ended; call reset() before step()")
        if not isinstance(actions, Mapping):
            raise TypeError(f"actions must be a dict of agent name -> action, got "
                            f"{type(actions).__name__}")
        unknown = [name for name in actions if name not in self.possible_agents]
        if unknown:
            raise ValueError(f"actions for unknown agents {unknown!r}; the agents are "
                             f"{self.possible_agents}")
        speaker = aec.agent_selection
        aec.step(actions.get(speaker))
        observations = self._observations()
        rewards = {name: float(aec.rewards[name]) for name in self.agents}
        terminations = {name: aec.terminations[name] for name in self.agents}
        truncations = {name: aec.truncations[name] for name in self.agents}
        infos = self._infos(speaker)
        if any(terminations.values()) or any(truncations.values()):
            while aec.agents:
                aec.step(None)
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _observations(self) -> dict[str, Any]:
        return {name: self.aec_env.observe(name) for name in self.agents}

    def _infos(self, spoke: str | None = None) -> dict[str, dict[str, Any]]:
        """This step's infos: the message's own (``invalid_action``, ...) for the agent that
        spoke, only the lasting ones (role; at the end the team reward and verdict) for the
        others, whose AEC infos still describe their earlier messages."""
        aec = self.aec_env
        ended = any(aec.terminations.values()) or any(aec.truncations.values())
        speaker = None if ended else aec.agent_selection
        infos = {}
        for name in self.agents:
            info = aec.infos[name] if name == spoke else {
                key: value for key, value in aec.infos[name].items() if key in _LASTING_INFO}
            infos[name] = {**info, "next_speaker": speaker, "active": name == speaker}
        return infos

    def state(self) -> np.ndarray:
        """The episode's global state (tasks that have one)."""
        return self.aec_env.state()

    def render(self) -> str | None:
        """The shared context as text in ``ansi`` mode."""
        return self.aec_env.render()

    def close(self) -> None:
        """Close the underlying AEC env."""
        self.aec_env.close()


class _DirectLastOrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` whose ``last()`` asks the env in one call.

    The inherited ``last()`` runs on the wrapper: every step it reads five attributes through the
    wrapper's ``__getattr__`` and observes through two wrapper layers. The result is the same.
    """

    def last(self, observe: bool = True) -> tuple[Any, ...]:
        """The env's ``last()``; before ``reset()`` the error the inherited one raises."""
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.last(observe)


def wrap(raw: SharedContextEnv) -> AECEnv:
    """The standard AEC wrapping: ``OrderEnforcingWrapper`` (with a direct ``last()``).

    ``AssertOutOfBoundsWrapper`` is left out on purpose: an out-of-space message is the env's to
    judge (it becomes an invalid message), not an error.
    """
    return _DirectLastOrderEnforcingWrapper(raw)
