"""TeamTR's central claim on warm-started relay teams of 2, 4 and 8 agents, with exact gains.

Setting (docs/teamtr_evidence.md): ``team_envs/relay-v0`` with 4 symbols, every agent hears only
the agent before it and only the last message is scored (``credit="final"``), so each agent's
best reply depends on the code the others use. Every agent starts as an 85% copier (fitted to
that reply distribution by :func:`trainers.common.exact_gains.imitate`). All trainers use a
constant per-agent budget δ = 0.5, lr 0.03 and 64 problems x 4 samples per rollout; team rewards
and gains are exact (enumeration over the message space, no sampling noise).

1. **Stale bias.** In TeamTR's first stage, each update's exact true gain and its exact gain at
   the stage-start occupancy (what a stale surrogate estimates); the stale bias
   Σ|stale − true| over the stage, in units of one agent's mean |true gain|, against n and
   against the number of agents updated before (log-log slopes, bootstrap over seeds).
2. **Training.** TeamTR, KL-without-refresh and stale sequential at a matched rollout budget, plus
   two equal-update controls: TeamTR with n x the budget (as many stages as the baselines) and
   KL-without-refresh with an n x batch (TeamTR's data per stage, without refreshing), and TeamTR
   at the reference's δ = 0.05 with either backtracking. Reported: final exact team reward,
   peak-minus-final regressions, accepted updates and their KL.

Run: ``python examples/teamtr_evidence.py`` (about 15 minutes on 2 busy cores) writes
``runs/teamtr_evidence/{results.json,report.md,*.png}``; ``--docs docs`` also writes the plots to
``docs/``. ``--quick`` is a tiny version that checks the script (2 to 3 minutes on 2 busy cores).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

TASK = {"env_id": "team_envs/relay-v0", "env_kwargs": {"vocab_size": 4, "credit": "final"}}
TEAM_SIZES = (2, 4, 8)
WARM_ACCURACY = 0.85
SETTINGS = {"learning_rate": 0.03, "delta": 0.5, "delta_schedule": "constant", "log_dir": "",
            "eval_every": 10**6}
METHODS = {
    # name: (trainer, n x budget, n x batch, other settings)
    "teamtr": ("teamtr", False, False, {}),
    "kl_no_refresh": ("kl_no_refresh", False, False, {}),
    "stale_sequential": ("stale_sequential", False, False, {}),
    "teamtr_nx_budget": ("teamtr", True, False, {}),
    "kl_no_refresh_nx_batch": ("kl_no_refresh", False, True, {}),
    "teamtr_delta_0.05": ("teamtr", False, False, {"delta": 0.05}),
    "teamtr_delta_0.05_beta_only": ("teamtr", False, False,
                                    {"delta": 0.05, "backtrack": "beta_only"}),
}
"""The last two check the backtracking at the reference's δ = 0.05: the default line search
against the reference's restore-and-redo with a growing β."""
REGRESSION = 0.05
"""A run regressed when its exact team reward fell this far below its own peak by the end."""


def method_args(method: str, n: int, seed: int, scale: dict[str, int]) -> tuple[str, dict]:
    """The trainer and settings of one method at team size ``n``."""
    module, more_budget, more_batch, overrides = METHODS[method]
    prompts = scale["prompts"] * (n if more_batch else 1)
    settings = {**TASK, **SETTINGS, "n_agents": n, "seed": seed, "prompts_per_rollout": prompts,
                "eval_episodes": scale["eval_episodes"], "update_epochs": scale["epochs"],
                "total_episodes": scale["budget"] * (n if more_budget else 1), **overrides}
    return module, {**settings, "exact_gains": True} if method == "teamtr" else settings


def run_job(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Warm-start one team, train it with each of the job's methods; one summary per method."""
    import torch

    from trainers.common.exact_gains import exact_team_reward, expert_probs, imitate
    from trainers.common.team import build_team

    torch.set_num_threads(1)
    n, seed, scale = job["n"], job["seed"], job["scale"]
    summaries = []
    warm = None
    for method in job["methods"]:
        started = time.perf_counter()
        module_name, settings = method_args(method, n, seed, scale)
        if job["shift_only"]:
            settings["total_episodes"] = n * settings["prompts_per_rollout"] * 4
        module = importlib.import_module(f"trainers.{module_name}")
        args = module.Args(**settings)
        team = build_team(args)
        task = team.rollouts.task
        if warm is None:
            for agent, policy in enumerate(team.policies):
                imitate(task, policy, agent, expert_probs(task, agent, WARM_ACCURACY),
                        steps=scale["warm_steps"], learning_rate=0.05)
            warm = [copy.deepcopy(policy.module.state_dict()) for policy in team.policies]
        for policy, state in zip(team.policies, warm, strict=True):
            policy.module.load_state_dict(state)
        curve = [(0, exact_team_reward(task, team.policies))]

        def track(stage: int, team: Any, record: dict[str, Any], task: Any = task,
                  curve: list = curve) -> None:
            curve.append((team.episodes, exact_team_reward(task, team.policies)))

        result = module.train(args, team=team, on_stage_end=track)
        stages = [r for r in result.history if "charts/team_reward" in r]
        summaries.append({
            "method": method, "n": n, "seed": seed, "shift_only": job["shift_only"],
            "seconds": time.perf_counter() - started, "stages": len(stages),
            "episodes": team.episodes, "curve": curve,
            "accepted": _total_of(stages, "trust_region/accepted_updates"),
            "updates": len(stages) * n,
            "accepted_kl_q99": _mean_of(stages, "trust_region/accepted_kl_q99"),
            "gains": [_stage_gains(record, n) for record in stages]
            if getattr(args, "exact_gains", False)
            else []})
    return summaries


def _total_of(records: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if key in r]
    return float(np.sum(values)) if values else None


def _mean_of(records: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if key in r]
    return float(np.mean(values)) if values else None


def _stage_gains(record: dict[str, Any], n: int) -> list[dict[str, float]]:
    """Exact true and stale gains of each update of a TeamTR stage, in update order."""
    rows = [{"position": int(record[f"trust_region/agent_{a}/position"]),
             "true": record[f"surrogate/agent_{a}/exact_true_gain"],
             "stale": record[f"surrogate/agent_{a}/exact_stale_gain"]} for a in range(n)]
    return sorted(rows, key=lambda row: row["position"])


def make_jobs(seeds: int, shift_seeds: int, scale: dict[str, int]) -> list[dict[str, Any]]:
    """All methods for seeds 1..``seeds``; TeamTR's first stage only for the further seeds up
    to ``shift_seeds`` (extra precision for the stale-bias fits)."""
    jobs = []
    for n in TEAM_SIZES:
        for seed in range(1, max(seeds, shift_seeds) + 1):
            shift_only = seed > seeds
            jobs.append({"n": n, "seed": seed, "scale": scale, "shift_only": shift_only,
                         "methods": ["teamtr"] if shift_only else list(METHODS)})
    return jobs


def _slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log y on log x (NaN when some y is not positive)."""
    ys = np.asarray(ys, dtype=float)
    if len(xs) < 2 or not np.all(ys > 0):
        return float("nan")
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def fit_slope(per_x: dict[int, list[float]], rng: np.random.Generator,
              draws: int = 2000) -> tuple[float, float, float]:
    """Log-log slope of the mean of ``per_x[x]`` against x, and a 95% bootstrap interval from
    resampling the seeds at every x."""
    xs = sorted(per_x)
    point = _slope(xs, [np.mean(per_x[x]) for x in xs])
    samples = [_slope(xs, [np.mean(rng.choice(per_x[x], len(per_x[x]))) for x in xs])
               for _ in range(draws)]
    samples = [s for s in samples if np.isfinite(s)]
    low, high = np.percentile(samples, [2.5, 97.5]) if samples else (np.nan, np.nan)
    return point, float(low), float(high)


def _fmt_slope(fit: tuple[float, float, float]) -> str:
    return "n/a" if not np.isfinite(fit[0]) else f"{fit[0]:.2f} [{fit[1]:.2f}, {fit[2]:.2f}]"


def stale_bias(results: list[dict[str, Any]]) -> dict[str, Any]:
    """First-stage stale bias of each TeamTR run, in units of its mean |true gain| per agent."""
    by_n: dict[int, list[float]] = {}
    by_position: dict[int, dict[int, list[float]]] = {}
    gains: dict[int, list[float]] = {}
    for run in results:
        if run["method"] != "teamtr" or not run["gains"]:
            continue
        rows = run["gains"][0]
        unit = float(np.mean([abs(row["true"]) for row in rows]))
        bias = [abs(row["stale"] - row["true"]) for row in rows]
        by_n.setdefault(run["n"], []).append(sum(bias) / unit)
        gains.setdefault(run["n"], []).append(unit)
        for row, value in zip(rows, bias, strict=True):
            if row["position"] > 0:
                by_position.setdefault(run["n"], {}).setdefault(row["position"], []).append(
                    value / unit)
    return {"by_n": by_n, "by_position": by_position, "unit": gains}


def regressions(run: dict[str, Any]) -> float:
    """Peak minus final exact team reward of a run."""
    values = [value for _, value in run["curve"]]
    return max(values) - values[-1]


def report(results: list[dict[str, Any]], out: Path, docs: Path | None = None) -> str:
    """Markdown tables of both experiments; plots written to ``out`` (and ``docs``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    shift = stale_bias(results)
    sizes = sorted(shift["by_n"])
    n_fit = fit_slope(shift["by_n"], rng)
    largest = max(shift["by_position"]) if shift["by_position"] else None
    position_fit = (fit_slope(shift["by_position"][largest], rng) if largest
                    else (np.nan, np.nan, np.nan))
    lines = ["### Stale bias in TeamTR's first stage (exact; per-stage sum in units of one "
             "agent's mean |true gain|)", "",
             "| n | seeds | mean abs true gain per update | stale bias / gain unit |",
             "|---|---|---|---|"]
    for n in sizes:
        values = shift["by_n"][n]
        lines.append(f"| {n} | {len(values)} | {np.mean(shift['unit'][n]):.4f} | "
                     f"{np.mean(values):.3f} ± {np.std(values):.3f} |")
    lines += ["", f"Log-log slope against n: {_fmt_slope(n_fit)} (95% bootstrap over seeds; "
              "theory: about 2). Against the number of agents updated before, at "
              f"n = {largest}: {_fmt_slope(position_fit)} (theory: about 1)."]

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    for n in sizes:
        axes[0].scatter([n] * len(shift["by_n"][n]), shift["by_n"][n], s=10, alpha=0.4,
                        color="tab:blue")
    means = [np.mean(shift["by_n"][n]) for n in sizes]
    axes[0].plot(sizes, means, "o-", color="tab:blue",
                 label=f"mean over seeds (slope {_fmt_slope(n_fit)})")
    if np.isfinite(n_fit[0]):
        reference = means[0] * (np.asarray(sizes) / sizes[0]) ** 2
        axes[0].plot(sizes, reference, "k:", label="slope 2 (theory)")
    axes[0].set(xscale="log", yscale="log", xlabel="agents n",
                ylabel="stage stale bias / mean |true gain|", title="Stale bias against n")
    axes[0].set_xticks(sizes, [str(n) for n in sizes])
    axes[0].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0].legend(fontsize=8)
    for n, positions in sorted(shift["by_position"].items()):
        ks = sorted(positions)
        label = f"n = {n}" + (f" (slope {_fmt_slope(position_fit)})" if n == largest else "")
        axes[1].plot(ks, [np.mean(positions[k]) for k in ks], "o-", label=label)
    axes[1].set(xscale="log", yscale="log", xlabel="agents updated before this one",
                ylabel="|stale − true gain| / mean |true gain|", title="Stale bias by position")
    earlier = range(1, max(TEAM_SIZES))
    axes[1].set_xticks(earlier, [str(k) for k in earlier])
    axes[1].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[1].legend(fontsize=8)
    figure.tight_layout()
    _save(figure, "teamtr_evidence_shift.png", out, docs)

    trained = [r for r in results if not r["shift_only"]]
    lines += ["", "### Training: final exact team reward (mean ± sd over seeds) and regressions",
              "", "| method | " + " | ".join(f"n = {n}" for n in sizes)
              + f" | regressed (peak − final > {REGRESSION}) | stages | accepted updates |"
              f" accepted KL q99 (n = {sizes[-1]}) |", "|---|" + "---|" * (len(sizes) + 4)]
    methods = [m for m in METHODS if any(r["method"] == m for r in trained)]
    for method in methods:
        cells, regressed, stages, accepted = [], [], [], []
        for n in sizes:
            runs = [r for r in trained if r["method"] == method and r["n"] == n]
            finals = [r["curve"][-1][1] for r in runs]
            cells.append(f"{np.mean(finals):.3f} ± {np.std(finals):.3f}")
            regressed.append(f"{sum(regressions(r) > REGRESSION for r in runs)}/{len(runs)}")
            stages.append(str(runs[0]["stages"]))
            shares = [r["accepted"] / r["updates"] for r in runs if r["accepted"] is not None]
            accepted.append(f"{np.mean(shares):.2f}" if shares else "—")
        kl = [r["accepted_kl_q99"] for r in trained if r["method"] == method
              and r["n"] == sizes[-1] and r["accepted_kl_q99"] is not None]
        lines.append(f"| {method} | {' | '.join(cells)} | {', '.join(regressed)} | "
                     f"{', '.join(stages)} | {', '.join(accepted)} | "
                     f"{f'{np.mean(kl):.3f}' if kl else '—'} |")
    _plot_training(plt, trained, sizes, methods, out, docs)
    initial = {n: np.mean([r["curve"][0][1] for r in trained if r["n"] == n]) for n in sizes}
    lines += ["", "Warm-started teams score " + ", ".join(
        f"{initial[n]:.3f} (n = {n})" for n in sizes) + "; chance is 0.25."]
    return "\n".join(lines)


def _plot_training(plt: Any, trained: list[dict[str, Any]], sizes: list[int],
                   methods: list[str], out: Path, docs: Path | None) -> None:
    """Top: exact reward against rollout episodes for the runs of the matched budget. Bottom:
    against updates per agent, pairing the runs with equal updates."""
    colours = {m: f"C{k}" for k, m in enumerate(METHODS)}
    figure, axes = plt.subplots(2, len(sizes), figsize=(4.3 * len(sizes), 7), sharey=True)
    for column, n in enumerate(sizes):
        for method in methods:
            runs = [r for r in trained if r["method"] == method and r["n"] == n]
            style = "--" if "delta" in method else "-"
            curves = [np.array(r["curve"], dtype=float) for r in runs]
            shortest = min(len(c) for c in curves)
            mean = np.mean([c[:shortest, 1] for c in curves], axis=0)
            if method != "teamtr_nx_budget":
                axes[0, column].plot(curves[0][:shortest, 0], mean, style,
                                     color=colours[method], label=method)
            if "delta" not in method and method != "stale_sequential":
                axes[1, column].plot(np.arange(shortest), mean, style, color=colours[method],
                                     label=method)
        axes[0, column].set(title=f"n = {n}: matched rollout budget", xlabel="rollout episodes")
        axes[1, column].set(title=f"n = {n}: equal updates", xlabel="updates per agent (stages)",
                            xscale="symlog")
    for row in axes:
        row[0].set_ylabel("exact team reward (mean over seeds)")
        row[0].legend(fontsize=7)
    figure.tight_layout()
    _save(figure, "teamtr_evidence_reward.png", out, docs)


def _save(figure: Any, name: str, out: Path, docs: Path | None) -> None:
    for folder in (out, docs):
        if folder is not None:
            figure.savefig(folder / name, dpi=120)


def build_parser() -> argparse.ArgumentParser:
    """The command line: results go to ``--out``; ``docs/`` is written only with ``--docs``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8, help="seeds of the training runs")
    parser.add_argument("--shift-seeds", type=int, default=16,
                        help="seeds of the stale-bias measurement (first stage only)")
    parser.add_argument("--budget", type=int, default=16_384,
                        help="matched rollout budget per run, in episodes")
    parser.add_argument("--workers", type=int, default=2, help="processes; 0 runs in this one")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny version that checks the script (2-3 minutes on 2 cores)")
    parser.add_argument("--out", type=Path, default=Path("runs/teamtr_evidence"))
    parser.add_argument("--docs", type=Path, default=None,
                        help="also write the plots here (e.g. docs); off by default")
    parser.add_argument("--replot", action="store_true",
                        help="report the results.json already in --out instead of running")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the jobs in worker processes (or in this one with ``--workers 0``) and report."""
    args = build_parser().parse_args(argv)
    scale = {"prompts": 64, "budget": args.budget, "eval_episodes": 256, "warm_steps": 100,
             "epochs": 4}
    if args.quick:
        args.seeds, args.shift_seeds = 2, 2
        scale = {"prompts": 4, "budget": 8 * 4 * 4, "eval_episodes": 16, "warm_steps": 10,
                 "epochs": 1}
    if args.docs is not None:
        args.docs.mkdir(parents=True, exist_ok=True)
    if args.replot:
        print(report(json.loads((args.out / "results.json").read_text()), args.out, args.docs))
        return 0
    jobs = make_jobs(args.seeds, args.shift_seeds, scale)
    jobs.sort(key=lambda job: (job["shift_only"], -job["n"]))
    started = time.perf_counter()
    progress = {"total": len(jobs), "desc": "teamtr evidence", "unit": "job"}
    if args.workers:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.workers, mp_context=context) as pool:
            batches = list(tqdm(pool.map(run_job, jobs), **progress))
    else:
        batches = [run_job(job) for job in tqdm(jobs, **progress)]
    results = [summary for batch in batches for summary in batch]
    elapsed = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    text = report(results, args.out, args.docs)
    text += f"\n\n{len(jobs)} jobs ({len(results)} runs) in {elapsed:.0f} s, {args.workers} workers"
    (args.out / "report.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
