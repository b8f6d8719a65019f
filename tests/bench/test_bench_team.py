"""Benchmarks (not in the default run): ``pytest tests/bench -m benchmark --benchmark-only``.

* rollout throughput of the symbolic team envs, batched with policy sampling, against playing
  the same episodes one by one through the PettingZoo AEC API (``batched_over_pettingzoo``,
  episodes per second, at 2 and 8 agents);
* the cost of one TeamTR stage against one stale sequential stage at the same team size
  (``teamtr_over_stale_sequential``, mean seconds);
* the AEC step of each symbolic team env against PettingZoo's ``rps_v2`` (the same random-action
  AEC loop, the two timed alternately); ``speed_vs_rps`` (team steps per second over rps steps
  per second, goal at least 0.5) goes to ``benchmark.extra_info`` and to the terminal. Needs
  ``pygame`` (rps imports it);
* one TeamTR stage of a SmolLM2 team, here and in another checkout of the project named by
  ``AGENTWORLD_BASELINE`` (an earlier commit, e.g. ``git worktree add /tmp/before 24c5a24``),
  in the same run, with the floor under this checkout's stage (:mod:`tests.bench.lm_stage_floor`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pettingzoo
import pytest
import torch

import team_envs  # noqa: F401
from trainers import stale_sequential, teamtr
from trainers.common.team import build_team
from trainers.policies.lm import CausalLMPolicy

pytestmark = pytest.mark.benchmark
EPISODES = 1024
EPISODES_PER_S: dict[tuple[str, int], float] = {}
"""Episodes per second of the rollout benchmarks of this run, by (way, team size)."""
STAGE_S: dict[tuple[str, int], float] = {}
"""Mean seconds of the stage benchmarks of this run, by (algorithm, team size)."""


def _mean_s(benchmark) -> float | None:
    """The benchmark's mean seconds per round; None under ``--benchmark-disable`` (no stats)."""
    stats = getattr(benchmark, "stats", None)
    return None if stats is None else stats.stats.mean


@pytest.mark.parametrize("n_agents", [2, 4, 8])
def test_batched_rollout_throughput(benchmark, n_agents: int) -> None:
    team = build_team(teamtr.Args(n_agents=n_agents, log_dir=""))
    batch = benchmark(team.collect, EPISODES // 4, 4)
    assert batch.episodes == EPISODES
    if (mean := _mean_s(benchmark)) is None:
        return
    EPISODES_PER_S["batched", n_agents] = EPISODES / mean
    benchmark.extra_info["episodes_per_second"] = EPISODES / mean


@pytest.mark.parametrize("n_agents", [2, 8])
def test_pettingzoo_rollout_throughput(benchmark, n_agents: int) -> None:
    team = build_team(teamtr.Args(n_agents=n_agents, log_dir=""))
    env = pettingzoo.make("aec", "team_envs/relay-v0", n_agents=n_agents)
    generator = torch.Generator().manual_seed(0)

    def play(episodes: int = 64) -> None:
        for seed in range(episodes):
            env.reset(seed=seed)
            for name in env.agent_iter():
                observation, _, terminated, truncated, _ = env.last()
                if terminated or truncated:
                    env.step(None)
                    continue
                agent = int(name.split("_")[1])
                private = observation.get("private", np.zeros(0, dtype=np.int64))
                with torch.no_grad():
                    message = team.policies[agent].sample(
                        observation["context"][None], private[None], generator)[0]
                env.step(message[0])

    benchmark(play)
    if (mean := _mean_s(benchmark)) is None:
        return
    benchmark.extra_info["episodes_per_second"] = 64 / mean
    if ("batched", n_agents) in EPISODES_PER_S:
        ratio = EPISODES_PER_S["batched", n_agents] / (64 / mean)
        benchmark.extra_info["batched_over_pettingzoo"] = round(ratio, 1)
        print(f"\n{n_agents} agents: batched rollouts {ratio:.1f}x the PettingZoo AEC loop's "
              "episodes per second")


@pytest.mark.parametrize("n_agents", [2, 4, 8])
@pytest.mark.parametrize("algorithm", ["teamtr", "stale_sequential"])
def test_stage_cost(benchmark, algorithm: str, n_agents: int) -> None:
    """One stage of the real trainer (TeamTR: n rollouts and trust-region checks; stale: one)."""
    module = {"teamtr": teamtr, "stale_sequential": stale_sequential}[algorithm]
    rollouts = n_agents if algorithm == "teamtr" else 1
    args = module.Args(n_agents=n_agents, log_dir="", eval_episodes=1,
                       total_episodes=rollouts * 256)

    def fresh_team() -> tuple[tuple, dict]:
        return (args,), {"team": build_team(args)}

    result = benchmark.pedantic(module.train, setup=fresh_team, rounds=5)
    assert result.team.collections == rollouts
    if (mean := _mean_s(benchmark)) is None:
        return
    STAGE_S[algorithm, n_agents] = mean
    if ("teamtr", n_agents) in STAGE_S and ("stale_sequential", n_agents) in STAGE_S:
        ratio = STAGE_S["teamtr", n_agents] / STAGE_S["stale_sequential", n_agents]
        benchmark.extra_info["teamtr_over_stale_sequential"] = round(ratio, 2)
        print(f"\n{n_agents} agents: a TeamTR stage costs {ratio:.2f}x a stale sequential one")


AEC_EPISODES = 200


def _random_aec_loop(env: Any, episodes: int) -> int:
    """Play ``episodes`` episodes with pre-drawn random actions; return the steps taken."""
    pools = {}
    for index, agent in enumerate(env.possible_agents):
        space = env.action_space(agent)
        space.seed(index)
        pools[agent] = [space.sample() for _ in range(64)]
    steps = 0
    for seed in range(episodes):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            _, _, terminated, truncated, _ = env.last()
            env.step(None if terminated or truncated else pools[agent][steps % 64])
            steps += 1
    return steps


@pytest.mark.parametrize("name", ["team_envs/relay-v0", "team_envs/referential-v0",
                                  "team_envs/compositional-v0"])
def test_aec_step_vs_rps(benchmark, name: str) -> None:
    """The team env's AEC loop, timed alternately with ``rps_v2``'s so that both see the same
    machine (it is shared and its speed drifts); the ratio is of the medians."""
    rps = pytest.importorskip("pettingzoo.classic.rps_v2", exc_type=ImportError).env()
    team = pettingzoo.make("aec", name, n_agents=2)
    envs = {"rps_v2": rps, name: team}
    steps = {key: _random_aec_loop(env, AEC_EPISODES) for key, env in envs.items()}  # warm-up
    rates: dict[str, list[float]] = {key: [] for key in envs}
    for _ in range(7):
        for key, env in envs.items():
            start = time.perf_counter()
            _random_aec_loop(env, AEC_EPISODES)
            rates[key].append(steps[key] / (time.perf_counter() - start))
    benchmark.pedantic(_random_aec_loop, args=(team, AEC_EPISODES), rounds=5, warmup_rounds=1)
    team_rate, rps_rate = (float(np.median(rates[key])) for key in (name, "rps_v2"))
    benchmark.extra_info.update(steps_per_second=round(team_rate),
                                rps_steps_per_second=round(rps_rate),
                                speed_vs_rps=round(team_rate / rps_rate, 2))
    print(f"{name}: {team_rate:,.0f} AEC steps/s = {team_rate / rps_rate:.2f}x rps_v2 "
          f"({rps_rate:,.0f} steps/s, timed alternately)")


LM_STAGE = dict(env_id="team_envs/arithmetic_chain-v0", n_agents=3, lora_rank=8,
                prompts_per_rollout=2, group_size=2, total_episodes=12, eval_episodes=1,
                eval_every=1000, update_epochs=1, log_dir="", delta=1e3)
"""One TeamTR stage of a 3-agent LoRA team: 4 episodes, one update epoch (``teamtr.Args``)."""


def _lm_stage(model: str, max_new_tokens: int) -> teamtr.Args:
    return teamtr.Args(model=model, max_new_tokens=max_new_tokens, **LM_STAGE)


def _smollm2() -> str:
    pytest.importorskip("gguf")
    from agentworld_envs.models.pretrained import base_model_dir

    try:
        return str(base_model_dir())
    except ImportError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("model", ["tiny", "smollm2"])
def test_lm_team_stage(benchmark, model: str, tiny_lm_dir) -> None:
    """One TeamTR stage of 3 LoRA agents on one base (tiny random LM: 8-token messages;
    SmolLM2-135M: 32): ``extra_info`` has the stage's seconds, generated tokens per second of
    rollout, and the distinct parameter storages of the team against those of one agent's model
    (base held once: the team adds only its adapters)."""
    pytest.importorskip("peft")
    args = _lm_stage(str(tiny_lm_dir) if model == "tiny" else _smollm2(),
                     8 if model == "tiny" else 32)

    def fresh_team() -> tuple[tuple, dict]:
        return (args,), {"team": build_team(args)}

    result = benchmark.pedantic(teamtr.train, setup=fresh_team, rounds=1)
    stage = result.history[1]
    policies = result.team.policies
    held = {p.untyped_storage().data_ptr() for q in policies for p in q.module.parameters()}
    base = {p.untyped_storage().data_ptr() for n, p in policies[0].module.named_parameters()
            if "lora_" not in n}
    adapters = sum(len(q.trainable_parameters()) for q in policies)
    assert len(held) == len(base) + adapters
    benchmark.extra_info.update(
        stage_s=round(stage["time/stage_s"], 2),
        tokens_per_s=round(stage["charts/tokens_per_s"], 1),
        rollout_s=round(stage["time/rollout_s"], 2), update_s=round(stage["time/update_s"], 2),
        param_storages=len(held), base_storages=len(base), adapter_storages=adapters)
    print(f"{model}: stage {stage['time/stage_s']:.1f} s, {stage['charts/tokens_per_s']:.1f} "
          f"tokens/s, {len(held)} parameter storages ({len(base)} base once + {adapters} "
          "adapter)")


STAGE_SETTINGS = {"one thread, float32": (1, "float32"), "every core, float32": (None, "float32"),
                  "every core, bfloat16": (None, "bfloat16")}
"""``torch_threads`` and ``dtype`` of each setting; the first (the trainers' default before
language-model teams kept every core) is the baseline of the ratios."""


@pytest.mark.parametrize("model", ["tiny", "smollm2"])
def test_lm_team_stage_threads_and_dtype(benchmark, model: str, tiny_lm_dir) -> None:
    """The stage of :func:`test_lm_team_stage` under each of :data:`STAGE_SETTINGS`, one
    after the other in this run: ``extra_info`` has each setting's stage, rollout and update
    seconds and its speed-up over the one-thread float32 stage (the ratio of stage seconds)."""
    pytest.importorskip("peft")
    args = _lm_stage(str(tiny_lm_dir) if model == "tiny" else _smollm2(),
                     8 if model == "tiny" else 32)
    threads = torch.get_num_threads()
    stages: dict[str, dict[str, float]] = {}

    def run_all() -> None:
        for name, (torch_threads, dtype) in STAGE_SETTINGS.items():
            torch.set_num_threads(threads)  # what torch started with, for the unset setting
            setting = dataclasses.replace(args, torch_threads=torch_threads, dtype=dtype)
            stages[name] = teamtr.train(setting, team=build_team(setting)).history[1]

    try:
        benchmark.pedantic(run_all, rounds=1)
    finally:
        torch.set_num_threads(threads)
    base = stages["one thread, float32"]["time/stage_s"]
    for name, stage in stages.items():
        figures = {key: round(stage[f"time/{key}"], 2) for key in ("stage_s", "rollout_s",
                                                                   "update_s")}
        figures["speedup"] = round(base / stage["time/stage_s"], 2)
        benchmark.extra_info[name] = figures
        print(f"{model} [{name}] {figures} ({threads} threads available)")


@pytest.mark.parametrize("model", ["tiny", "smollm2"])
def test_lm_rollout_old_logprobs_from_sampling(benchmark, model: str, tiny_lm_dir,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3-agent LoRA team's rollout (4 episodes) with the old log-probs taken from the
    sampling pass, against the same rollout re-scoring them in a second forward pass (the
    earlier way), timed alternately in this run; ``speedup`` is the ratio of the medians."""
    pytest.importorskip("peft")
    args = _lm_stage(str(tiny_lm_dir) if model == "tiny" else _smollm2(),
                     8 if model == "tiny" else 32)
    team = build_team(args)
    generated = CausalLMPolicy._generated

    def rescored(self, prompts, greedy, seed):  # the earlier way: no log-probs kept
        return generated(self, prompts, greedy, seed)[0], None

    def rollout(rescore: bool) -> float:
        with monkeypatch.context() as patch:
            if rescore:
                patch.setattr(CausalLMPolicy, "_generated", rescored)
            start = time.process_time()
            team.collect(2, 2)
            return time.process_time() - start

    rollout(False)  # warm-up
    seconds: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(3):
        for rescore in (False, True):
            seconds[rescore].append(rollout(rescore))
    benchmark.pedantic(team.collect, args=(2, 2), rounds=1)
    kept, scored = (float(np.median(seconds[key])) for key in (False, True))
    benchmark.extra_info.update(recorded_cpu_s=round(kept, 2), rescored_cpu_s=round(scored, 2),
                                speedup=round(scored / kept, 2))
    print(f"{model}: rollout {kept:.1f} CPU s with the sampling pass's log-probs, {scored:.1f} "
          f"re-scoring them ({scored / kept:.2f}x)")


STAGE_DRIVER = """
import json, sys
from trainers import teamtr
from trainers.common.team import build_team
args = teamtr.Args(**json.loads(sys.argv[1]))
history = teamtr.train(args, team=build_team(args)).history
print(json.dumps({k: v for k, v in history[1].items() if k.startswith("time/")}))
"""
"""Trains one stage with ``teamtr.Args`` from JSON, in whichever checkout ``PYTHONPATH`` puts
first, and prints its ``time/`` figures: fields every version since the LM teams has."""


def _stage_in(checkout: Path | None, settings: dict[str, Any]) -> dict[str, float]:
    """The ``time/`` figures of a stage trained in a fresh process on ``checkout``'s code, or
    on this checkout's (None) with its floor (:mod:`tests.bench.lm_stage_floor`), each version
    with its own defaults (threads among them)."""
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout),
                                                          env.get("PYTHONPATH")]))
    driver = ["-c", STAGE_DRIVER] if checkout else ["-m", "tests.bench.lm_stage_floor"]
    done = subprocess.run([sys.executable, *driver, json.dumps(settings)], env=env,
                          cwd=checkout or Path(__file__).parents[2], capture_output=True,
                          text=True)
    if done.returncode:
        pytest.fail(f"the stage failed on {checkout or 'this checkout'}:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def baseline_checkout() -> Path:
    """The checkout ``AGENTWORLD_BASELINE`` names; the benchmark is skipped when it is unset,
    and fails with the reason when it names no checkout of the project (the stage would run on
    the installed code, this checkout's, and be compared with itself)."""
    value = os.environ.get("AGENTWORLD_BASELINE")
    if not value:
        pytest.skip("set AGENTWORLD_BASELINE to another checkout of the project")
    path = Path(value).resolve()
    if not (path / "trainers" / "teamtr.py").is_file():
        pytest.fail(f"AGENTWORLD_BASELINE={value}: not a checkout of the project (no "
                    f"trainers/teamtr.py in {path})", pytrace=False)
    return path


def test_lm_team_stage_against_a_checkout(benchmark) -> None:
    """The stage of :func:`test_lm_team_stage` (SmolLM2-135M, 3 agents, 4 episodes, 32-token
    messages) in ``AGENTWORLD_BASELINE``'s code with its defaults, then in this checkout's with
    float32 (the default) and with bfloat16, each in a fresh process, one after the other:
    ``extra_info`` has each one's stage, rollout, scoring and update seconds and its speed-up
    over the baseline's stage; for this checkout also the floor under its stage
    (:mod:`tests.bench.lm_stage_floor`: the passes and the prefill as measured, decoding at the
    cost of its matrix products alone) and the speed-up that floor would give."""
    pytest.importorskip("peft")
    baseline = baseline_checkout()
    shared = {**LM_STAGE, "model": _smollm2(), "max_new_tokens": 32}
    runs = {"baseline": (baseline, shared), "float32": (None, shared),
            "bfloat16": (None, {**shared, "dtype": "bfloat16"})}
    stages: dict[str, dict[str, float]] = {}

    def run_all() -> None:
        for name, (checkout, values) in runs.items():
            stages[name] = _stage_in(checkout, values)

    benchmark.pedantic(run_all, rounds=1)
    before = stages["baseline"]["time/stage_s"]
    for name, stage in stages.items():
        figures = {key: round(stage.get(f"time/{key}", 0.0), 2)
                   for key in ("stage_s", "rollout_s", "scoring_s", "update_s")}
        figures["speedup"] = round(before / stage["time/stage_s"], 2)
        if "floor/floor_s" in stage:
            figures.update({key.removeprefix("floor/"): round(value, 4)
                            for key, value in stage.items() if key.startswith("floor/")})
            figures["floor_speedup"] = round(before / stage["floor/floor_s"], 2)
        benchmark.extra_info[name] = figures
        print(f"[{name}] {figures}")
