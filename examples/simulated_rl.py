"""A simulated-RL loop: a policy learns in AgentWorld envs that exist only as a world model.

The agent is deliberately small: a tabular softmax policy over each scenario's admissible
candidate actions, trained with REINFORCE on the end-of-episode reward of
``gym.make_vec("AgentWorld/<Domain>-v0")``. Every step of all ``--num-envs`` episodes is one
batched world-model call. Swap in an LLM policy for real training; the env loop stays the same.

Run offline (the ``scripted`` backend: placeholder observations, real rule rewards; the
``os`` domain by default)::

    python examples/simulated_rl.py --updates 40

Offline, only rewards for actions can be earned: a scenario that scores an answer asks that an
observation showed it, and a placeholder shows nothing, so search (every scenario) and the
answer questions of other domains pay 0 until a world model is attached.

Quick check (CPU, seconds): ``python examples/simulated_rl.py --domain os --updates 2
--num-envs 4``

or against a world-model server (vLLM, SGLang, ``transformers serve``)::

    python examples/simulated_rl.py --base-url http://localhost:8000/v1 \\
        --model Qwen/Qwen-AgentWorld-35B-A3B --num-envs 16 --record runs/sim_calls.jsonl

Each update's line counts its fallback observations (the world model failed, gave nothing or
was cut off). Training stops after more than ``--max-faults`` failed world-model calls, and any
failed call ends the run with status 1 and one line saying how many failed and why.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections import defaultdict

import gymnasium as gym
import numpy as np

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
from agentworld_envs.backends.faults import DEFAULT_MAX_FAULTS
from agentworld_envs.backends.registry import check_backend_config
from agentworld_envs.cli import run_command
from agentworld_envs.cli_errors import UsageParser, int_at_least, number_type, seed_number
from agentworld_envs.domains import DOMAINS
from agentworld_envs.registration import env_id


class CandidatePolicy:
    """Softmax preferences per (scenario, turn) over the scenario's candidate actions.

    Preferences are keyed by the action's text, not its index: the env shuffles the candidates
    at every reset, so an index means nothing from one episode to the next.
    """

    def __init__(self, rng: np.random.Generator, learning_rate: float) -> None:
        self.rng = rng
        self.learning_rate = learning_rate
        self.preferences: dict[tuple[str, int, str], float] = defaultdict(float)
        self.baseline: dict[str, float] = defaultdict(float)

    def _probabilities(self, scenario: str, turn: int, candidates: list[str]) -> np.ndarray:
        logits = np.array([self.preferences[scenario, turn, c] for c in candidates])
        weights = np.exp(logits - logits.max())
        return weights / weights.sum()

    def act(self, scenario: str, turn: int, candidates: list[str]) -> str:
        """Sample a candidate action."""
        probabilities = self._probabilities(scenario, turn, candidates)
        return candidates[int(self.rng.choice(len(candidates), p=probabilities))]

    def learn(self, scenario: str, choices: list[tuple[int, str, list[str]]],
              reward: float) -> None:
        """REINFORCE on one finished episode, against a per-scenario running baseline."""
        advantage = reward - self.baseline[scenario]
        self.baseline[scenario] += 0.1 * advantage
        for turn, choice, candidates in choices:
            probabilities = self._probabilities(scenario, turn, candidates)
            for candidate, probability in zip(candidates, probabilities, strict=True):
                gradient = float(candidate == choice) - probability
                self.preferences[scenario, turn, candidate] += (
                    self.learning_rate * advantage * gradient)


def backend_config(args: argparse.Namespace) -> str | dict:
    """The world model: a server when ``--base-url`` is given, else the offline default."""
    if args.base_url is None:
        return "scripted"
    return {"name": "openai", "model": args.model, "base_url": args.base_url,
            "api_key_env": args.api_key_env, "timeout_s": args.timeout_s}


def main(argv: list[str] | None = None) -> list[float]:
    """Train; returns the mean episode reward of each update."""
    parser = UsageParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", default="os", choices=sorted(DOMAINS),
                        help="the AgentWorld domain whose scenarios are played (offline, search "
                             "pays 0: its answers need a world model's observations)")
    parser.add_argument("--num-envs", type=int_at_least(1), default=8,
                        help="episodes played at once; each step is one batched model call")
    parser.add_argument("--updates", type=int_at_least(1), default=30,
                        help="batches of num-envs episodes")
    parser.add_argument("--learning-rate", type=number_type(float, 0), default=0.5,
                        help="step size of the policy's preference updates")
    parser.add_argument("--seed", type=seed_number, default=0,
                        help="seed of the envs and of the policy's sampling")
    parser.add_argument("--base-url", help="an OpenAI-compatible world-model server")
    parser.add_argument("--model", default="Qwen/Qwen-AgentWorld-35B-A3B",
                        help="the model the server serves")
    parser.add_argument("--api-key-env", default=None, help="variable holding the API key")
    parser.add_argument("--timeout-s", type=float, default=600.0,
                        help="each world-model request's time limit")
    parser.add_argument("--max-tokens", type=int_at_least(1), default=8192,
                        help="the world model's token limit per observation")
    parser.add_argument("--record", help="record every world-model call to this JSONL file")
    parser.add_argument("--max-faults", type=int_at_least(-1), default=DEFAULT_MAX_FAULTS,
                        help="failed world-model calls to go on after; -1: never stop")
    args = parser.parse_args(argv)
    backend = backend_config(args)
    check_backend_config(backend)  # a bad URL or timeout: one line, before any env is built
    envs = gym.make_vec(env_id(args.domain), num_envs=args.num_envs, backend=backend,
                        record_path=args.record, sampling={"max_tokens": args.max_tokens},
                        max_faults=args.max_faults)
    try:
        with warnings.catch_warnings():  # each step's fault warning: faults.check says it once
            warnings.filterwarnings("ignore", "the world model", RuntimeWarning)
            curve = train(envs, args)
    finally:
        envs.close()
    envs.unwrapped.sim.faults.check("the rewards above rest on fallback observations")
    return curve


def train(envs: gym.vector.VectorEnv, args: argparse.Namespace) -> list[float]:
    """REINFORCE over ``args.updates`` batches of finished episodes; each update's line counts
    its fallback observations."""
    sim = envs.unwrapped.sim  # counts model calls, failed ones and observations by source
    policy = CandidatePolicy(np.random.default_rng(args.seed), args.learning_rate)
    _, infos = envs.reset(seed=args.seed)
    scenarios = list(infos["scenario_id"])
    candidates = [list(c) for c in infos["candidate_actions"]]
    choices: list[list[tuple[int, str, list[str]]]] = [[] for _ in range(args.num_envs)]
    curve: list[float] = []
    finished: list[float] = []
    fallbacks = episodes = 0
    while len(curve) < args.updates:
        actions = []
        for i in range(args.num_envs):
            choice = policy.act(scenarios[i], len(choices[i]), candidates[i])
            choices[i].append((len(choices[i]), choice, candidates[i]))
            actions.append(choice)
        _, rewards, terminated, truncated, infos = envs.step(actions)
        for i in np.flatnonzero(terminated | truncated):
            policy.learn(scenarios[i], choices[i], float(rewards[i]))
            finished.append(float(rewards[i]))
            episodes += 1
            choices[i] = []
            scenarios[i] = infos["scenario_id"][i]  # same-step autoreset: the next episode
            candidates[i] = list(infos["candidate_actions"][i])
        if len(finished) >= args.num_envs:
            curve.append(float(np.mean(finished)))
            finished = []
            print(f"update {len(curve):3d}: mean reward {curve[-1]:.2f} "
                  f"({sim.sources['fallback'] - fallbacks} fallback observations)")
            fallbacks = sim.sources["fallback"]
    moved = sum(value != 0.0 for value in policy.preferences.values())
    print(f"learned from {episodes} episodes: {moved} action preferences moved")
    return curve


if __name__ == "__main__":
    sys.exit(run_command(main))
