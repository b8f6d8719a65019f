"""Sim-to-real: does an agent trained in a simulated AgentFloor task do better in the real one?

The task is a branching one (:func:`floor_tasks.task_sets.branching_tasks`, default C1): the
right submission depends on the status the lookup returns, so a policy must read observations.
The agent is a linear softmax policy over the candidate actions, trained with REINFORCE and an
entropy bonus (CleanRL-style, one file). Its features are hashed pairs of (a word of a value
the latest tool result holds, a word of the candidate), the candidate's words by turn, and
whether each record id in the candidate appears in the prompt or in the latest observation, so
that what it learns carries over to records it never saw.

Arms, each with ``--seeds`` seeds and the same ``--updates`` policy updates of ``--batch``
episodes (only the capped arms stop early, by design):

``untrained``       the initial policy, never updated;
``sim``             ``AgentWorld/Floor-v0`` with the embedded fine-tuned world model and the
                    simulated reward (the AgentFloor verifier over the simulated episode);
``sim-garbage``     the same with the ``scripted`` placeholder as the world model (the control:
                    nothing it shows is true, so nothing should transfer);
``real``            the real ``AgentFloor`` env for every update;
``real-capped``     the real env for the first ``--real-updates`` updates only;
``real-capped+sim`` those real updates, then simulated ones up to ``--updates``.

Every arm is scored on the real env (the task's own step budget) on held-out variants
(``--eval-variants``: other records and other prompt wordings than ``--train-variants``),
greedily, every ``--eval-every`` updates, as balanced success: the mean over decisions of the
success rate on the variants that need it. A policy blind to observations scores 0.5 at most.
Training episodes have ``--train-steps`` steps. The world model's greedy answers are cached in
``<out>/world_model_calls.jsonl``, so a prompt is generated once across arms and seeds. Writes
``<out>/results.json`` and ``<out>/curves.png``.

Run (CPU; the first run generates the world model's answers, about 20 minutes)::

    python examples/sim_to_real.py --out runs/sim_to_real

Quick check (seconds, placeholder world model for both sim arms):
``python examples/sim_to_real.py --out /tmp/s2r --seeds 1 --updates 2 --batch 4
--world-model scripted``
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
from agentworld_envs.models import DOMAIN_ADAPTERS, EMBEDDED_SAMPLING, embedded_world_model
from agentworld_envs.protocol.bounded_json import find_objects
from agentworld_envs.registration import env_id
from floor_tasks.env import FloorEnv
from floor_tasks.task_sets import branching_tasks, decisions
from trainers.common.args import parse_args

ARMS = ("untrained", "sim", "sim-garbage", "real", "real-capped", "real-capped+sim")
_WORD = re.compile(r"[a-z0-9_\-]+")


@dataclass
class Args:
    """Sim-to-real on a branching AgentFloor task (lists are comma-separated)."""

    task: str = "C1"
    """A branching AgentFloor task."""
    train_variants: list[str] = field(default_factory=lambda: ["v0", "v1", "i1", "i3"])
    """Variants trained on (both decisions must occur)."""
    eval_variants: list[str] = field(default_factory=lambda: ["v2", "v3", "v4", "i2", "i4"])
    """Held-out variants scored on the real env: other wordings, and records never seen."""
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
    arms: list[str] = field(default_factory=lambda: list(ARMS))
    """The arms to run."""
    world_model: str = "embedded"
    """The simulated arms' world model: ``embedded`` (the fine-tuned default) or ``scripted``
    (the placeholder, for quick checks); ``sim-garbage`` always uses the placeholder."""
    out: Path = Path("runs/sim_to_real")
    """Where results, curves and the world model's recorded answers go."""


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


def real_batch(args: Args, policy: LinearPolicy, rng: np.random.Generator,
               variants: list[str], steps: int | None) -> list[tuple[list[tuple], float]]:
    """Episodes on the real env, one variant drawn from ``rng`` each."""
    episodes = []
    for _ in range(args.batch):
        variant = variants[int(rng.integers(len(variants)))]
        reward, trajectory = play_real(args.task, variant, policy, steps,
                                       seed=int(rng.integers(2**31)), greedy=False)
        episodes.append((trajectory, reward))
    return episodes


def play_real(task: str, variant: str, policy: LinearPolicy, steps: int | None, seed: int,
              greedy: bool) -> tuple[float, list[tuple]]:
    env = FloorEnv(task, variant=variant, max_steps=steps)
    prompt, _ = env.reset(seed=seed)
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
    """Batches of simulated episodes from a vector of ``AgentWorld/Floor-v0`` envs."""

    def __init__(self, args: Args, backend: Any, seed: int) -> None:
        self.args = args
        self.agreement: list[bool] = []
        self.envs = gym.make_vec(
            env_id("floor"), num_envs=args.batch, backend=backend, max_steps=args.train_steps,
            sampling=EMBEDDED_SAMPLING,
            scenarios=[f"{args.task}/{v}" for v in args.train_variants],
            record_path=str(args.out / "world_model_calls.jsonl"))
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
                if rewards[i] is None:  # same-step autoreset: the ended episode's final_info
                    rewards[i] = float(reward[i])
                    agree = infos["final_info"]["reward_breakdown"]["agree"][i]
                    self.agreement.append(bool(agree))
            if all(r is not None for r in rewards):
                break
        return [(t, r) for t, r in zip(trajectories, rewards, strict=True) if r is not None]

    def close(self) -> None:
        self.envs.close()


def evaluate(args: Args, policy: LinearPolicy) -> float:
    """Balanced greedy success on the held-out variants of the real env (its own budget): the
    mean over decisions of the success rate on the variants needing that decision, so that a
    policy blind to observations (one decision everywhere) scores 0.5 at most."""
    needed = decisions(args.task)
    by_decision: dict[str, list[float]] = {}
    for variant in args.eval_variants:
        reward, _ = play_real(args.task, variant, policy, None, seed=0, greedy=True)
        by_decision.setdefault(needed[variant], []).append(reward)
    return float(np.mean([np.mean(rewards) for rewards in by_decision.values()]))


def run_arm(args: Args, arm: str, seed: int, world_model: Any) -> dict[str, Any]:
    rng = np.random.default_rng([seed, ARMS.index(arm)])
    policy = LinearPolicy(np.random.default_rng(seed), args.learning_rate, args.entropy_coef)
    sim = None
    if arm in ("sim", "real-capped+sim"):
        sim = SimTrainer(args, world_model, seed * 1000)
    elif arm == "sim-garbage":
        sim = SimTrainer(args, "scripted", seed * 1000)
    curve = [(0, evaluate(args, policy))]
    updates = {"untrained": 0, "real-capped": args.real_updates}.get(arm, args.updates)
    for update in range(1, updates + 1):
        real = arm == "real" or (arm.startswith("real-capped") and update <= args.real_updates)
        batch = (real_batch(args, policy, rng, args.train_variants, args.train_steps) if real
                 else sim.batch(policy))
        policy.update(batch)
        if update % args.eval_every == 0 or update == updates:
            curve.append((update, evaluate(args, policy)))
    if sim is not None:
        sim.close()
    return {"curve": curve, "final": curve[-1][1], "updates": updates,
            "sim_real_agreement": float(np.mean(sim.agreement)) if sim and sim.agreement
            else None}


def interval(values: list[float], draws: int = 10000) -> tuple[float, float]:
    """A 95% bootstrap interval of the mean over seeds (resampling seeds, seeded)."""
    rng = np.random.default_rng(0)
    means = rng.choice(values, size=(draws, len(values))).mean(axis=1)
    return (round(float(np.percentile(means, 2.5)), 3), round(float(np.percentile(means, 97.5)), 3))


def plot(results: dict[str, list[dict[str, Any]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for arm, runs in results.items():
        steps = sorted({u for run in runs for u, _ in run["curve"]})
        means = [np.mean([dict(run["curve"])[u] for run in runs]) for u in steps]
        ax.plot(steps, means, marker="o", label=f"{arm} ({len(runs)} seeds)")
    ax.set_xlabel("policy updates")
    ax.set_ylabel("balanced success, held-out real variants")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    args = parse_args(Args, prog="sim_to_real.py")
    if args.task not in branching_tasks():
        raise SystemExit(f"{args.task} is not a branching task; choose from {branching_tasks()}")
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, Any]]] = {}
    # one live world model for every arm and seed, so its greedy memo is shared
    simulated = {"sim", "real-capped+sim"} & set(args.arms)
    world_model = (embedded_world_model(DOMAIN_ADAPTERS["floor"])
                   if args.world_model == "embedded" and simulated else args.world_model)
    for arm in args.arms:
        results[arm] = [run_arm(args, arm, seed, world_model) for seed in range(args.seeds)]
        finals = [run["final"] for run in results[arm]]
        print(f"{arm:16s} balanced success {np.mean(finals):.2f} "
              f"95% CI {interval(finals)}", flush=True)
    summary = {arm: {"balanced_success": float(np.mean([r["final"] for r in runs])),
                     "ci95": interval([r["final"] for r in runs]),
                     "per_seed": [r["final"] for r in runs],
                     "sim_real_agreement": [r["sim_real_agreement"] for r in runs]}
               for arm, runs in results.items()}
    (args.out / "results.json").write_text(json.dumps(
        {"args": {**asdict(args), "out": str(args.out)}, "summary": summary,
         "runs": results}, indent=2))
    plot(results, args.out / "curves.png")


if __name__ == "__main__":
    main()
