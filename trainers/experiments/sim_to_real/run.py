"""Running the experiment: one arm and seed (:func:`run_arm`), the learning curves' plot, and
:func:`main` (``examples/sim_to_real.py``), which writes ``results.json`` and ``curves.png``."""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import numpy as np

from agentworld_envs.atomic_write import write_text_atomic
from agentworld_envs.backends import parse_backend_arg
from agentworld_envs.backends.embedded import DOMAIN_ADAPTERS, embedded_world_model
from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.backends.replay import ReplayedWarning
from agentworld_envs.cli_errors import UsageError, on_interrupt
from agentworld_envs.run_journal import RunJournal
from trainers.common.flags import parse_args
from trainers.common.intervals import INTERVAL
from trainers.experiments.sim_to_real.args import Args
from trainers.experiments.sim_to_real.arms import (
    BLIND,
    CONTROLS,
    RECORDING,
    record_path,
    sim_backend,
    task_arms,
)
from trainers.experiments.sim_to_real.linear import LinearAgent
from trainers.experiments.sim_to_real.mcp_record_controls import MCP_CONTROLS
from trainers.experiments.sim_to_real.ppo import PPOAgent
from trainers.experiments.sim_to_real.resume import run_journal
from trainers.experiments.sim_to_real.scoring import (
    balanced,
    evaluate,
    final_calls,
    interval,
    item_intervals,
)
from trainers.experiments.sim_to_real.shown_answers import shown_answers
from trainers.experiments.sim_to_real.shown_statuses import shown_statuses
from trainers.experiments.sim_to_real.tasks import FloorTask, McpTask, make_task

AGENTS = {"linear": LinearAgent, "ppo": PPOAgent}
_COUNTS = ("mcp_train", "mcp_eval", "seeds", "updates", "batch", "train_steps", "eval_every",
           "ppo_envs", "ppo_steps", "ppo_epochs", "ppo_minibatch", "ppo_max_length",
           "ppo_candidate_length")
"""Settings that must be at least 1."""
INTERVAL_TEXT = (f"{INTERVAL}; the items' variance taken within each decision, the score "
                 "balanced over decisions (an MCP family has one decision), cut to 0..1")
"""How ``results.json`` describes its intervals (:func:`~.scoring.interval`)."""
SHOWN = ("per call, the share of servers (from 4 reset seeds each) on which its observation, "
         "as an episode's first step, shows the true answer alone, with a wrong candidate, a "
         "wrong one only, no candidate but an error, or none: on the real twin here, in each "
         "simulated arm's simulator (training servers) under its summary")


class ResultsFileError(UsageError, ValueError):
    """``--summarize``: the file is not a results file whose summaries can be rebuilt (a
    ``ValueError``, as :func:`resummarize_file` raises it; for the script, one line, exit 2)."""


def run_arm(args: Args, task: FloorTask | McpTask, arm: str, seed: int,
            world_model: Any) -> dict[str, Any]:
    """Train one arm with one seed; score it on the held-out real variants along the way."""
    started = time.perf_counter()
    agent = AGENTS[args.agent](args, task, arm, seed, world_model)
    calls: dict[str, list[str]] = {}
    outcomes = evaluate(task, agent, calls)
    curve, scored = [(0, balanced(task, outcomes))], 1
    updates = {"untrained": 0, "real-capped": args.real_updates}.get(arm, args.updates)
    real_updates = 0
    for update in range(1, updates + 1):
        real = arm in ("real", BLIND) or (arm.startswith("real-capped")
                                          and update <= args.real_updates)
        real_updates += real
        agent.update(real=real)
        if update % args.eval_every == 0 or update == updates:
            outcomes = evaluate(task, agent, calls)
            curve.append((update, balanced(task, outcomes)))
            scored += 1
    failed = agent.close()
    per_update = args.batch if args.agent == "linear" else args.ppo_envs * args.ppo_steps
    unit = "episodes" if args.agent == "linear" else "timesteps"
    return {"curve": curve, "final": curve[-1][1], "items": outcomes, "calls": calls,
            "updates": updates,
            f"real_training_{unit}": real_updates * per_update,
            f"simulated_{unit}": (updates - real_updates) * per_update,
            "real_scoring_episodes": scored * len(task.eval),
            "failed_world_model_calls": failed,
            "seconds": round(time.perf_counter() - started, 1)}


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
    """``--world-model``: a backend name, or a JSON backend spec (a dict with its ``name``),
    checked as every command-line backend is (:func:`parse_backend_arg`).

    Raises:
        UsageError: the JSON is invalid, names no backend or does not fit it, or no backend
            has the name (the nearest ones named).
    """
    config = parse_backend_arg(text)
    return config if text.lstrip().startswith("{") else text


def main(argv: list[str] | None = None) -> None:
    with warnings.catch_warnings():  # every arm and seed after the first replays the first's
        warnings.filterwarnings("ignore", category=ReplayedWarning)  # recording: said once
        _main(argv)


def _main(argv: list[str] | None) -> None:
    args = parse_args(Args, argv, prog="sim_to_real.py")
    if args.summarize is not None:
        try:
            entries = resummarize_file(args.summarize)
        except ValueError as error:
            raise ResultsFileError(f"--summarize: {error}") from None
        for name, entry in entries.items():
            print(f"## {name}\n\n{table(entry['summary'])}", flush=True)
        return
    if small := [f"--{f.name.replace('_', '-')}" for f in fields(args)
                 if f.name in _COUNTS and getattr(args, f.name) < 1]:
        raise UsageError(f"{', '.join(small)} must be at least 1")
    task = make_task(args)
    if args.agent not in AGENTS:
        raise UsageError(f"unknown agent {args.agent!r}; choose from {sorted(AGENTS)}")
    if args.decided_by not in ("scenario", "shown"):
        raise UsageError(f"unknown --decided-by {args.decided_by!r}; choose scenario or shown")
    floor = isinstance(task, FloorTask)
    arms = task_arms(task)
    args.arms = args.arms or list(arms)
    if unknown := [a for a in args.arms if a not in arms]:
        raise UsageError(f"unknown arms {unknown} for {args.task}; "
                         f"choose from {arms} "
                         f"(the record controls: {CONTROLS} on a floor task, {MCP_CONTROLS} on "
                         "an MCP family)")
    spec = world_model_spec(args.world_model)
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, Any]]] = {}
    # one live world model for every arm and seed, so its greedy memo is shared
    simulated = {"sim", "real-capped+sim"} & set(args.arms)
    world_model = (embedded_world_model(DOMAIN_ADAPTERS[task.domain])
                   if args.world_model == "embedded" and simulated else spec)
    summary: dict[str, dict[str, Any]] = {}
    shown = {} if floor else {"real, training servers": shown_answers(task, task.train),
                              "real, held-out servers": shown_answers(task, task.eval)}
    simulators_shown: dict[str, Any] = {}  # by the simulator an arm trains in
    calls = args.out / RECORDING
    if calls.is_file() and calls.stat().st_size:
        print(f"{calls}: reusing the world-model answers recorded there (delete it to ask the "
              f"model afresh)", flush=True)
    stored = {**asdict(args), "out": str(args.out)}
    del stored["resume"]  # how the results were made, not what they are: a resumed run's equal
    with run_journal(args) as journal, on_interrupt(
            f"the finished runs are kept in {journal.path}; resume with --resume"):
        if args.resume:
            kept = sum((arm, seed) in journal.done for arm in args.arms
                       for seed in range(args.seeds))
            print(f"{journal.path}: resuming, {kept} of {len(args.arms) * args.seeds} runs "
                  "kept", flush=True)
        for arm in args.arms:
            runs = results[arm] = [finished_run(args, task, arm, seed, world_model, journal)
                                   for seed in range(args.seeds)]
            finals = [run["final"] for run in runs]
            summary[arm] = {
                "balanced_success": round(float(np.mean(finals)), 4),
                "ci95": interval(task, runs), "per_seed": finals,
                "wilson95_items_per_seed": item_intervals(runs),
                "held_out_items": len(task.eval), "seeds": len(runs),
                "final_calls": final_calls(runs),
                **{key: sum(run[key] for run in runs) for key in runs[0]
                   if key.startswith(("real_", "simulated_", "failed_"))},
                "seconds": round(sum(run["seconds"] for run in runs), 1)}
            if (backend := sim_backend(arm, world_model, task)) is not None:
                trained_in = "sim" if arm == "real-capped+sim" else arm  # the same world model
                if trained_in not in simulators_shown:
                    measure = shown_statuses if floor else shown_answers
                    simulators_shown[trained_in] = measure(task, task.train, backend,
                                                           record_path(args, backend))
                summary[arm]["shown_statuses" if floor else "shown_answers"] = \
                    simulators_shown[trained_in]
            print(f"{arm:16s} {task.score} {summary[arm]['balanced_success']:.2f} 95% CI "
                  f"{summary[arm]['ci95']} ({summary[arm]['seconds']:.0f} s)", flush=True)
            write_text_atomic(args.out / "results.json", json.dumps(  # after every arm
                {"args": stored,
                 "interval": INTERVAL_TEXT,
                 "blind_bound": 0.5 if floor else 1 / 3, "summary": summary,
                 **({"shown_answers": shown, "shown_answers_are": SHOWN} if shown else {}),
                 "runs": results},
                indent=2))
            write_text_atomic(args.out / "table.md", table(summary))
    plot(results, args.out / "curves.png", task.score)


def finished_run(args: Args, task: FloorTask | McpTask, arm: str, seed: int, world_model: Any,
                 journal: RunJournal) -> dict[str, Any]:
    """The run of ``arm`` and ``seed``: the journal's, else made now (:func:`run_arm`) and
    kept in the journal at once."""
    if (arm, seed) not in journal.done:
        try:
            run = run_arm(args, task, arm, seed, world_model)
        except TooManyFaultsError as error:
            raise SystemExit(f"{arm} seed {seed}: {error}") from error
        journal.keep({"arm": arm, "seed": seed, "run": run})
        failed = run["failed_world_model_calls"]
        print(f"{arm} seed {seed}: {run['final']:.2f} ({run['seconds']:.0f} s)"
              + (f", {failed} failed world-model calls (fallbacks)" if failed else ""),
              flush=True)
    return journal.done[arm, seed]["run"]


def table(summary: dict[str, dict[str, Any]]) -> str:
    """The arms as a Markdown table: the docs' tables are copies of it. The Wilson column is
    left out where no arm has it (results written before it was added)."""
    unit = ("timesteps" if any("real_training_timesteps" in row for row in summary.values())
            else "episodes")  # PPO's updates are counted in timesteps
    wilsons = all("wilson95_items_per_seed" in row for row in summary.values())
    rows = [f"| arm | real-env {unit} (training) / episodes (scoring) | simulated {unit} | "
            "success (95% CI) | "
            + ("Wilson 95% over a seed's items (lowest–highest bound) | " if wilsons else "")
            + "per seed | seconds |",
            "|---|---|---|---|" + ("---|" if wilsons else "") + "---|---|"]
    for arm, row in summary.items():
        low, high = row["ci95"]
        wilson = row.get("wilson95_items_per_seed", [])
        rows.append(
            f"| {arm} | {row[f'real_training_{unit}']:,} / {row['real_scoring_episodes']:,} | "
            f"{row[f'simulated_{unit}']:,} | {row['balanced_success']:.2f} ({low:.2f}–"
            f"{high:.2f}) | "
            + (f"{min(w[0] for w in wilson):.2f}–{max(w[1] for w in wilson):.2f} | "
               if wilsons else "")
            + ", ".join(f"{v:.2f}".removeprefix("0") for v in row["per_seed"])
            + f" | {row['seconds']:,.0f} |")
    return "\n".join(rows) + "\n"


TASK_FLAGS = ("task", "floor_records", "floor_records_seed", "train_variants", "eval_variants",
              "mcp_train", "mcp_eval")
"""The flags that pick a task's training and held-out variants."""


def stored_task(stored: dict[str, Any]) -> FloorTask | McpTask:
    """The task a results file's stored ``args`` ran on. Runs made before ``--floor-records``
    existed stored no such flag: the fixture split was then the only one, so they get
    ``--floor-records ''``."""
    known = {f.name for f in fields(Args)}
    values = {key: value for key, value in stored.items() if key in known}
    values.setdefault("floor_records", [])
    values["out"] = Path(values.get("out", Args.out))
    return make_task(Args(**values))


def task_items(task: FloorTask | McpTask, items: dict[str, float]) -> dict[str, float]:
    """A run's held-out items keyed by the task's variant names: runs of the fixture split
    made before the generated one named a floor variant without its task (``i3v0`` for
    ``C1/i3v0``)."""
    if isinstance(task, FloorTask) and not any("/" in variant for variant in items):
        prefix = task.eval[0].split("/")[0]
        return {f"{prefix}/{variant}": value for variant, value in items.items()}
    return items


def resummarize(entry: dict[str, Any], task: FloorTask | McpTask) -> dict[str, Any]:
    """An entry of a results file (its ``summary`` and ``runs``) with every arm's interval
    rebuilt from the runs' held-out items as :func:`main` now makes it (and each seed's Wilson
    interval over its items, where the entry has them), and its ``interval`` text. The point
    estimates (balanced success, per seed, each run's final score) are rebuilt too and must
    equal the stored ones; everything else is kept.

    Raises:
        ValueError: if a run's items are not the task's held-out variants, or a point
            estimate differs from the stored one.
    """
    summary = {}
    for arm, row in entry["summary"].items():
        runs = [{**run, "items": task_items(task, run["items"])} for run in entry["runs"][arm]]
        for seed, run in enumerate(runs):
            if sorted(run["items"]) != sorted(task.eval):
                raise ValueError(f"{arm} seed {seed}: its items are not the task's held-out "
                                 "variants")
            if not np.isclose(balanced(task, run["items"]), run["final"]):
                raise ValueError(f"{arm} seed {seed}: its items give "
                                 f"{balanced(task, run['items'])}, its final score is "
                                 f"{run['final']}")
        finals = [run["final"] for run in runs]
        if finals != row["per_seed"] or round(float(np.mean(finals)), 4) != \
                row["balanced_success"]:
            raise ValueError(f"{arm}: its runs give {finals}, the summary {row['per_seed']} "
                             f"({row['balanced_success']})")
        wilson = ({"wilson95_items_per_seed": item_intervals(runs)}
                  if "wilson95_items_per_seed" in row else {})
        summary[arm] = {**row, "ci95": interval(task, runs), **wilson}
    return {**entry, "interval": INTERVAL_TEXT, "summary": summary}


def resummarize_file(path: Path) -> dict[str, dict[str, Any]]:
    """``--summarize``: rebuild the summaries of the results file at ``path`` from its runs
    (:func:`resummarize`), and write it back. The file is one run's ``results.json`` (with its
    ``args``) or a compilation of several, one entry per task, each with the ``args`` of the
    runs it came from (``runs_from``), which must pick one task. Nothing is trained or scored.
    Returns the entries by name (``results.json`` for a single run).

    Raises:
        ValueError: if the file is not JSON, an entry holds no runs (or no ``args`` of the
            runs it came from) or its runs came from several tasks.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except ValueError as error:  # not JSON, or not UTF-8
        raise ValueError(f"{path}: not a results file ({error})") from None
    single = isinstance(data, dict) and "args" in data and "summary" in data
    entries = {"results.json": data} if single else data
    if not isinstance(entries, dict):
        raise ValueError(f"{path}: not a results file (its JSON is not an object)")
    for name, entry in entries.items():
        if not isinstance(entry, dict) or "runs" not in entry:
            raise ValueError(f"{path}: {name} holds no runs, so its summary cannot be rebuilt")
        if not single and "runs_from" not in entry:
            raise ValueError(f"{path}: {name} holds no runs_from, the args of its runs, so its "
                             "task is not known")
        stored = [entry["args"]] if single else [run["args"] for run in entry["runs_from"]]
        picks = {json.dumps({k: a.get(k) for k in TASK_FLAGS}, sort_keys=True) for a in stored}
        if len(picks) != 1:
            raise ValueError(f"{path}: {name}'s runs came from several tasks: {picks}")
        entries[name] = resummarize(entry, stored_task(stored[0]))
    write_text_atomic(path, json.dumps(entries["results.json"] if single else entries, indent=2))
    return entries
