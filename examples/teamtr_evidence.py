"""Test TeamTR's central claim on symbolic teams of 2, 4 and 8 agents (docs/teamtr_evidence.md).

Two experiments on the compositional chain (``team_envs/compositional-v0``, 4 symbols, every
agent hears only the agent before it, every message checked: ``credit="steps"``):

1. **Occupancy shift.** TeamTR runs with a constant per-agent budget δ = 0.05 and its probe
   (``gain_eval_episodes``): after every agent update, its true gain in team reward is measured
   on paired evaluation episodes (same problems and random numbers before and after), and its
   surrogate is scored on held-out rollouts of the current team (fresh) and of the stage-start
   team (stale). The stale penalty |stale surrogate - true gain| and the fresh one
   |fresh surrogate - true gain| are summed over the agents of a stage; theory predicts ~n²
   growth for the stale one and ~n for the fresh one. The in-sample stale gap the trainer logs
   (``surrogate/stale_gap``) is reported too.
2. **Matched rollout budget.** TeamTR and the baselines train for the same number of rollout
   episodes; the trained teams are evaluated on the same episodes.

Run (about 8 minutes on 2 CPU cores): ``python examples/teamtr_evidence.py``; ``--quick`` runs a
tiny version in seconds. Results go to ``--out`` (JSON) and plots to ``--docs``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

TASK = {"env_id": "team_envs/compositional-v0",
        "env_kwargs": {"vocab_size": 4, "credit": "steps", "window": 1}}
TEAM_SIZES = (2, 4, 8)
METHODS = ("teamtr", "teamtr_small_batch", "kl_no_refresh", "stale_sequential", "joint",
           "happo", "single_agent_grpo")
"""``teamtr_small_batch`` is TeamTR with ``prompts_per_rollout / n`` per fresh rollout, so its
stages cost one baseline rollout and it gets as many stages as the baselines."""


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Train one configuration in a worker process; return its summary."""
    import torch

    torch.set_num_threads(1)
    module_name = "teamtr" if job["method"].startswith("teamtr") else job["method"]
    module = importlib.import_module(f"trainers.{module_name}")
    started = time.perf_counter()
    result = module.train(module.Args(**job["args"]))
    stages = [r for r in result.history if "charts/team_reward" in r]
    summary = {**{k: v for k, v in job.items() if k != "args"}, "seconds":
               time.perf_counter() - started, "stages": len(stages),
               "episodes": result.team.episodes, "initial_eval": result.initial_eval,
               "final_eval": result.final_eval,
               "curve": [(r["episodes"], r["charts/eval_team_reward"])
                         for r in result.history if "charts/eval_team_reward" in r],
               "out_of_region": float(np.mean([r["trust_region/out_of_region_fraction"]
                                               for r in stages]))}
    if job["experiment"] == "shift":
        summary["shift"] = [_stage_shift(record, job["n"]) for record in stages]
    return summary


def _stage_shift(record: dict[str, float], n: int) -> dict[str, Any]:
    """Per-position surrogate errors of one TeamTR stage."""
    rows = []
    for agent in range(n):
        value = {k: record[f"surrogate/agent_{agent}/{k}"] for k in (
            "fresh", "stale", "true_gain", "fresh_holdout", "stale_holdout")}
        rows.append({"position": int(record[f"trust_region/agent_{agent}/position"]),
                     "stale_error": abs(value["stale_holdout"] - value["true_gain"]),
                     "fresh_error": abs(value["fresh_holdout"] - value["true_gain"]),
                     "true_gain": value["true_gain"]})
    return {"stale_penalty": sum(r["stale_error"] for r in rows),
            "fresh_penalty": sum(r["fresh_error"] for r in rows),
            "logged_stale_gap": record["surrogate/stale_gap"], "rows": rows}


def make_jobs(seeds: int, budget: int, shift_stages: int, quick: bool) -> list[dict[str, Any]]:
    """Every run of both experiments.

    The shift experiment uses 1,024-episode rollouts (256 problems x 4), 8,192-episode probes
    (so that sampling noise stays small next to the shift itself) and a learning rate of 0.03, at
    which the trust region binds and every agent moves by about delta per update.
    """
    prompts, eval_episodes, shift_prompts = (16, 256, 16) if quick else (64, 2048, 256)
    common = {**TASK, "log_dir": "", "prompts_per_rollout": prompts,
              "eval_episodes": eval_episodes}
    jobs = []
    for n in TEAM_SIZES:
        for seed in range(1, seeds + 1):
            jobs.append({"experiment": "shift", "method": "teamtr", "n": n, "seed": seed,
                         "args": {**common, "n_agents": n, "seed": seed,
                                  "prompts_per_rollout": shift_prompts,
                                  "delta_schedule": "constant", "delta": 0.05,
                                  "learning_rate": 0.03,
                                  "gain_eval_episodes": 4 * eval_episodes,
                                  "total_episodes": shift_stages * n * shift_prompts * 4,
                                  "eval_every": 10**6}})
            for method in METHODS:
                rollout = prompts * 4 * (n if method == "teamtr" else 1)
                eval_every = max(1, budget // rollout // 8)
                args = {**common, "n_agents": n, "seed": seed, "total_episodes": budget,
                        "eval_every": eval_every}
                if method == "teamtr_small_batch":
                    args["prompts_per_rollout"] = max(1, prompts // n)
                jobs.append({"experiment": "budget", "method": method, "n": n, "seed": seed,
                             "args": args})
    return jobs


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y on log x."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def bootstrap_slope(per_seed: dict[int, list[float]], rng: np.random.Generator,
                    draws: int = 2000) -> tuple[float, float, float]:
    """Slope of the per-n mean against n, with a 95% bootstrap interval over seeds."""
    sizes = sorted(per_seed)
    point = slope(sizes, [float(np.mean(per_seed[n])) for n in sizes])
    samples = []
    for _ in range(draws):
        means = [float(np.mean(rng.choice(per_seed[n], size=len(per_seed[n])))) for n in sizes]
        samples.append(slope(sizes, means))
    low, high = np.percentile(samples, [2.5, 97.5])
    return point, float(low), float(high)


def report(results: list[dict[str, Any]], docs: Path) -> str:
    """Markdown tables of both experiments; plots written to ``docs``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    shift = [r for r in results if r["experiment"] == "shift"]
    lines = ["### Occupancy shift (TeamTR, delta = 0.05 per agent, per-stage sums)", "",
             "| n | stale penalty | fresh penalty | logged stale gap (in-sample) |"
             " mean true gain per update | seeds |", "|---|---|---|---|---|---|"]
    per_seed: dict[str, dict[int, list[float]]] = {k: {} for k in (
        "stale_penalty", "fresh_penalty", "logged_stale_gap")}
    for n in TEAM_SIZES:
        runs = [r for r in shift if r["n"] == n]
        for key in per_seed:
            per_seed[key][n] = [float(np.mean([s[key] for s in r["shift"]])) for r in runs]
        gains = [row["true_gain"] for r in runs for s in r["shift"] for row in s["rows"]]
        cells = [f"{np.mean(per_seed[k][n]):.5f} ± {np.std(per_seed[k][n]):.5f}"
                 for k in per_seed]
        lines.append(f"| {n} | {' | '.join(cells)} | {np.mean(gains):+.5f} | {len(runs)} |")
    lines += ["", "| quantity | slope of log(mean) on log(n) [95% bootstrap interval] |"
              " slope in correct-message units (n x value) |", "|---|---|---|"]
    fits = {}
    for key in per_seed:
        fits[key] = bootstrap_slope(per_seed[key], rng)
        counted = bootstrap_slope({n: [n * v for v in values]
                                   for n, values in per_seed[key].items()}, rng)
        lines.append(f"| {key.replace('_', ' ')} | {fits[key][0]:.2f} "
                     f"[{fits[key][1]:.2f}, {fits[key][2]:.2f}] | {counted[0]:.2f} "
                     f"[{counted[1]:.2f}, {counted[2]:.2f}] |")

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    for key, style in (("stale_penalty", "o-"), ("fresh_penalty", "s-"),
                       ("logged_stale_gap", "^--")):
        means = [np.mean(per_seed[key][n]) for n in TEAM_SIZES]
        errors = [np.std(per_seed[key][n]) for n in TEAM_SIZES]
        axes[0].errorbar(TEAM_SIZES, means, yerr=errors, fmt=style, capsize=3,
                         label=f"{key.replace('_', ' ')} (slope {fits[key][0]:.2f})")
    axes[0].set(xscale="log", yscale="log", xlabel="agents n", ylabel="per-stage sum",
                title="Surrogate error per stage")
    axes[0].set_xticks(TEAM_SIZES, [str(n) for n in TEAM_SIZES])
    axes[0].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0].legend(fontsize=8)
    rows = [row for r in shift if r["n"] == max(TEAM_SIZES) for s in r["shift"]
            for row in s["rows"]]
    positions = sorted({row["position"] for row in rows})
    for key, style in (("stale_error", "o-"), ("fresh_error", "s-")):
        means = [np.mean([row[key] for row in rows if row["position"] == m]) for m in positions]
        axes[1].plot(positions, means, style, label=key.replace("_", " "))
    axes[1].set(xlabel="position in the stage's update order (n = 8)",
                ylabel="|surrogate - true gain|", title="Error by update position")
    axes[1].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(docs / "teamtr_evidence_shift.png", dpi=120)

    budget = [r for r in results if r["experiment"] == "budget"]
    lines += ["", "### Matched rollout budget: final team reward (mean ± sd over seeds)", "",
              "| method | " + " | ".join(f"n = {n}" for n in TEAM_SIZES) + " | stages (n = 8) |"
              " out-of-region (n = 8) |", "|---|" + "---|" * (len(TEAM_SIZES) + 2)]
    figure, axes = plt.subplots(1, len(TEAM_SIZES), figsize=(13, 3.8), sharey=True)
    for method in METHODS:
        cells = []
        for column, n in enumerate(TEAM_SIZES):
            runs = [r for r in budget if r["method"] == method and r["n"] == n]
            finals = [r["final_eval"] for r in runs]
            cells.append(f"{np.mean(finals):.3f} ± {np.std(finals):.3f}")
            curve = np.mean([[v for _, v in r["curve"]] for r in runs], axis=0)
            axes[column].plot([e for e, _ in runs[0]["curve"]], curve, label=method)
            axes[column].set(title=f"n = {n}", xlabel="rollout episodes")
        eight = [r for r in budget if r["method"] == method and r["n"] == 8]
        lines.append(f"| {method} | {' | '.join(cells)} | {eight[0]['stages']} | "
                     f"{np.mean([r['out_of_region'] for r in eight]):.2f} |")
    initial = np.mean([r["initial_eval"] for r in budget])
    lines += ["", f"Untrained teams score {initial:.3f} on the same evaluation episodes."]
    axes[0].set_ylabel("evaluation team reward")
    axes[-1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(docs / "teamtr_evidence_reward.png", dpi=120)
    return "\n".join(lines)


def main() -> None:
    """Run both experiments in parallel worker processes and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=24_000, help="rollout episodes per run")
    parser.add_argument("--shift-stages", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="a tiny run to check the script")
    parser.add_argument("--only", choices=("shift", "budget"),
                        help="run one experiment and reuse the other's results from --out")
    parser.add_argument("--out", type=Path, default=Path("runs/teamtr_evidence"))
    parser.add_argument("--docs", type=Path, default=Path("docs"))
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.budget, args.shift_stages = 2, 1024, 2
    jobs = make_jobs(args.seeds, args.budget, args.shift_stages, args.quick)
    kept = []
    if args.only:
        jobs = [job for job in jobs if job["experiment"] == args.only]
        kept = [r for r in json.loads((args.out / "results.json").read_text())
                if r["experiment"] != args.only]
    jobs.sort(key=lambda job: (job["experiment"] == "shift", -job["n"]))
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.workers, mp_context=context) as pool:
        results = kept + list(pool.map(run_job, jobs))
    elapsed = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    args.docs.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(report(results, args.docs))
    print(f"\n{len(jobs)} runs in {elapsed:.0f} s with {args.workers} workers")


if __name__ == "__main__":
    main()
