"""PettingZoo team envs as one Stable-Baselines3 ``VecEnv``: parameter sharing.

Every agent of every copy of a Parallel env gets its own vector slot, so one single-agent
learner (``PPO``, ``A2C``, ...) trains one policy that all agents share, as SuperSuit's
``pettingzoo_env_to_vec_env_v1`` + ``concat_vec_envs_v1`` do, without SuperSuit. Slots are
copy-major: slot ``c * n_agents + i`` is agent ``possible_agents[i]`` of copy ``c``.

- Observations are always a ``Dict``: the agent's own ``Dict`` (or ``{"observation": ...}``),
  plus ``"agent_index"`` (``Discrete(n_agents)``, the agent's place in ``possible_agents``), so
  a shared policy can still act by role. Agents may observe different things: the shared space
  holds every agent's parts (a part whose space differs between agents splits into
  ``<name>_0``, ``<name>_1``, ...), and a part an agent lacks is blank (``""``, zeros, or the
  space's lowest value); a part whose name clashes with these (``"agent_index"``, or
  ``<name>_1`` beside a split ``<name>``) raises ``ValueError``. ``Text`` parts become token
  ids, exactly as in :class:`~agentworld_envs.wrappers.TokenizeObservation`; other parts pass
  through.
- Actions: numeric spaces pass through. A ``Text`` action space becomes ``Discrete``
  over ``env.unwrapped.candidate_actions(agent)``, with the padding policy and
  ``info["action_mask"]`` of :class:`~agentworld_envs.wrappers.DiscreteCandidateActions`;
  ``env_method("action_masks")`` gives one mask per slot, as ``sb3_contrib``'s ``MaskablePPO``
  asks. All agents must share one action space.
- ``env_method``, ``set_attr`` and ``render`` act once on each copy (not once per agent); a
  slot gets its copy's result.
- Every copy must keep its full agent set until all its agents end together; the copy then
  resets (SB3 semantics: ``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]``).
  An agent that leaves early raises ``RuntimeError``.
- ``seed(s)`` seeds copy ``c`` with ``s + c * n_agents`` at the next reset.
- ``env_fn`` must build a new env at every call (as for SB3's ``DummyVecEnv``): copies that
  share one env raise ``ValueError``.

Needs ``stable-baselines3`` (``pip install "agentworld[rl]"``).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import DependencyNotInstalled
from pettingzoo import ParallelEnv

from agentworld_envs.wrappers.candidate_actions import GIVE_UP_ACTION, CandidateMenu
from agentworld_envs.wrappers.tokenize_observation import TokenIdEncoder

try:
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.util import obs_space_info
except ImportError as exc:
    raise DependencyNotInstalled(
        'ParameterSharingVecEnv needs stable-baselines3: pip install "agentworld[rl]"') from exc

__all__ = ["ParameterSharingVecEnv"]

_MASKS = "action_masks"
_AGENT_INDEX = "agent_index"


def _shared_action_space(env: ParallelEnv, agents: Sequence[str]) -> spaces.Space:
    space = env.action_space(agents[0])
    for agent in agents[1:]:
        if env.action_space(agent) != space:
            raise ValueError(f"parameter sharing needs one action space for all agents; "
                             f"{agents[0]} has {space}, {agent} has {env.action_space(agent)}")
    return space


def _blank(space: spaces.Space) -> Any:
    """The value that stands in for an observation key an agent lacks."""
    if isinstance(space, spaces.Text):
        return ""
    if isinstance(space, spaces.Discrete):
        return space.start
    if isinstance(space, spaces.MultiDiscrete):
        return space.start.copy()
    if isinstance(space, spaces.Dict):
        return {key: _blank(sub) for key, sub in space.spaces.items()}
    if isinstance(space, (spaces.Box, spaces.MultiBinary)):
        zeros = np.zeros(space.shape, dtype=space.dtype)
        return np.clip(zeros, space.low, space.high) if isinstance(space, spaces.Box) else zeros
    raise ValueError(f"cannot pad a missing observation of space {space}")


class _SharedObservationLayout:
    """Where each agent's observation parts go in the one ``Dict`` space all agents share.

    Each part (a ``Dict`` key, or ``"observation"`` for a non-``Dict`` space) keeps its name when
    all agents that have it agree on its space; otherwise it splits into ``<name>_0``,
    ``<name>_1``, ..., one per distinct space in agent order. ``"agent_index"`` is added.
    """

    def __init__(self, env: ParallelEnv, agents: Sequence[str]) -> None:
        parts = {}
        for agent in agents:
            space = env.observation_space(agent)
            parts[agent] = space.spaces if isinstance(space, spaces.Dict) else {
                "observation": space}
        distinct: dict[str, list[spaces.Space]] = {}
        for agent_parts in parts.values():
            for key, space in agent_parts.items():
                if space not in distinct.setdefault(key, []):
                    distinct[key].append(space)

        def name(key: str, space: spaces.Space) -> str:
            found = distinct[key]
            return key if len(found) == 1 else f"{key}_{found.index(space)}"

        named = Counter([_AGENT_INDEX] + [name(key, space) for key, found in distinct.items()
                                          for space in found])
        clashes = sorted(part for part, count in named.items() if count > 1)
        if clashes:
            raise ValueError(f"observation parts {clashes} clash with the shared layout (which "
                             f"adds {_AGENT_INDEX!r} and splits a part that differs between "
                             "agents into <name>_0, <name>_1, ...); rename them in the env")
        self.agents = list(agents)
        self.names = {agent: {key: name(key, space) for key, space in agent_parts.items()}
                      for agent, agent_parts in parts.items()}
        self.space = spaces.Dict({
            **{name(key, space): space for key, found in distinct.items() for space in found},
            _AGENT_INDEX: spaces.Discrete(len(agents))})

    def arrange(self, agent: str, observation: Any) -> dict[str, Any]:
        """The agent's observation in the shared layout, with blanks for parts it lacks."""
        values = observation if isinstance(observation, dict) else {"observation": observation}
        placed = {self.names[agent][key]: value for key, value in values.items()}
        placed[_AGENT_INDEX] = self.agents.index(agent)
        return {name: placed[name] if name in placed else _blank(space)
                for name, space in self.space.spaces.items()}


class ParameterSharingVecEnv(VecEnv):
    """One SB3 vector slot per agent of each copy of a PettingZoo Parallel env.

    See the module docstring for the slot order, the space conversions and the episode rules.

    Args:
        env_fn: Builds one Parallel env, e.g. ``lambda: pettingzoo.make("parallel", env_id)``.
        num_copies: Copies stepped side by side.
        max_length: Token ids per ``Text`` observation.
        tokenizer: ``"bytes"`` or a Hugging Face tokenizer name or path.
        max_candidates: Choices per step when the action space is ``Text``.
        fallback_action: The text action of a padding index.

    Example:
        >>> import pettingzoo, team_envs
        >>> venv = ParameterSharingVecEnv(
        ...     lambda: pettingzoo.make("parallel", "team_envs/relay-v0"), num_copies=2)
        >>> venv.num_envs, venv.action_space
        (6, MultiDiscrete([4]))
        >>> venv.seed(0)
        [0, 1, 2, 3, 4, 5]
        >>> obs = venv.reset()
        >>> obs["agent_index"].tolist(), obs["text"].shape
        ([0, 1, 2, 0, 1, 2], (6, 256))
        >>> obs, rewards, dones, infos = venv.step(np.zeros((6, 1), dtype=np.int64))
        >>> infos[0]["role"], infos[1]["role"]
        ('sender', 'relay')
    """

    def __init__(self, env_fn: Callable[[], ParallelEnv], num_copies: int = 1, *,
                 max_length: int = 256, tokenizer: str = "bytes", max_candidates: int = 32,
                 fallback_action: str = GIVE_UP_ACTION) -> None:
        if num_copies < 1:
            raise ValueError(f"num_copies must be >= 1, not {num_copies}")
        self.envs = [env_fn() for _ in range(num_copies)]
        if len({id(env.unwrapped) for env in self.envs}) < num_copies:
            raise ValueError("env_fn returned one env for several copies; it must build a new "
                             "env at every call, e.g. lambda: pettingzoo.make('parallel', env_id)")
        self.agents = list(self.envs[0].possible_agents)
        self._layout = _SharedObservationLayout(self.envs[0], self.agents)
        agent_action_space = _shared_action_space(self.envs[0], self.agents)
        self._text_actions = isinstance(agent_action_space, spaces.Text)
        if self._text_actions and not callable(
                getattr(self.envs[0].unwrapped, "candidate_actions", None)):
            raise TypeError("a Text action space needs candidate_actions(agent) -> list[str] on "
                            "the unwrapped env, to choose actions by index")
        self._encoder = TokenIdEncoder(max_length, tokenizer)
        self._max_candidates = max_candidates
        self._fallback_action = fallback_action
        super().__init__(num_copies * len(self.agents),
                         self._encoder.space(self._layout.space),
                         spaces.Discrete(max_candidates) if self._text_actions
                         else agent_action_space)
        self.keys, shapes, dtypes = obs_space_info(self.observation_space)
        self._buffer = {key: np.zeros((self.num_envs, *shapes[key]), dtype=dtypes[key])
                        for key in self.keys}
        self._menus: list[CandidateMenu | None] = [None] * self.num_envs
        self._actions: np.ndarray | None = None
        self.metadata = {**self.envs[0].metadata, "render_modes": self.metadata["render_modes"]}

    def reset(self) -> dict[str, np.ndarray]:
        """Reset every copy (with the seeds and options set before, used once)."""
        for copy, env in enumerate(self.envs):
            first = copy * len(self.agents)
            observations, infos = env.reset(seed=self._seeds[first],
                                            options=self._options[first] or None)
            self._check_agent_set(env)
            self._store(copy, observations)
            for slot, agent in zip(self._slots(copy), self.agents, strict=True):
                self.reset_infos[slot] = self._info(slot, infos.get(agent, {}))
        self._reset_seeds()
        self._reset_options()
        return self._observations()

    def step_async(self, actions: np.ndarray) -> None:
        """Remember the actions of every slot for :meth:`step_wait`.

        Raises:
            ValueError: not one action per slot.
        """
        actions = np.asarray(actions)
        if actions.shape[:1] != (self.num_envs,):
            raise ValueError(f"expected one action per slot ({self.num_envs}), got an array of "
                             f"shape {actions.shape}")
        self._actions = actions

    def step_wait(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, list[dict]]:
        """Step every copy with its agents' actions; reset the copies whose episode ended.

        Every slot's action is read first, so a bad one (an index outside ``max_candidates``)
        raises before any copy steps.
        """
        chosen = [self._agent_action(slot) for slot in range(self.num_envs)]
        rewards = np.zeros(self.num_envs, dtype=np.float32)
        dones = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for copy, env in enumerate(self.envs):
            slots = list(zip(self._slots(copy), self.agents, strict=True))
            joint = {agent: chosen[slot][0] for slot, agent in slots}
            observations, step_rewards, terms, truncs, step_infos = env.step(joint)
            ended = {agent for agent in self.agents if terms[agent] or truncs[agent]}
            if ended and ended != set(self.agents):
                raise RuntimeError(f"agents {sorted(ended)} ended before the others; parameter "
                                   "sharing needs all agents of a copy to end together")
            for slot, agent in slots:
                rewards[slot] = step_rewards[agent]
                dones[slot] = bool(ended)
                infos[slot] = {**step_infos.get(agent, {}),
                               "TimeLimit.truncated": bool(truncs[agent] and not terms[agent])}
                if self._text_actions:
                    infos[slot]["padding_action"] = chosen[slot][1]
                if ended:
                    infos[slot]["terminal_observation"] = self._encode(agent, observations[agent])
            reset_infos = None
            if ended:
                observations, reset_infos = env.reset()
            self._check_agent_set(env)
            self._store(copy, observations)
            for slot, agent in slots:
                infos[slot] = self._info(slot, infos[slot])
                if reset_infos is not None:
                    self.reset_infos[slot] = self._info(slot, reset_infos.get(agent, {}))
        return self._observations(), rewards, dones, infos

    def close(self) -> None:
        """Close every copy."""
        for env in self.envs:
            env.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """An attribute of the Parallel env behind each slot; with ``Text`` actions,
        ``"action_masks"`` is each slot's own mask method (as ``sb3_contrib`` asks for it)."""
        slots = self._get_indices(indices)
        if attr_name == _MASKS and self._text_actions:
            return [functools.partial(self._slot_mask, slot) for slot in slots]
        return [getattr(self._env_of(slot), attr_name) for slot in slots]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Set an attribute once on each copy behind the slots."""
        for copy in self._copies(indices):
            setattr(self.envs[copy], attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None,
                   **method_kwargs: Any) -> list[Any]:
        """Call a method once on each copy behind the slots; each slot gets its copy's result.

        With ``Text`` actions, ``"action_masks"`` gives each slot its own mask, as
        ``sb3_contrib``'s ``MaskablePPO`` asks for it.
        """
        slots = list(self._get_indices(indices))
        if method_name == _MASKS and self._text_actions:
            return [self._slot_mask(slot) for slot in slots]
        results = {copy: getattr(self.envs[copy], method_name)(*method_args, **method_kwargs)
                   for copy in self._copies(slots)}
        return [results[slot // len(self.agents)] for slot in slots]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """Always False: PettingZoo envs carry no Gymnasium wrappers."""
        return [False for _ in self._get_indices(indices)]

    def action_masks(self) -> np.ndarray:
        """The current mask of every slot, ``(num_envs, max_candidates)`` (``Text`` actions)."""
        if not self._text_actions:
            raise AttributeError("action masks exist only for Text action spaces")
        return np.stack([self._slot_mask(slot) for slot in range(self.num_envs)])

    def _copies(self, indices: Any) -> list[int]:
        """The distinct copies behind the slots, in slot order."""
        return list(dict.fromkeys(slot // len(self.agents) for slot in self._get_indices(indices)))

    def _slot_mask(self, slot: int) -> np.ndarray:
        return self._menu(slot).mask.copy()

    def _slots(self, copy: int) -> range:
        return range(copy * len(self.agents), (copy + 1) * len(self.agents))

    def _env_of(self, slot: int) -> ParallelEnv:
        return self.envs[slot // len(self.agents)]

    def _check_agent_set(self, env: ParallelEnv) -> None:
        if sorted(env.agents) != sorted(self.agents):
            raise RuntimeError(f"parameter sharing needs the full agent set {self.agents}; "
                               f"the env has {env.agents}")

    def _encode(self, agent: str, observation: Any) -> Any:
        return self._encoder.encode(self._layout.arrange(agent, observation), self._layout.space)

    def _menu(self, slot: int) -> CandidateMenu:
        menu = self._menus[slot]
        if menu is None:
            raise RuntimeError("call reset() before step()")
        return menu

    def _agent_action(self, slot: int) -> tuple[Any, bool]:
        """The env action of a slot, and whether it was a padding index."""
        if self._actions is None:
            raise RuntimeError("call step_async() before step_wait()")
        action = self._actions[slot]
        if not self._text_actions:
            return action, False
        menu = self._menu(slot)
        return menu.action(int(action)), menu.is_padding(int(action))

    def _store(self, copy: int, observations: dict[str, Any]) -> None:
        """Buffer a copy's encoded observations and read its agents' candidate actions."""
        for slot in self._slots(copy):  # candidates that do not fit leave no stale menu to play
            self._menus[slot] = None
        for slot, agent in zip(self._slots(copy), self.agents, strict=True):
            encoded = self._encode(agent, observations[agent])
            for key in self.keys:
                self._buffer[key][slot] = encoded[key]
            if self._text_actions:
                self._menus[slot] = CandidateMenu(
                    self._env_of(slot).unwrapped.candidate_actions(agent),
                    self._max_candidates, self._fallback_action)

    def _info(self, slot: int, info: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``info``, with the slot's action mask for text actions."""
        if not self._text_actions:
            return dict(info)
        return {**info, "action_mask": self._slot_mask(slot)}

    def _observations(self) -> dict[str, np.ndarray]:
        return {key: array.copy() for key, array in self._buffer.items()}
