"""TeamTR against stale-sequential and single-agent GRPO on a reasoning-gym task, with a team
of language models, at a matched rollout budget.

Every method trains the same team (``n_agents`` copies of ``model``, a LoRA adapter each;
single-agent GRPO: one adapter playing every role) from the same seeds until it has sampled
``total_episodes`` rollout episodes, then the greedy team answers the task's held-out items
(``team_envs/reasoning-v0``: items never drawn in training, scored by reasoning-gym's own
scorer). The untrained team is scored the same way. Every seed answers the same held-out
items, so the intervals are those of a crossed design, the seeds' variance plus the items'
(:func:`~trainers.common.intervals.seed_item_interval`); the paired differences are taken per
seed and item.

Run (CPU, the embedded SmolLM2-135M-Instruct base) as docs/teamtr_reasoning.md was run (its
current committed results are docs/teamtr_reasoning_sample_std_results.json; the defaults are
the larger settings that were never run, about 29 minutes a stage)::

    python examples/teamtr_reasoning.py --prompts-per-rollout 4 --group-size 4 \
        --total-episodes 48 --max-new-tokens 16 --update-epochs 1 --held-out 32 \
        --methods teamtr,stale_sequential,single_agent_grpo \
        --out runs/teamtr_reasoning_s3/results.json   # --resume to continue it

Every number of docs/teamtr_reasoning.md comes out of the JSON this writes. ``--summarize``
rebuilds that JSON's summary and interval from the per-seed, per-item runs it holds, training
and scoring nothing (how the committed results took the current interval)::

    python examples/teamtr_reasoning.py --out docs/teamtr_reasoning_results.json --summarize
"""

from __future__ import annotations

import glob
import importlib
import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentworld_envs.atomic_write import write_text_atomic
from agentworld_envs.cli_errors import UsageError
from agentworld_envs.run_journal import RunJournal
from trainers.common.flags import parse_args
from trainers.common.intervals import INTERVAL, seed_item_interval
from trainers.common.runlog import run_name
from trainers.common.team import EVAL_SEED_OFFSET, Team, build_team

METHODS = ("teamtr", "stale_sequential", "single_agent_grpo")


@dataclass
class Args:
    """The experiment's settings (lists are comma-separated)."""

    model: str = "smollm2"
    """Every agent's base model: a local directory, or smollm2 (the embedded base)."""
    task: str = "basic_arithmetic"
    """A reasoning-gym dataset."""
    config: dict[str, Any] = field(default_factory=lambda: {
        "min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1})
    """The dataset's settings, as JSON."""
    n_agents: int = 3
    """Agents in the team; the last one answers."""
    held_out: int = 48
    """Held-out items the greedy teams answer."""
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    """The trainers compared."""
    seeds: int = 3
    """Training seeds per method (each fixes the LoRA initialisation, rollouts and problems)."""
    total_episodes: int = 96
    """The rollout budget of every method."""
    prompts_per_rollout: int = 8
    """Problems per rollout batch."""
    group_size: int = 4
    """Episodes per problem (GRPO group)."""
    max_new_tokens: int = 24
    """Longest message, in tokens."""
    answer_prefix: str = "ANSWER:"
    """The answerer's messages start with this text (a prefill): without it the 135M base
    never writes the ANSWER: line the env reads within its message budget."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    lora_rank: int = 8
    """LoRA rank of each agent's adapter."""
    learning_rate: float = 2e-4
    """AdamW learning rate."""
    adv_std_ddof: int = 1
    """Advantages over the group's sample std (1: the reference's and the trainers' default) or
    its population std (0: the first committed runs')."""
    update_epochs: int = 2
    """Passes over a batch in one agent update."""
    torch_threads: int = 0
    """torch CPU threads (0: torch's default)."""
    out: Path = Path("runs/teamtr_reasoning/results.json")
    """Where the results go (JSON); each finished run also goes at once into the journal
    beside it (``<out stem>.runs.jsonl``), and logs to TensorBoard in ``runs/<out stem>/``
    beside it (a run an interruption cut short is logged afresh when it is run again)."""
    resume: bool = False
    """keep the runs already in the journal and run only the rest (same settings only)"""
    summarize: bool = False
    """train and score nothing: rebuild the summary and interval of the results at ``out``
    from the runs it holds (every other flag is ignored; its own settings are kept)"""


def trainer_args(args: Args, method: str, seed: int) -> Any:
    """The trainer's own ``Args`` for one run."""
    module = importlib.import_module(f"trainers.{method}")
    return module.Args(
        exp_name=method, seed=seed, env_id="team_envs/reasoning-v0", n_agents=args.n_agents,
        env_kwargs={"task": args.task, "config": args.config, "held_out": args.held_out},
        model=args.model, lora_rank=args.lora_rank, temperature=args.temperature,
        max_new_tokens=args.max_new_tokens, answer_prefix=args.answer_prefix,
        total_episodes=args.total_episodes,
        prompts_per_rollout=args.prompts_per_rollout, group_size=args.group_size,
        learning_rate=args.learning_rate, update_epochs=args.update_epochs,
        eval_episodes=args.prompts_per_rollout, eval_every=10**6, pass_k=1,
        adv_std_ddof=args.adv_std_ddof,
        log_dir=str(log_dir(args)), torch_threads=args.torch_threads)


def log_dir(args: Args) -> Path:
    """Where the experiment's runs log (TensorBoard), beside ``out`` and named for it."""
    return args.out.parent / "runs" / args.out.stem


def clear_cut_run(args: Args, method: str, seed: int) -> None:
    """Delete the log of a run of ``method`` and ``seed`` that an interruption cut short (the
    journal lacks it), so that its rerun's points are not logged twice, in two folders."""
    prefix = run_name(trainer_args(args, method, seed)).rsplit("__", 1)[0] + "__"
    for folder in log_dir(args).glob(f"{glob.escape(prefix)}*"):
        shutil.rmtree(folder)


def greedy_items(team: Team, seed: int) -> list[float]:
    """The greedy team's reward on every held-out item, in order."""
    return team.held_out_rewards(seed + EVAL_SEED_OFFSET, greedy=True)[:, 0].tolist()


def run(args: Args, method: str, seed: int) -> dict[str, Any]:
    """Train one method from one seed; its greedy held-out rewards, item by item."""
    started = time.perf_counter()
    clear_cut_run(args, method, seed)
    result = importlib.import_module(f"trainers.{method}").train(
        trainer_args(args, method, seed))
    items = greedy_items(result.team, seed)
    reported = result.held_out["held_out/greedy_reward"]
    if not np.isclose(np.mean(items), reported):  # greedy decoding is deterministic
        raise RuntimeError(f"{method} seed {seed}: greedy held-out reward {np.mean(items)} "
                           f"here, {reported} in the trainer's log")
    return {"method": method, "seed": seed, "items": items, "episodes": result.team.episodes,
            "stages": sum(1 for r in result.history if r["stage"] >= 0 and "time/stage_s" in r),
            "seconds": round(time.perf_counter() - started, 1)}


def untrained(args: Args, seed: int) -> dict[str, Any]:
    """The base with fresh (zero-effect) adapters, scored as the trained teams are."""
    started = time.perf_counter()
    team = build_team(trainer_args(args, "stale_sequential", seed))
    return {"method": "untrained", "seed": seed, "items": greedy_items(team, seed),
            "episodes": 0, "seconds": round(time.perf_counter() - started, 1)}


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Each method's mean greedy held-out reward with its interval, and the paired differences
    of each method from the untrained team and of TeamTR from each other method."""
    tables = {m: np.array([r["items"] for r in rs]) for m, rs in runs.items()}
    summary: dict[str, Any] = {m: {"greedy_reward": round(float(t.mean()), 4),
                                   "ci95": seed_item_interval(t, limits=(0.0, 1.0)),
                                   "per_seed": [round(float(row.mean()), 4) for row in t]}
                               for m, t in tables.items()}
    trained = [m for m in tables if m != "untrained"]
    pairs = [(m, "untrained") for m in trained] + [
        ("teamtr", m) for m in trained if m != "teamtr" and "teamtr" in tables]
    for first, second in pairs:
        diff = tables[first] - tables[second]
        summary[f"{first} - {second}"] = {"difference": round(float(diff.mean()), 4),
                                          "ci95": seed_item_interval(diff, limits=(-1.0, 1.0))}
    return summary


def resummarize(path: Path) -> dict[str, Any]:
    """Rebuild the summary and interval of the results at ``path`` from its runs (nothing is
    trained or scored); the point estimates come out as before, the intervals as
    :func:`summarize` now makes them. Writes the file back and returns the results."""
    results = json.loads(Path(path).read_text())
    summary = summarize(results["runs"])
    for name, line in results["summary"].items():  # the runs give the same point estimates
        point = "greedy_reward" if "greedy_reward" in line else "difference"
        if name not in summary or summary[name][point] != line[point]:
            raise ValueError(f"{path}: {name}'s {point} is {line[point]}, but its runs give "
                             f"{summary.get(name, {}).get(point)}")
    results = {**results, "interval": INTERVAL, "summary": summary}
    write_text_atomic(Path(path), json.dumps(results, indent=2))
    return results


def report(results: dict[str, Any]) -> None:
    for name, line in results["summary"].items():
        value = line.get("greedy_reward", line.get("difference"))
        print(f"{name:40s} {value:+.3f} 95% CI {line['ci95']}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(Args, argv, prog="teamtr_reasoning.py")
    if args.summarize:
        if not Path(args.out).is_file():
            raise SystemExit(f"--summarize: no results file at {args.out}")
        results = resummarize(args.out)
        report(results)
        return results
    if args.seeds < 1:
        raise UsageError(f"--seeds must be at least 1, got {args.seeds}")
    if not args.methods:
        raise UsageError(f"--methods: name one or more of {METHODS}")
    if unknown := sorted(set(args.methods) - set(METHODS)):
        raise UsageError(f"--methods: unknown methods {unknown}; choose from {METHODS}")
    for method in args.methods:  # the trainers' own checks, before any run
        trainer_args(args, method, 0)
    # what makes runs comparable (which methods and seeds to run only picks runs)
    settings = {k: v for k, v in asdict(args).items()
                if k not in ("out", "resume", "summarize", "methods", "seeds")}
    journal = RunJournal(args.out.with_name(f"{args.out.stem}.runs.jsonl"),
                         lambda run: (run["method"], run["seed"]), settings, args.resume,
                         added={"adv_std_ddof": 0})  # journals from before the setting
    with journal:
        for method in ("untrained", *args.methods):
            for seed in range(args.seeds):
                if (method, seed) in journal.done:
                    continue
                journal.keep(untrained(args, seed) if method == "untrained"
                             else run(args, method, seed))
                line = journal.done[method, seed]
                print(f"{method} seed {seed}: greedy held-out reward "
                      f"{np.mean(line['items']):.3f} ({line['seconds']:.0f} s)", flush=True)
    runs = {method: [journal.done[method, seed] for seed in range(args.seeds)]
            for method in ("untrained", *args.methods)}
    results = {"args": {**asdict(args), "out": str(args.out)}, "interval": INTERVAL,
               "summary": summarize(runs), "runs": runs}
    write_text_atomic(args.out, json.dumps(results, indent=2))
    report(results)
    return results


if __name__ == "__main__":
    main()
