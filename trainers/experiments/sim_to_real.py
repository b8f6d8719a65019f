"""Sim-to-real: does an agent trained in a simulated task do better in the real one?

The task is a branching AgentFloor one (:func:`floor_tasks.task_sets.branching_tasks`, default
C1): the right submission depends on the status the lookup returns, so a policy must read
observations. Or ``--task mcp:<family>``: generated MCP servers of one family, whose answers
live in their records; the real env is their executable twin (``AgentWorld/MCP-v0`` with
``mode="real"``), and held-out servers have other records, items and questions.
Two agents (``--agent``). ``linear`` (the default) is a linear softmax policy over the
candidate actions, trained with REINFORCE and an entropy bonus (CleanRL-style, one file). Its
features are hashed pairs of (a word of a value the latest tool result holds, a word of the
candidate), the candidate's words by turn, and whether each record id in the candidate appears
in the prompt or in the latest observation, so that what it learns carries over to records it
never saw. ``ppo`` is Stable-Baselines3 PPO with
:class:`~agentworld_envs.wrappers.CandidateScoringPolicy` over byte-level token ids of the
prompt, the latest observation and each candidate (:func:`~agentworld_envs.wrappers.wrap_for_sb3`
on both envs, the simulated one shown as the real one shows itself); one of its updates is one
rollout of ``--ppo-envs`` x ``--ppo-steps`` steps.

Arms, each with ``--seeds`` seeds and the same ``--updates`` policy updates of ``--batch``
episodes (only the capped arms stop early, by design):

``untrained``       the initial policy, never updated;
``sim``             ``AgentWorld/Floor-v0`` (or ``MCP-v0``) with ``--world-model`` (the
                    embedded fine-tuned one by default) and the simulated reward;
``sim-garbage``     the same with the ``scripted`` placeholder (nothing readable is shown);
``sim-fixture``     a rule-based simulator that shows the true records (floor: the
                    fixture's; MCP: the server's, answered exactly as its twin would);
``sim-constant``    the same with one value of the decision field (floor: the status; MCP:
                    the asked field, e.g. inventory's stock count) for every record
                    (readable, wrong);
``sim-inverted``    floor only: the same with the other status (readable, wrong);
``sim-shuffled``    MCP only: the same with the asked field's values permuted among the
                    records, so that no record shows its own (readable, wrong);
``real``            the real ``AgentFloor`` env (or the MCP twin) for every update;
``real-capped``     the real env for the first ``--real-updates`` updates only;
``real-capped+sim`` those real updates, then simulated ones up to ``--updates``.

A simulated episode touches nothing real (``real_counterpart=False``): no real env is built,
and its reward, submissions included, is the simulated episode's alone. A floor submission
is accepted by the task's rule over the status the simulator showed
(:func:`agentworld_envs.domains.floor.verdict.decided_observation`), so a simulator that
shows the status inverted teaches the inverted branch. An MCP control answers every call as
the server's twin would on its records as the control shows them
(:mod:`trainers.experiments.mcp_record_controls`); the simulated reward, as for every MCP
arm, checks the scenario's true answer, shown in some observation. The real env is played
only by the real arms and by scoring.

Every arm is scored on the real env (the task's own step budget) on held-out variants
(``--eval-variants``: records and names never trained on, each in every prompt wording),
greedily, every ``--eval-every`` updates, as balanced success: the mean over decisions of the
success rate on the variants that need it. A policy blind to observations scores 0.5 at most
on a floor task. An MCP family is scored on ``--mcp-eval`` held-out servers that share no
record id or name with the training ones (plain success; blind, one answer in three is
right: the candidates leak nothing). Intervals are 95% hierarchical bootstraps over seeds and
held-out items together. Training episodes have ``--train-steps`` steps. The world model's
greedy answers are cached in ``<out>/world_model_calls.jsonl``, so a prompt is generated once
across arms and seeds. Writes ``<out>/results.json`` (per arm: balanced success, interval,
per-seed values, held-out items, real-env episodes for training and for scoring, simulated
episodes, seconds) and ``<out>/curves.png``.

Run (CPU; the first run generates the world model's answers: 41 minutes on 2 shared cores)::

    python examples/sim_to_real.py --out runs/sim_to_real

Quick check (seconds, placeholder world model for both sim arms):
``python examples/sim_to_real.py --out s2r --seeds 1 --updates 2 --batch 4
--world-model scripted``; with ``--agent ppo --ppo-envs 2 --ppo-steps 8 --ppo-epochs 1`` for
the PPO agent. The PPO run (11 minutes on 2 shared cores once the linear run's recorded
world-model answers are copied into its ``--out``; see ``docs/sim_to_real.md``)::

    python examples/sim_to_real.py --agent ppo --out runs/sim_to_real_ppo

The MCP run (linear agent; the twin is the real env)::

    python examples/sim_to_real.py --task mcp:inventory --out runs/sim_to_real_mcp

Its record controls alone (no world model; minutes): the same with
``--arms sim-fixture,sim-constant,sim-shuffled``.
"""

from __future__ import annotations

import itertools
import json
import re
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import TimeLimit

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
import floor_tasks
from agentworld_envs.backends.embedded import (
    DOMAIN_ADAPTERS,
    EMBEDDED_SAMPLING,
    embedded_world_model,
)
from agentworld_envs.backends.faults import DEFAULT_MAX_FAULTS, TooManyFaultsError
from agentworld_envs.domains import get_domain
from agentworld_envs.domains.floor.verdict import decision_rule
from agentworld_envs.domains.mcp.servers import FAMILIES, mcp_server_scenario
from agentworld_envs.protocol.bounded_json import find_objects
from agentworld_envs.registration import env_id
from agentworld_envs.sim.env import AgentWorldEnv
from agentworld_envs.wrappers import wrap_for_sb3
from floor_tasks import env_id as floor_env_id
from floor_tasks.candidates import candidate_actions
from floor_tasks.database import load_fixture
from floor_tasks.env import FloorEnv
from floor_tasks.task_sets import branching_tasks, decisions
from trainers.common.flags import parse_args
from trainers.common.intervals import INTERVAL, seed_item_interval
from trainers.experiments.mcp_record_controls import MCP_CONTROLS, McpRecordSimulator

ARMS = ("untrained", "sim", "sim-garbage", "sim-fixture", "sim-constant", "sim-inverted", "real",
        "real-capped", "real-capped+sim", "sim-shuffled")
"""Every arm (an arm's index seeds its agent's draws: new arms go last)."""
CONTROLS = ("sim-fixture", "sim-constant", "sim-inverted")
"""Rule-based simulators of a floor task's records (:func:`record_simulator`): the true
records, then two that are readable but wrong (one status for every record; the inverted
status), every other field true. An MCP family's are
:data:`~trainers.experiments.mcp_record_controls.MCP_CONTROLS`."""
_WORD = re.compile(r"[a-z0-9_\-]+")


@dataclass
class Args:
    """Sim-to-real on a branching AgentFloor task or an MCP family (lists are comma-separated)."""

    task: str = "C1"
    """A branching AgentFloor task, or ``mcp:<family>``: generated MCP servers of one family
    (inventory, calendar, tickets, crm, fleet), scored on their executable twin."""
    train_variants: list[str] = field(default_factory=lambda: [
        f"i{i}v{k}" for i in (0, 1) for k in range(5)])
    """Floor: variants trained on (both decisions must occur); ``i<M>v<N>`` is instance M
    with prompt N. C1: CMP-31 (active) and CMP-33 (inactive), each in the five wordings."""
    eval_variants: list[str] = field(default_factory=lambda: [
        f"i{i}v{k}" for i in (3, 4) for k in range(5)])
    """Floor: held-out variants scored on the real env, on records and names never trained on.
    C1: CMP-35 (active) and CMP-36 (inactive), each in the five wordings; CMP-34 "Coolant Loop
    B" is left out, as its name nearly repeats training's CMP-33 "Coolant Loop A"."""
    mcp_train: int = 8
    """MCP: the family's first ``mcp_train`` generated servers are trained on."""
    mcp_eval: int = 24
    """MCP: the next ``mcp_eval`` servers (other records, items and questions) are held out."""
    seeds: int = 5
    """Seeds per arm (each fixes the policy's start, the variant draws and the envs)."""
    updates: int = 20
    """Policy updates per arm (batches of ``batch`` episodes)."""
    batch: int = 64
    """Episodes per update; also the simulated vector env's width."""
    real_updates: int = 2
    """Updates on the real env in the capped arms."""
    train_steps: int = 2
    """Step budget of a training episode."""
    learning_rate: float = 0.1
    """REINFORCE step size."""
    entropy_coef: float = 0.05
    """Weight of the entropy bonus."""
    eval_every: int = 4
    """Updates between scores on the held-out real variants."""
    arms: list[str] = field(default_factory=list)
    """The arms to run (default: every arm of the task: the floor record controls on a floor
    task, the MCP ones on an MCP family)."""
    agent: str = "linear"
    """``linear`` (hashed features, REINFORCE) or ``ppo`` (SB3 PPO over token ids)."""
    ppo_envs: int = 8
    """PPO: parallel envs of a rollout."""
    ppo_steps: int = 16
    """PPO: rollout steps per env, so an update sees ``ppo_envs * ppo_steps`` steps."""
    ppo_epochs: int = 10
    """PPO: optimisation epochs per update."""
    ppo_minibatch: int = 64
    """PPO: minibatch size."""
    ppo_learning_rate: float = 3e-3
    """PPO: Adam step size."""
    ppo_entropy_coef: float = 0.01
    """PPO: weight of the entropy bonus."""
    ppo_gamma: float = 0.9
    """PPO: discount."""
    ppo_normalize_advantage: bool = False
    """PPO: normalise advantages per minibatch."""
    ppo_overlap_ngram: int = 0
    """PPO: 0 encodes token ids by position (``CandidateFeatures``); n > 0 adds, per candidate
    token, whether its n-gram occurs in the prompt and in the observation
    (``CandidateOverlapFeatures``)."""
    ppo_max_length: int = 256
    """PPO: byte-level token ids kept of the prompt and of the latest observation."""
    ppo_candidate_length: int = 96
    """PPO: token ids kept per candidate action (C1's longest is 94 bytes)."""
    world_model: str = "embedded"
    """The world model of the ``sim`` and ``real-capped+sim`` arms: ``embedded`` (the
    fine-tuned default), any backend name registered with
    ``agentworld_envs.backends.register_backend`` (``scripted``: the placeholder, for quick
    checks), or a JSON backend spec such as ``{"name": "openai", "base_url": ...}``.
    ``sim-garbage`` always uses the placeholder, the record controls their own rules."""
    out: Path = Path("runs/sim_to_real")
    """Where results, curves and the world model's recorded answers go."""
    max_faults: int = DEFAULT_MAX_FAULTS
    """Failed world-model calls a simulated env goes on after (linear: the vector of one arm
    and seed; PPO: each of its envs), their observations being fallbacks; one more stops the
    run, and a run with any ends non-zero before its table. -1: never stop, and count them
    in ``results.json`` (``failed_world_model_calls``)."""


def words(text: str) -> list[str]:
    """Lower-cased words (record ids such as ``cmp-31`` stay whole)."""
    return _WORD.findall(text.lower())


def result_values(observation: str) -> list[str]:
    """The string leaves of the results in a tool observation (what the tools returned)."""
    leaves: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            leaves.append(value)

    for envelope in find_objects(observation):
        walk(envelope.get("result"))
    return leaves


def _is_id(word: str) -> bool:
    return any(ch.isdigit() for ch in word) and "-" in word


def _named_variant(variant: str) -> str:
    """The named variant with the same instance (``i3v2`` -> ``i3``, ``i0v2`` -> ``v2``)."""
    crossed = re.fullmatch(r"i(\d+)v(\d+)", variant)
    if crossed is None:
        return variant
    instance, prompt = map(int, crossed.groups())
    return f"i{instance}" if instance else f"v{prompt}"


class FloorTask:
    """A branching AgentFloor task: the real env is ``AgentFloor/<ID>-v0``'s, variants by name."""

    domain = "floor"
    score = "balanced success, held-out real variants"

    def __init__(self, args: Args) -> None:
        self.task = args.task
        self.train, self.eval = args.train_variants, args.eval_variants
        named = decisions(args.task)
        self.decisions = {v: named[_named_variant(v)] for v in self.train + self.eval}
        """Each variant's decision: held-out success is balanced over them."""

    def scenario(self, variant: str) -> str:
        return f"{self.task}/{variant}"

    def play(self, variant: str, steps: int | None, seed: int) -> tuple[Any, str]:
        """The real env of one variant, reset, and its prompt."""
        env = FloorEnv(self.task, variant=variant, max_steps=steps)
        return env, env.reset(seed=seed)[0]

    @property
    def budget(self) -> int:
        return floor_tasks.load_task(self.task).max_steps

    def max_candidates(self) -> int:
        return max(len(candidate_actions(self.task, v, wide=True))
                   for v in self.train + self.eval)

    def real_env(self, steps: int) -> gym.Env:
        """The real env drawing a training variant at each reset (PPO's)."""
        return TrainVariants(gym.make(floor_env_id(self.task), max_steps=steps), self.train)

    def eval_env(self) -> tuple[gym.Env, Callable[[str], dict[str, Any]]]:
        """The real env that scores held-out variants, and the reset options of one."""
        return gym.make(floor_env_id(self.task)), lambda variant: {"variant": variant}


IDENTITY_FIELDS = ("name", "title", "plate")
"""Record fields that name a record, besides its id (its first field)."""


def identities(scenario: Any) -> set[str]:
    """The ids and names of a generated server's records: a held-out server shares none with
    the training servers, so no held-out record or name was seen in training."""
    return {str(value) for record in scenario.mcp.records for key, value in record.items()
            if key == next(iter(record)) or key in IDENTITY_FIELDS}


class McpTask:
    """Generated MCP servers of one family: the real env is the executable twin
    (``AgentWorld/MCP-v0`` with ``mode="real"``); a variant is a generator seed."""

    domain = "mcp"
    score = "success, held-out servers on the twin"
    budget = get_domain("mcp").max_steps

    def __init__(self, args: Args) -> None:
        family = args.task.removeprefix("mcp:")
        if family not in FAMILIES:
            raise SystemExit(f"no generated MCP family {family!r}; choose from {FAMILIES}")
        servers = ((str(seed), s) for seed in itertools.count()
                   if (s := mcp_server_scenario(seed)).mcp.family == family)
        train = dict(itertools.islice(servers, args.mcp_train))
        seen = set().union(*map(identities, train.values()))
        held_out = ((v, s) for v, s in servers if not identities(s) & seen)
        self._servers = {**train, **dict(itertools.islice(held_out, args.mcp_eval))}
        self.train, self.eval = list(train), list(self._servers)[args.mcp_train:]
        self.decisions = dict.fromkeys(self.eval, "answer")  # one decision: plain success
        self._real: dict[tuple[str, int | None], AgentWorldEnv] = {}

    def scenario(self, variant: str) -> Any:
        return self._servers[variant]

    def _played(self, variants: list[str], steps: int | None) -> AgentWorldEnv:
        """``AgentWorld/MCP-v0`` on these servers' twins, with no world model."""
        return AgentWorldEnv("mcp", max_steps=steps, mode="real",
                             scenarios=[self._servers[v] for v in variants])

    def play(self, variant: str, steps: int | None, seed: int) -> tuple[Any, str]:
        """The twin of one server, reset, and its prompt (the instruction, as in training)."""
        if (variant, steps) not in self._real:
            self._real[variant, steps] = self._played([variant], steps)
        env = self._real[variant, steps]
        return env, env.reset(seed=seed)[1]["instruction"]

    def max_candidates(self) -> int:
        return max(len(s.candidate_actions) for s in self._servers.values())

    def _twin(self, variants: list[str], steps: int) -> gym.Env:
        return InstructionFirst(TimeLimit(self._played(variants, steps), self.budget))

    def real_env(self, steps: int) -> gym.Env:
        return self._twin(self.train, steps)

    def eval_env(self) -> tuple[gym.Env, Callable[[str], dict[str, Any]]]:
        return self._twin(self.eval, self.budget), lambda v: {"scenario": self._servers[v]}


def make_task(args: Args) -> FloorTask | McpTask:
    if args.task.startswith("mcp:"):
        return McpTask(args)
    if args.task not in branching_tasks():
        raise SystemExit(f"{args.task} is not a branching task; choose from {branching_tasks()} "
                         "or mcp:<family>")
    return FloorTask(args)


class LinearPolicy:
    """Softmax over candidates of a linear score of hashed (observation, candidate) features."""

    def __init__(self, rng: np.random.Generator, learning_rate: float, entropy_coef: float,
                 size: int = 2**16):
        self.rng, self.learning_rate, self.size = rng, learning_rate, size
        self.entropy_coef = entropy_coef
        self.weights = np.zeros(size)

    def features(self, prompt: str, observation: str, turn: int,
                 candidate: str) -> tuple[np.ndarray, np.ndarray]:
        """The hashed feature indices of one candidate and their counts."""
        seen, asked = set(words(observation)), set(words(prompt))
        values = {w for v in result_values(observation) for w in words(v) if not _is_id(w)}
        keys = []
        for word in words(candidate):
            if _is_id(word):
                keys.append(f"id:{'prompt' if word in asked else 'other'}:"
                            f"{'observed' if word in seen else 'unseen'}")
                continue
            keys += [f"w:{word}", f"t{turn}:{word}"]
            keys += [f"x:{value}:{word}" for value in values]
            if any(ch.isdigit() for ch in word):  # a value such as an answer's number
                keys.append(f"value:{'observed' if word in seen else 'unseen'}")
        hashed = np.array([zlib.crc32(k.encode()) % self.size for k in keys], dtype=np.int64)
        index, counts = np.unique(hashed, return_counts=True)
        return index, counts.astype(float)

    def probabilities(self, prompt: str, observation: str, turn: int,
                      candidates: list[str]) -> tuple[np.ndarray, list[Any]]:
        feats = [self.features(prompt, observation, turn, c) for c in candidates]
        logits = np.array([float(self.weights[i] @ v) for i, v in feats])
        weights = np.exp(logits - logits.max())
        return weights / weights.sum(), feats

    def act(self, prompt: str, observation: str, turn: int, candidates: list[str],
            greedy: bool = False) -> tuple[int, tuple]:
        probs, feats = self.probabilities(prompt, observation, turn, candidates)
        choice = int(np.argmax(probs)) if greedy else int(self.rng.choice(len(probs), p=probs))
        return choice, (probs, feats, choice)

    def update(self, episodes: list[tuple[list[tuple], float]]) -> None:
        """REINFORCE with the batch's mean reward as the baseline, plus an entropy bonus that
        keeps the policy from settling on one decision before it has learnt to read."""
        baseline = float(np.mean([reward for _, reward in episodes]))
        for steps, reward in episodes:
            advantage = reward - baseline
            for probs, feats, choice in steps:
                logp = np.log(np.clip(probs, 1e-12, None))
                entropy = -float(probs @ logp)
                for k, (index, values) in enumerate(feats):
                    gradient = advantage * (float(k == choice) - probs[k]) \
                        - self.entropy_coef * probs[k] * (logp[k] + entropy)
                    self.weights[index] += self.learning_rate * gradient * values


def real_batch(args: Args, task: FloorTask | McpTask, policy: LinearPolicy,
               rng: np.random.Generator) -> list[tuple[list[tuple], float]]:
    """Episodes on the real env, one training variant drawn from ``rng`` each."""
    episodes = []
    for _ in range(args.batch):
        variant = task.train[int(rng.integers(len(task.train)))]
        reward, trajectory = play_real(task, variant, policy, args.train_steps,
                                       seed=int(rng.integers(2**31)), greedy=False)
        episodes.append((trajectory, reward))
    return episodes


def play_real(task: FloorTask | McpTask, variant: str, policy: LinearPolicy,
              steps: int | None, seed: int, greedy: bool) -> tuple[float, list[tuple]]:
    env, prompt = task.play(variant, steps, seed)
    observation, trajectory, reward = prompt, [], 0.0
    for turn in range(env.max_steps):
        candidates = env.candidate_actions()
        choice, step = policy.act(prompt, observation, turn, candidates, greedy)
        trajectory.append(step)
        observation, reward, terminated, truncated, _ = env.step(candidates[choice])
        if terminated or truncated:
            break
    return reward, trajectory


class SimTrainer:
    """Batches of simulated episodes from a vector of the task's simulated envs
    (``AgentWorld/Floor-v0`` or ``AgentWorld/MCP-v0``) with no real counterpart: nothing
    real is built or played, and the reward is the simulated episode's alone."""

    def __init__(self, args: Args, task: FloorTask | McpTask, backend: Any, seed: int) -> None:
        self.args = args
        self.envs = gym.make_vec(
            env_id(task.domain), num_envs=args.batch, backend=backend,
            max_steps=args.train_steps, sampling=EMBEDDED_SAMPLING, real_counterpart=False,
            scenarios=[task.scenario(v) for v in task.train],
            record_path=record_path(args, backend), max_faults=args.max_faults)
        self.seed = seed

    def batch(self, policy: LinearPolicy) -> list[tuple[list[tuple], float]]:
        """One episode per env (steps after an env's first episode ends are not used)."""
        _, infos = self.envs.reset(seed=self.seed)
        self.seed += 1
        prompts = list(infos["instruction"])  # the task as FloorEnv states it (no tool list)
        observations = list(prompts)
        candidates = [list(c) for c in infos["candidate_actions"]]
        trajectories: list[list[tuple]] = [[] for _ in prompts]
        rewards: list[float | None] = [None] * len(prompts)
        for turn in range(self.args.train_steps):
            actions = []
            for i, prompt in enumerate(prompts):
                choice, step = policy.act(prompt, observations[i], turn, candidates[i])
                if rewards[i] is None:
                    trajectories[i].append(step)
                actions.append(candidates[i][choice])
            observations, reward, terminated, truncated, infos = self.envs.step(actions)
            for i in np.flatnonzero(terminated | truncated):
                if rewards[i] is None:  # same-step autoreset: the ended episode's reward
                    rewards[i] = float(reward[i])
            if all(r is not None for r in rewards):
                break
        return [(t, r) for t, r in zip(trajectories, rewards, strict=True) if r is not None]

    def close(self) -> int:
        self.envs.close()
        return failed_calls([self.envs.unwrapped.sim])


def record_simulator(task_id: str, control: str) -> dict[str, Any]:
    """A rule-based simulator of a branching floor task's lookups, as a ``scripted`` backend
    spec: every record as the fixture has it, but for the field the decision rests on (C1's
    status), which is the fixture's (``sim-fixture``), one value for every record
    (``sim-constant``) or the other value (``sim-inverted``)."""
    task = floor_tasks.load_task(task_id)
    _, field, table = decision_rule(task)
    values = [json.loads(value) for value in table]
    rules = []
    for record_id, record in load_fixture(task.fixture).records.items():
        value = record[field]
        shown = {"sim-fixture": value, "sim-constant": values[0],
                 "sim-inverted": values[(values.index(value) + 1) % len(values)]
                 if value in values else value}[control]
        envelope = {"tool_name": "lookup_record", "call_id": f"{task_id}_lookup_record_1",
                    "status": "ok", "error": None,
                    "result": {"record_id": record_id, "fields": {**record, field: shown}}}
        rules.append({"match": f'(?s)"lookup_record".*"{re.escape(record_id)}"',
                      "reply": f"<predicted_observation>\n{json.dumps(envelope)}\n"
                               "</predicted_observation>"})
    return {"name": "scripted", "rules": rules}


def record_path(args: Args, backend: Any) -> str | None:
    """Where the world model's answers are recorded and served again: for ``--world-model``
    only (the placeholder and the rule-based controls are not recorded, so no simulator is
    ever served another's answers)."""
    if isinstance(backend, McpRecordSimulator):
        return None
    name = backend.get("name") if isinstance(backend, dict) else backend
    return None if name == "scripted" else str(args.out / "world_model_calls.jsonl")


def task_arms(task: FloorTask | McpTask) -> tuple[str, ...]:
    """The arms a task has: the floor record controls, or an MCP family's."""
    other = MCP_CONTROLS if isinstance(task, FloorTask) else CONTROLS
    own = CONTROLS if isinstance(task, FloorTask) else MCP_CONTROLS
    return tuple(a for a in ARMS if a in own or a not in other)


def sim_backend(arm: str, world_model: Any, task: FloorTask | McpTask) -> Any:
    """The simulator an arm trains in: none for the real-only arms."""
    if isinstance(task, McpTask) and arm in MCP_CONTROLS:
        return McpRecordSimulator([task.scenario(v) for v in task.train], arm)
    if arm in CONTROLS:
        return record_simulator(task.task, arm)
    return {"sim": world_model, "real-capped+sim": world_model,
            "sim-garbage": "scripted"}.get(arm)


class LinearAgent:
    """The linear REINFORCE policy of one arm and seed, with its real and simulated batches."""

    def __init__(self, args: Args, task: FloorTask | McpTask, arm: str, seed: int,
                 world_model: Any) -> None:
        self.args, self.task = args, task
        self.rng = np.random.default_rng([seed, ARMS.index(arm)])
        self.policy = LinearPolicy(np.random.default_rng(seed), args.learning_rate,
                                   args.entropy_coef)
        backend = sim_backend(arm, world_model, task)
        self.sim = (SimTrainer(args, task, backend, seed * 1000) if backend is not None
                    else None)

    def update(self, real: bool) -> None:
        """One policy update on a batch of real or simulated episodes."""
        self.policy.update(real_batch(self.args, self.task, self.policy, self.rng) if real
                           else self.sim.batch(self.policy))

    def play(self, variant: str) -> float:
        """The greedy policy's reward on one real variant (the task's own budget)."""
        return play_real(self.task, variant, self.policy, None, seed=0, greedy=True)[0]

    def close(self) -> int:
        """Close the envs; the failed world-model calls (see :func:`failed_calls`)."""
        return self.sim.close() if self.sim is not None else 0


class TrainVariants(gym.Wrapper):
    """Each reset plays one of ``variants``, drawn from a generator seeded at a seeded reset
    (unless ``options`` names the variant)."""

    def __init__(self, env: gym.Env, variants: list[str]) -> None:
        super().__init__(env)
        self.variants = variants
        self._rng: np.random.Generator | None = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None or self._rng is None:
            self._rng, _ = gym.utils.seeding.np_random(seed)
        variant = self.variants[int(self._rng.integers(len(self.variants)))]
        return self.env.reset(seed=seed, options={"variant": variant, **(options or {})})


class InstructionFirst(gym.Wrapper):
    """An ``AgentWorld`` env shown as the real AgentFloor env shows itself: the first
    observation is the task's instruction, without the simulator's tool list."""

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        _, info = self.env.reset(seed=seed, options=options)
        return info["instruction"], info


class PPOAgent:
    """SB3 PPO with :class:`~agentworld_envs.wrappers.CandidateScoringPolicy` over byte-level
    token ids. The real and the simulated envs go through the same wrappers
    (:func:`~agentworld_envs.wrappers.wrap_for_sb3`), so they present one observation and
    action space and the model moves between them with ``set_env``. One update is one PPO
    rollout of ``ppo_envs * ppo_steps`` steps and its ``ppo_epochs`` epochs."""

    def __init__(self, args: Args, task: FloorTask | McpTask, arm: str, seed: int,
                 world_model: Any) -> None:
        import torch
        from stable_baselines3 import PPO

        from agentworld_envs.wrappers import CandidateOverlapFeatures, CandidateScoringPolicy

        torch.set_num_threads(1)
        self.args, self.task, self.seed = args, task, seed
        self.backend = sim_backend(arm, world_model, task)
        self.max_candidates = task.max_candidates()
        self.envs: dict[str, Any] = {}
        self.simulators: list[Any] = []
        evaluation, self.eval_options = task.eval_env()
        self.evaluation = self._wrap(evaluation)
        first = "real" if arm.startswith("real") else "sim"
        features = ({"features_extractor_class": CandidateOverlapFeatures,
                     "features_extractor_kwargs": {"ngram": args.ppo_overlap_ngram}}
                    if args.ppo_overlap_ngram else {})
        self.model = PPO(CandidateScoringPolicy, self._venv(first), n_steps=args.ppo_steps,
                         batch_size=args.ppo_minibatch, n_epochs=args.ppo_epochs,
                         learning_rate=args.ppo_learning_rate, gamma=args.ppo_gamma,
                         ent_coef=args.ppo_entropy_coef,
                         normalize_advantage=args.ppo_normalize_advantage,
                         policy_kwargs=features, seed=seed, device="cpu")

    def _wrap(self, env: gym.Env) -> gym.Env:
        return wrap_for_sb3(env, max_candidates=self.max_candidates,
                            max_length=self.args.ppo_max_length,
                            candidate_length=self.args.ppo_candidate_length)

    def _make(self, source: str) -> gym.Env:
        """One training env: the real task on the training variants, or its simulation."""
        args, task = self.args, self.task
        if source == "real":
            return self._wrap(task.real_env(args.train_steps))
        # built directly under the real task's own TimeLimit, so both envs count steps alike
        simulated = AgentWorldEnv(
            task.domain, max_steps=args.train_steps, backend=self.backend,
            sampling=EMBEDDED_SAMPLING, scenarios=[task.scenario(v) for v in task.train],
            record_path=record_path(args, self.backend), real_counterpart=False,
            max_faults=args.max_faults)
        self.simulators.append(simulated.sim)
        return self._wrap(InstructionFirst(TimeLimit(simulated, task.budget)))

    def _venv(self, source: str) -> Any:
        if source not in self.envs:
            from stable_baselines3.common.monitor import Monitor
            from stable_baselines3.common.vec_env import DummyVecEnv

            venv = DummyVecEnv([lambda: Monitor(self._make(source))] * self.args.ppo_envs)
            venv.seed(self.seed * 1000 + len(self.envs) * 100)
            self.envs[source] = venv
        return self.envs[source]

    def update(self, real: bool) -> None:
        """One PPO rollout and optimisation, on the real env or in the simulation."""
        venv = self._venv("real" if real else "sim")
        if self.model.get_env() is not venv:
            self.model.set_env(venv)
        self.model.learn(self.args.ppo_envs * self.args.ppo_steps, reset_num_timesteps=False)

    def play(self, variant: str) -> float:
        """The greedy policy's reward on one real variant (the task's own budget)."""
        obs, _ = self.evaluation.reset(seed=0, options=self.eval_options(variant))
        while True:
            action, _ = self.model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = self.evaluation.step(int(action))
            if terminated or truncated:
                return float(reward)

    def close(self) -> int:
        """Close the envs; the failed world-model calls (see :func:`failed_calls`)."""
        for venv in self.envs.values():
            venv.close()
        self.evaluation.close()
        return failed_calls(self.simulators)


AGENTS = {"linear": LinearAgent, "ppo": PPOAgent}


def failed_calls(simulators: list[Any]) -> int:
    """The world-model calls that failed in ``simulators`` (their observations were fallbacks).

    Raises:
        TooManyFaultsError: if any failed and the budget is on (``--max-faults`` >= 0), so
            that no table is printed from policies trained on fallbacks.
    """
    tallies = [simulator.faults for simulator in simulators]
    for tally in tallies:
        if tally.bounded:
            tally.check("the run stops before its table: its policy trained on fallbacks")
    return sum(tally.failed for tally in tallies)


def evaluate(task: FloorTask | McpTask, agent: LinearAgent | PPOAgent) -> dict[str, float]:
    """The greedy policy's reward on each held-out variant of the real env (its own budget)."""
    return {variant: agent.play(variant) for variant in task.eval}


def balanced(task: FloorTask | McpTask, outcomes: dict[str, float]) -> float:
    """Balanced success: the mean over decisions of the success rate on the variants needing
    that decision, so that a policy blind to observations (one decision everywhere) scores
    0.5 at most on a floor task. An MCP family has one decision (answer), so this is its plain
    success rate."""
    by_decision: dict[str, list[float]] = {}
    for variant, reward in outcomes.items():
        by_decision.setdefault(task.decisions[variant], []).append(reward)
    return float(np.mean([np.mean(rewards) for rewards in by_decision.values()]))


def run_arm(args: Args, task: FloorTask | McpTask, arm: str, seed: int,
            world_model: Any) -> dict[str, Any]:
    """Train one arm with one seed; score it on the held-out real variants along the way."""
    started = time.perf_counter()
    agent = AGENTS[args.agent](args, task, arm, seed, world_model)
    outcomes = evaluate(task, agent)
    curve, scored = [(0, balanced(task, outcomes))], 1
    updates = {"untrained": 0, "real-capped": args.real_updates}.get(arm, args.updates)
    real_updates = 0
    for update in range(1, updates + 1):
        real = arm == "real" or (arm.startswith("real-capped") and update <= args.real_updates)
        real_updates += real
        agent.update(real=real)
        if update % args.eval_every == 0 or update == updates:
            outcomes = evaluate(task, agent)
            curve.append((update, balanced(task, outcomes)))
            scored += 1
    failed = agent.close()
    per_update = args.batch if args.agent == "linear" else args.ppo_envs * args.ppo_steps
    unit = "episodes" if args.agent == "linear" else "timesteps"
    return {"curve": curve, "final": curve[-1][1], "items": outcomes, "updates": updates,
            f"real_training_{unit}": real_updates * per_update,
            f"simulated_{unit}": (updates - real_updates) * per_update,
            "real_scoring_episodes": scored * len(task.eval),
            "failed_world_model_calls": failed,
            "seconds": round(time.perf_counter() - started, 1)}


def interval(task: FloorTask | McpTask, runs: list[dict[str, Any]]) -> tuple[float, float]:
    """A 95% hierarchical bootstrap interval of balanced success over seeds and held-out
    items together (:func:`~trainers.common.intervals.seed_item_interval`, the items grouped
    by decision)."""
    variants = list(runs[0]["items"])
    table = np.array([[run["items"][v] for v in variants] for run in runs])
    groups = [[i for i, v in enumerate(variants) if task.decisions[v] == d]
              for d in dict.fromkeys(task.decisions[v] for v in variants)]
    return seed_item_interval(table, groups)


def plot(results: dict[str, list[dict[str, Any]]], path: Path, score: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for arm, runs in results.items():
        steps = sorted({u for run in runs for u, _ in run["curve"]})
        means = [np.mean([dict(run["curve"])[u] for run in runs]) for u in steps]
        ax.plot(steps, means, marker="o", label=f"{arm} ({len(runs)} seeds)")
    ax.set_xlabel("policy updates")
    ax.set_ylabel(score)
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def world_model_spec(text: str) -> Any:
    """``--world-model``: a backend name, or a JSON backend spec (a dict with its ``name``)."""
    return json.loads(text) if text.lstrip().startswith("{") else text


def main() -> None:
    args = parse_args(Args, prog="sim_to_real.py")
    task = make_task(args)
    if args.agent not in AGENTS:
        raise SystemExit(f"unknown agent {args.agent!r}; choose from {sorted(AGENTS)}")
    floor = isinstance(task, FloorTask)
    args.arms = args.arms or list(task_arms(task))
    if unknown := [a for a in args.arms if a not in task_arms(task)]:
        raise SystemExit(f"unknown arms {unknown} for {args.task}; choose from {task_arms(task)} "
                         f"(the record controls: {CONTROLS} on a floor task, {MCP_CONTROLS} on "
                         "an MCP family)")
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, Any]]] = {}
    # one live world model for every arm and seed, so its greedy memo is shared
    simulated = {"sim", "real-capped+sim"} & set(args.arms)
    world_model = (embedded_world_model(DOMAIN_ADAPTERS[task.domain])
                   if args.world_model == "embedded" and simulated
                   else world_model_spec(args.world_model))
    summary = {}
    for arm in args.arms:
        runs = results[arm] = []
        for seed in range(args.seeds):
            try:
                runs.append(run_arm(args, task, arm, seed, world_model))
            except TooManyFaultsError as error:
                raise SystemExit(f"{arm} seed {seed}: {error}") from error
            failed = runs[-1]["failed_world_model_calls"]
            print(f"{arm} seed {seed}: {runs[-1]['final']:.2f} ({runs[-1]['seconds']:.0f} s)"
                  + (f", {failed} failed world-model calls (fallbacks)" if failed else ""),
                  flush=True)
        finals = [run["final"] for run in runs]
        summary[arm] = {
            "balanced_success": round(float(np.mean(finals)), 4),
            "ci95": interval(task, runs), "per_seed": finals,
            "held_out_items": len(task.eval), "seeds": len(runs),
            **{key: sum(run[key] for run in runs) for key in runs[0]
               if key.startswith(("real_", "simulated_", "failed_"))},
            "seconds": round(sum(run["seconds"] for run in runs), 1)}
        print(f"{arm:16s} {task.score} {summary[arm]['balanced_success']:.2f} 95% CI "
              f"{summary[arm]['ci95']} ({summary[arm]['seconds']:.0f} s)", flush=True)
        (args.out / "results.json").write_text(json.dumps(  # after every arm
            {"args": {**asdict(args), "out": str(args.out)},
             "interval": f"{INTERVAL}; balanced over decisions",
             "blind_bound": 0.5 if floor else 1 / 3, "summary": summary, "runs": results},
            indent=2))
    plot(results, args.out / "curves.png", task.score)


if __name__ == "__main__":
    main()
