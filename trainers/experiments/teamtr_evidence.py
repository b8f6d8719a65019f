"""TeamTR's central claim on warm-started relay teams of 2, 4 and 8 agents, with exact gains.

Setting (docs/teamtr_evidence.md): ``team_envs/relay-v0`` with 4 symbols, every agent hears only
the agent before it and only the last message is scored (``credit="final"``), so each agent's
best reply depends on the code the others use. Every agent starts as an 85% copier (fitted to
that reply distribution by :func:`trainers.common.exact_gains.imitate`). All trainers use a
constant per-agent budget δ = 0.5, lr 0.03 and 64 problems x 4 samples per rollout; team rewards
and gains are exact (enumeration over the message space, no sampling noise).

1. **Stale bias.** In TeamTR's first stage, each update's exact true gain and its exact gain at
   the stage-start occupancy (what a stale surrogate estimates); the stale bias
   Σ|stale − true| over the stage in three units: absolute, per unit of update size (√KL, the
   mean per-message KL of the update on its rollouts; the theory's unit) and per one agent's mean
   |true gain|. Log-log slopes against n (95% expanded percentile bootstrap over seeds) beside
   the bound's shape Σ(i − 1) = n(n − 1)/2, and against the number of agents updated before.
2. **Training.** At a matched rollout budget, the 2 x 2 of refresh x trust region (TeamTR,
   KL-without-refresh, fresh without a trust region, stale sequential), the paper's
   reduced-resampling ablation (fresh rollouts before every second update), two equal-update
   controls (TeamTR with n x the budget; KL-without-refresh with an n x batch) and TeamTR at the
   reference's δ = 0.05 with either backtracking. Reported: final exact team reward,
   peak-minus-final regressions, accepted updates, the kept step fraction of the line search and
   the accepted KL, and paired differences by seed (95% Student t intervals).

Run: ``python examples/teamtr_evidence.py`` writes
``runs/teamtr_evidence/{results.json,report.md,*.png}``; ``--docs docs`` also writes the plots and
``teamtr_evidence_results.json`` (runs and summary: every number of the doc) to ``docs/``.
``--quick`` is a tiny version that checks the script.
"""

from __future__ import annotations

import importlib
import json
import math
import multiprocessing
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from agentworld_envs.atomic_write import write_text_atomic
from agentworld_envs.run_journal import RunJournal
from trainers.common.args import ConfigError
from trainers.common.flags import parse_args
from trainers.common.intervals import student_t_quantile

TASK = {"env_id": "team_envs/relay-v0", "env_kwargs": {"vocab_size": 4, "credit": "final"}}
TEAM_SIZES = (2, 4, 8)
WARM_ACCURACY = 0.85
SETTINGS = {"learning_rate": 0.03, "delta": 0.5, "delta_schedule": "constant", "log_dir": "",
            "eval_every": 10**6}
"""The trainers' settings shared by every method (the advantages' std is ``--adv-std-ddof``)."""
NO_TRUST_REGION = {"kl_coef": 0.0, "delta": 1e9}
"""No KL term and a check that always passes: plain PPO-clip per agent."""
METHODS = {
    # name: (trainer, n x budget, n x batch, other settings)
    "teamtr": ("teamtr", False, False, {}),
    "kl_no_refresh": ("kl_no_refresh", False, False, {}),
    "fresh_no_trust_region": ("teamtr", False, False, NO_TRUST_REGION),
    "stale_sequential": ("stale_sequential", False, False, {}),
    "teamtr_resample_every_2": ("teamtr", False, False, {"resample_every": 2}),
    "teamtr_nx_budget": ("teamtr", True, False, {}),
    "kl_no_refresh_nx_batch": ("kl_no_refresh", False, True, {}),
    "teamtr_delta_0.05": ("teamtr", False, False, {"delta": 0.05}),
    "teamtr_delta_0.05_beta_only": ("teamtr", False, False,
                                    {"delta": 0.05, "backtrack": "beta_only"}),
}
"""The first four are the 2 x 2 of refresh x trust region; the last two check the backtracking at
the reference's δ = 0.05: the default line search against restore-and-redo with a growing β."""
REGRESSION = 0.05
"""A run regressed when its exact team reward fell this far below its own peak by the end."""
CHANCE = 0.3
"""A run collapsed when it ended below this exact team reward (chance is 0.25)."""
PAIRED_STAGES = (1, 2, 3, 4)
"""Stages after which the paired differences by seed are reported."""
INTERVAL = {"slope": "95% expanded percentile bootstrap over seeds (Hesterberg 2015; 2,000 draws)",
            "difference": "95% Student t interval over seeds"}
"""The intervals of :func:`fit_slope` and of the paired differences (:func:`t_interval`)."""


def method_args(method: str, n: int, seed: int, scale: dict[str, int]) -> tuple[str, dict]:
    """The trainer and settings of one method at team size ``n``."""
    module, more_budget, more_batch, overrides = METHODS[method]
    prompts = scale["prompts"] * (n if more_batch else 1)
    settings = {**TASK, **SETTINGS, "n_agents": n, "seed": seed, "prompts_per_rollout": prompts,
                "eval_episodes": scale["eval_episodes"], "update_epochs": scale["epochs"],
                "total_episodes": scale["budget"] * (n if more_budget else 1),
                "adv_std_ddof": scale["adv_std_ddof"], **overrides}
    return module, {**settings, "exact_gains": True} if method == "teamtr" else settings


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Warm-start one team and train it with the job's method; the run's summary."""
    import torch

    from trainers.common.exact_gains import exact_team_reward, expert_probs, imitate
    from trainers.common.team import build_team

    torch.set_num_threads(1)
    n, seed, scale, method = job["n"], job["seed"], job["scale"], job["method"]
    started = time.perf_counter()
    module_name, settings = method_args(method, n, seed, scale)
    if job["shift_only"]:
        settings["total_episodes"] = n * settings["prompts_per_rollout"] * 4
    module = importlib.import_module(f"trainers.{module_name}")
    args = module.Args(**settings)
    team = build_team(args)
    task = team.rollouts.task
    warm_kl = max(imitate(task, policy, agent, expert_probs(task, agent, WARM_ACCURACY),
                          steps=scale["warm_steps"], learning_rate=0.05)
                  for agent, policy in enumerate(team.policies))
    curve = [(0, exact_team_reward(task, team.policies))]

    def track(stage: int, team: Any, record: dict[str, Any]) -> None:
        curve.append((team.episodes, exact_team_reward(task, team.policies)))

    result = module.train(args, team=team, on_stage_end=track)
    stages = [r for r in result.history if "charts/team_reward" in r]
    return {
        "method": method, "n": n, "seed": seed, "shift_only": job["shift_only"],
        "seconds": time.perf_counter() - started, "stages": len(stages),
        "episodes": team.episodes, "curve": curve, "warm_kl": warm_kl,
        "accepted": _total_of(stages, "trust_region/accepted_updates"),
        "updates": len(stages) * n,
        "accepted_kl_q99": _mean_of(stages, "trust_region/accepted_kl_q99"),
        "step_fractions": [r[f"trust_region/agent_{a}/step_fraction"] for r in stages
                           for a in range(n) if f"trust_region/agent_{a}/step_fraction" in r],
        "first_stage": _stage_gains(stages[0], n) if getattr(args, "exact_gains", False) else []}


def _total_of(records: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if key in r]
    return float(np.sum(values)) if values else None


def _mean_of(records: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if key in r]
    return float(np.mean(values)) if values else None


def _stage_gains(record: dict[str, Any], n: int) -> list[dict[str, float]]:
    """Each update of a TeamTR stage in update order: its exact true and stale gains, its mean
    per-message KL on its rollouts and its kept step fraction."""
    rows = [{"position": int(record[f"trust_region/agent_{a}/position"]),
             "true": record[f"surrogate/agent_{a}/exact_true_gain"],
             "stale": record[f"surrogate/agent_{a}/exact_stale_gain"],
             "kl": record[f"trust_region/agent_{a}/kl_mean"],
             "step_fraction": record[f"trust_region/agent_{a}/step_fraction"]}
            for a in range(n)]
    return sorted(rows, key=lambda row: row["position"])


def make_jobs(seeds: int, shift_seeds: int, scale: dict[str, int]) -> list[dict[str, Any]]:
    """One job per run: first TeamTR's first stage alone for seeds ``seeds`` + 1 to
    ``shift_seeds`` (extra precision for the stale-bias fits), then every method seed by seed,
    so that an interrupted run has whole seeds."""
    jobs = [{"n": n, "seed": seed, "scale": scale, "shift_only": True, "method": "teamtr"}
            for seed in range(seeds + 1, shift_seeds + 1) for n in TEAM_SIZES]
    jobs += [{"n": n, "seed": seed, "scale": scale, "shift_only": False, "method": method}
             for seed in range(1, seeds + 1) for n in sorted(TEAM_SIZES, reverse=True)
             for method in METHODS]
    return jobs


def _key(run: dict[str, Any]) -> tuple:
    return run["method"], run["n"], run["seed"], run["shift_only"]


def run_settings(scale: dict[str, int]) -> dict[str, Any]:
    """What a run's result depends on besides its key: the journal resumes only under these."""
    return {"scale": scale, "task": TASK, "trainer": SETTINGS, "warm_accuracy": WARM_ACCURACY,
            "methods": METHODS}


def _name(job: dict[str, Any]) -> str:
    first_stage = " (first stage only)" if job["shift_only"] else ""
    return f"{job['method']} n={job['n']} seed={job['seed']}{first_stage}"


def _settle(job: dict[str, Any], result: Callable[[], dict[str, Any]], journal: RunJournal,
            failed: dict[str, Exception]) -> None:
    """Journal the job's run; if it raised, note the error under the job's name and go on."""
    try:
        run = result()
    except Exception as error:
        failed[_name(job)] = error
    else:
        journal.keep(run)


def _slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log y on log x (NaN when some y is not positive)."""
    ys = np.asarray(ys, dtype=float)
    if len(xs) < 2 or not np.all(ys > 0):
        return float("nan")
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def bootstrap(per_x: dict[int, list[float]], statistic: Callable[[dict[int, float]], float],
              rng: np.random.Generator, draws: int = 2000,
              paired: bool = False) -> dict[str, float | None]:
    """``statistic`` of the means of ``per_x[x]``, and its 95% expanded percentile bootstrap
    interval (none with fewer than 2 values at some x).

    Each draw resamples the values (seeds) at every x independently: right where each x has
    runs of its own. With ``paired`` the values at every x come from the same runs, in the same
    order, and each draw resamples the runs once, the same runs at every x. The interval's
    percentiles are those of :func:`expanded_tail` for the fewest values at any x.
    """
    counts = sorted({len(v) for v in per_x.values()})
    if paired and len(counts) != 1:
        raise ValueError(f"paired values need the same runs at every x, not {counts} runs")
    point = statistic({x: float(np.mean(v)) for x, v in per_x.items()})
    if counts[0] < 2:
        return {"value": _finite(point), "low": None, "high": None}
    samples = [statistic(_resampled_means(per_x, rng, paired)) for _ in range(draws)]
    samples = [s for s in samples if np.isfinite(s)]
    tail = 100 * expanded_tail(counts[0])
    low, high = np.percentile(samples, [tail, 100 - tail]) if samples else (np.nan, np.nan)
    return {"value": _finite(point), "low": _finite(low), "high": _finite(high)}


def expanded_tail(seeds: int) -> float:
    """Each tail's probability in the 95% expanded percentile interval of ``seeds`` (≥ 2) seeds.

    The percentile interval of R seeds covers less than it says (about 88% for a mean of 8): the
    bootstrap shrinks their variance by (R − 1)/R and takes a normal quantile where Student's t
    is due. Hesterberg's expanded interval ("What teachers should know about the bootstrap",
    2015) takes the percentiles at the tail whose normal quantile is
    √(R/(R − 1)) · t_{0.975, R − 1}.
    """
    z = math.sqrt(seeds / (seeds - 1)) * student_t_quantile(0.975, seeds - 1)
    return 0.5 * math.erfc(z / math.sqrt(2))


def t_interval(values: Sequence[float]) -> dict[str, float | None]:
    """The mean of ``values`` (one per seed) and its 95% Student t interval (none for one seed)."""
    values = np.asarray(values, dtype=float)
    mean = float(np.mean(values))
    if len(values) < 2:
        return {"value": _finite(mean), "low": None, "high": None}
    half = (student_t_quantile(0.975, len(values) - 1) * float(np.std(values, ddof=1))
            / math.sqrt(len(values)))
    return {"value": _finite(mean), "low": _finite(mean - half), "high": _finite(mean + half)}


def _resampled_means(per_x: dict[int, list[float]], rng: np.random.Generator,
                     paired: bool) -> dict[int, float]:
    """One bootstrap draw of the mean at every x (see :func:`bootstrap`)."""
    if not paired:
        return {x: float(np.mean(rng.choice(v, len(v)))) for x, v in per_x.items()}
    runs = len(next(iter(per_x.values())))
    rows = rng.integers(runs, size=runs)
    return {x: float(np.mean(np.asarray(v)[rows])) for x, v in per_x.items()}


def fit_slope(per_x: dict[int, list[float]], rng: np.random.Generator,
              draws: int = 2000, paired: bool = False) -> dict[str, float | None]:
    """Log-log slope of the mean of ``per_x[x]`` against x, with its bootstrap interval
    (``paired``: as in :func:`bootstrap`)."""
    def slope(means: dict[int, float]) -> float:
        return _slope(sorted(means), [means[x] for x in sorted(means)])
    return bootstrap(per_x, slope, rng, draws, paired)


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def bound_shape(n: int) -> float:
    """The stale bound's shape over a stage: Σ over agents of the agents updated before them."""
    return n * (n - 1) / 2


UNITS = {"absolute": "Σ|stale − true|",
         "per_sqrt_kl": "Σ|stale − true| / mean √KL per update",
         "per_gain": "Σ|stale − true| / mean |true gain| per update"}


def stale_bias_units(run: dict[str, Any]) -> dict[str, Any]:
    """One TeamTR run's first-stage stale bias in each unit of :data:`UNITS`, its units, and the
    bias of each later update (position > 0) in the same units."""
    rows = run["first_stage"]
    bias = np.array([abs(row["stale"] - row["true"]) for row in rows])
    scale = {"absolute": 1.0,
             "per_sqrt_kl": float(np.mean([math.sqrt(row["kl"]) for row in rows])),
             "per_gain": float(np.mean([abs(row["true"]) for row in rows]))}
    return {"stage": {unit: float(bias.sum() / value) for unit, value in scale.items()},
            "sqrt_kl": scale["per_sqrt_kl"], "gain": scale["per_gain"],
            "by_position": {unit: {row["position"]: float(b / value)
                                   for row, b in zip(rows, bias, strict=True)
                                   if row["position"] > 0}
                            for unit, value in scale.items()}}


def _mean_sd(values: Sequence[float]) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "sd": float(np.std(values)), "runs": len(values)}


def summarize_shift(results: list[dict[str, Any]], rng: np.random.Generator) -> dict[str, Any]:
    """The stale bias of TeamTR's first stages against n and position, in every unit, with the
    bound's shape n(n − 1)/2 as the reference, and how the stale gains relate to the true ones."""
    runs = [r for r in results if r["method"] == "teamtr" and r["first_stage"]]
    per_run = {id(r): stale_bias_units(r) for r in runs}
    sizes = sorted({r["n"] for r in runs})
    by_n = {unit: {n: [per_run[id(r)]["stage"][unit] for r in runs if r["n"] == n]
                   for n in sizes} for unit in UNITS}
    units = {name: {n: [per_run[id(r)][name] for r in runs if r["n"] == n] for n in sizes}
             for name in ("sqrt_kl", "gain")}
    largest = max(sizes)
    by_position = {unit: {} for unit in UNITS}
    for r in runs:
        if r["n"] == largest:
            for unit in UNITS:
                for k, value in per_run[id(r)]["by_position"][unit].items():
                    by_position[unit].setdefault(k, []).append(value)
    later = [row for r in runs for row in r["first_stage"] if row["position"] > 0]
    relation = {}
    for n in sizes:
        rows = [row for r in runs if r["n"] == n for row in r["first_stage"]
                if row["position"] > 0 and row["true"] != 0]
        relation[n] = {
            "updates": len(rows),
            "same_sign": float(np.mean([np.sign(x["stale"]) == np.sign(x["true"]) for x in rows])),
            "smaller": float(np.mean([abs(x["stale"]) < abs(x["true"]) for x in rows])),
            "median_ratio": float(np.median([x["stale"] / x["true"] for x in rows]))}
    return {
        "sizes": sizes, "seeds": {n: len(by_n["absolute"][n]) for n in sizes},
        "bias": {unit: {n: _mean_sd(v) for n, v in values.items()}
                 for unit, values in by_n.items()},
        "units": {name: {n: _mean_sd(v) for n, v in values.items()}
                  for name, values in units.items()},
        "slope_n": {unit: fit_slope(values, rng) for unit, values in by_n.items()},
        "unit_slope_n": {name: fit_slope(values, rng) for name, values in units.items()},
        "bound_slope_n": _slope(sizes, [bound_shape(n) for n in sizes]),
        "position_n": largest,
        "slope_position": {unit: fit_slope(values, rng, paired=True) if len(values) > 1
                           else {"value": None, "low": None, "high": None}
                           for unit, values in by_position.items()},
        "position_means": {unit: {k: float(np.mean(v)) for k, v in sorted(values.items())}
                           for unit, values in by_position.items()},
        "later_updates": len(later),
        "relation": relation}


def regressions(run: dict[str, Any]) -> float:
    """Peak minus final exact team reward of a run."""
    values = [value for _, value in run["curve"]]
    return max(values) - values[-1]


def reward_at(run: dict[str, Any], episodes: int) -> float:
    """The exact team reward of a run after its last stage that ended within ``episodes``."""
    return [value for spent, value in run["curve"] if spent <= episodes][-1]


def _paired(results: list[dict[str, Any]], first: str, second: str,
            n: int) -> dict[int, dict[str, float | None]]:
    """``first`` minus ``second`` after each of :data:`PAIRED_STAGES` stages, paired by seed."""
    one = {r["seed"]: r for r in results if r["method"] == first and r["n"] == n}
    two = {r["seed"]: r for r in results if r["method"] == second and r["n"] == n}
    seeds = sorted(set(one) & set(two))
    out = {}
    for stage in PAIRED_STAGES:
        if not seeds or any(len(one[s]["curve"]) <= stage or len(two[s]["curve"]) <= stage
                            for s in seeds):
            continue
        diffs = [one[s]["curve"][stage][1] - two[s]["curve"][stage][1] for s in seeds]
        out[stage] = t_interval(diffs)
    return out


def summarize_training(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per method and n: final exact reward, regressions, collapses, stages, accepted updates,
    kept step fractions and accepted KL; paired comparisons by seed."""
    trained = [r for r in results if not r["shift_only"]]
    sizes = sorted({r["n"] for r in trained})
    methods = [m for m in METHODS if any(r["method"] == m for r in trained)]
    table: dict[str, dict[int, dict[str, Any]]] = {}
    for method in methods:
        table[method] = {}
        for n in sizes:
            runs = [r for r in trained if r["method"] == method and r["n"] == n]
            accepted = [r["accepted"] / r["updates"] for r in runs if r["accepted"] is not None]
            fractions = [f for r in runs for f in r["step_fractions"]]
            kept = [f for f in fractions if f > 0]
            kl = [r["accepted_kl_q99"] for r in runs if r["accepted_kl_q99"] is not None]
            table[method][n] = {
                "final": _mean_sd([r["curve"][-1][1] for r in runs]),
                "regressed": sum(regressions(r) > REGRESSION for r in runs),
                "collapsed": sum(r["curve"][-1][1] < CHANCE for r in runs),
                "runs": len(runs), "stages": runs[0]["stages"], "episodes": runs[0]["episodes"],
                "accepted": float(np.mean(accepted)) if accepted else None,
                "step_fraction": float(np.mean(fractions)) if fractions else None,
                "step_fraction_accepted": float(np.mean(kept)) if kept else None,
                "accepted_kl_q99": float(np.mean(kl)) if kl else None}
    pairs = {"equal_updates": ("teamtr_nx_budget", "kl_no_refresh"),
             "equal_data_per_stage": ("teamtr", "kl_no_refresh_nx_batch")}
    paired = {name: {"first": first, "second": second,
                     "by_n": {n: _paired(trained, first, second, n) for n in sizes}}
              for name, (first, second) in pairs.items()}
    early = {}
    for n in sizes:  # after the episodes of one TeamTR stage
        runs = {m: [r for r in trained if r["method"] == m and r["n"] == n]
                for m in ("teamtr", "kl_no_refresh")}
        if all(runs.values()):
            spent = runs["teamtr"][0]["curve"][1][0] if len(runs["teamtr"][0]["curve"]) > 1 else 0
            early[n] = {"episodes": spent, **{m: float(np.mean([reward_at(r, spent) for r in rs]))
                                              for m, rs in runs.items()}}
    initial = {n: float(np.mean([r["curve"][0][1] for r in trained if r["n"] == n]))
               for n in sizes}
    return {"sizes": sizes, "methods": methods, "table": table, "paired": paired,
            "after_first_teamtr_stage": early, "initial": initial,
            "warm_kl_max": max(r["warm_kl"] for r in results)}


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Every number the report (and the doc) quotes."""
    return {"interval": INTERVAL, "shift": summarize_shift(results, np.random.default_rng(0)),
            "training": summarize_training(results)}


def _fmt(fit: dict[str, float | None], spec: str = ".2f") -> str:
    if fit["value"] is None:
        return "n/a"
    if fit["low"] is None:
        return f"{fit['value']:{spec}}"
    return f"{fit['value']:{spec}} [{fit['low']:{spec}}, {fit['high']:{spec}}]"


def _opt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def report_text(summary: dict[str, Any]) -> str:
    """Markdown tables of both experiments, from :func:`summarize`'s output."""
    shift, train = summary["shift"], summary["training"]
    sizes = shift["sizes"]
    bound = shift["bound_slope_n"]
    lines = ["### Stale bias in TeamTR's first stage (exact), three units", "",
             "| n | seeds | mean √KL per update | mean abs true gain per update "
             "| Σ abs(stale − true) | per √KL | per gain unit | n(n − 1)/2 |",
             "|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        cells = [f"{shift['bias'][u][n]['mean']:.4g} ± {shift['bias'][u][n]['sd']:.2g}"
                 for u in UNITS]
        lines.append(f"| {n} | {shift['seeds'][n]} | {shift['units']['sqrt_kl'][n]['mean']:.4f} "
                     f"| {shift['units']['gain'][n]['mean']:.4f} | {' | '.join(cells)} "
                     f"| {bound_shape(n):g} |")
    lines += ["", "± is the sd over seeds.", "",
              f"Log-log slope against n ({summary['interval']['slope']}); the bound's shape "
              f"n(n − 1)/2 has slope {bound:.2f} over n = {', '.join(map(str, sizes))}:", ""]
    for unit, text in UNITS.items():
        fit = shift["slope_n"][unit]
        inside = (fit["low"] is not None and fit["low"] <= bound <= fit["high"])
        lines.append(f"- {unit} ({text}): {_fmt(fit)}; bound's slope "
                     f"{'inside' if inside else 'outside'} the interval")
    units = shift["unit_slope_n"]
    lines += [f"- the units themselves: mean √KL per update {_fmt(units['sqrt_kl'])}, "
              f"mean abs true gain per update {_fmt(units['gain'])}", "",
              f"Against the number of agents updated before, at n = {shift['position_n']} "
              "(bound's shape: slope 1): " + "; ".join(
                  f"{unit} {_fmt(fit)}" for unit, fit in shift["slope_position"].items()), "",
              "Later updates (position > 0): " + "; ".join(
                  f"n = {n}: same sign {r['same_sign']:.2f}, smaller in size {r['smaller']:.2f}, "
                  f"median stale/true {r['median_ratio']:.2f} ({r['updates']} updates)"
                  for n, r in shift["relation"].items())]

    lines += ["", "### Training: final exact team reward (mean ± sd over seeds) and regressions",
              "", "| method | " + " | ".join(f"n = {n}" for n in train["sizes"])
              + f" | regressed (peak − final > {REGRESSION}) | ended < {CHANCE} | stages "
              "| accepted updates | kept step fraction (all; accepted) "
              f"| accepted KL q99 (n = {train['sizes'][-1]}) |",
              "|---|" + "---|" * (len(train["sizes"]) + 6)]
    for method in train["methods"]:
        cells = [train["table"][method][n] for n in train["sizes"]]
        columns = [
            " | ".join(f"{c['final']['mean']:.3f} ± {c['final']['sd']:.3f}" for c in cells),
            ", ".join(f"{c['regressed']}/{c['runs']}" for c in cells),
            ", ".join(f"{c['collapsed']}/{c['runs']}" for c in cells),
            ", ".join(str(c["stages"]) for c in cells),
            ", ".join(_opt(c["accepted"]) for c in cells),
            ", ".join(f"{_opt(c['step_fraction'])}; {_opt(c['step_fraction_accepted'])}"
                      for c in cells),
            _opt(cells[-1]["accepted_kl_q99"], 3)]
        lines.append(f"| {method} | {' | '.join(columns)} |")
    lines += ["", "Paired by seed, after 1, 2, 3, 4 stages (mean difference, "
              f"{summary['interval']['difference']}):", ""]
    for name, pair in train["paired"].items():
        for n, stages in pair["by_n"].items():
            if stages:
                lines.append(f"- {name}, {pair['first']} − {pair['second']}, n = {n}: "
                             + ", ".join(_fmt(fit, "+.3f") for fit in stages.values()))
    lines += ["", "After one TeamTR stage's episodes: " + "; ".join(
        f"n = {n} ({e['episodes']} episodes): teamtr {e['teamtr']:.3f}, "
        f"kl_no_refresh {e['kl_no_refresh']:.3f}"
        for n, e in train["after_first_teamtr_stage"].items()),
              "", "Warm-started teams score " + ", ".join(
                  f"{v:.3f} (n = {n})" for n, v in train["initial"].items())
              + f"; chance is 0.25; largest warm-start KL {train['warm_kl_max']:.1e}."]
    return "\n".join(lines)


def plot(results: list[dict[str, Any]], summary: dict[str, Any], out: Path,
         docs: Path | None) -> None:
    """The stale-bias and the training figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shift = summary["shift"]
    sizes = shift["sizes"]
    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    for k, unit in enumerate(UNITS):
        means = np.array([shift["bias"][unit][n]["mean"] for n in sizes])
        axes[0].plot(sizes, means / means[0], "o-", color=f"C{k}",
                     label=f"{unit} (slope {_fmt(shift['slope_n'][unit])})")
    shape = np.array([bound_shape(n) for n in sizes])
    axes[0].plot(sizes, shape / shape[0], "k:",
                 label=f"bound's shape n(n−1)/2 (slope {shift['bound_slope_n']:.2f})")
    axes[0].set(xscale="log", yscale="log", xlabel="agents n",
                ylabel="stage stale bias / its value at n = 2", title="Stale bias against n")
    axes[0].set_xticks(sizes, [str(n) for n in sizes])
    axes[0].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[0].legend(fontsize=7)
    for k, unit in enumerate(UNITS):
        means = shift["position_means"][unit]
        if means:
            ks = sorted(means)
            values = np.array([means[x] for x in ks])
            axes[1].plot(ks, values / values[0], "o-", color=f"C{k}",
                         label=f"{unit} (slope {_fmt(shift['slope_position'][unit])})")
            axes[1].plot(ks, np.asarray(ks) / ks[0], "k:")
    axes[1].set(xscale="log", yscale="log", xlabel="agents updated before this one",
                ylabel="|stale − true gain| / its value at 1",
                title=f"Stale bias by position (n = {shift['position_n']}; dotted: slope 1)")
    earlier = range(1, shift["position_n"])
    axes[1].set_xticks(earlier, [str(k) for k in earlier])
    axes[1].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    _save(figure, "teamtr_evidence_shift.png", out, docs)
    _plot_training(plt, [r for r in results if not r["shift_only"]],
                   summary["training"]["sizes"], summary["training"]["methods"], out, docs)


def _plot_training(plt: Any, trained: list[dict[str, Any]], sizes: list[int],
                   methods: list[str], out: Path, docs: Path | None) -> None:
    """Top: exact reward against rollout episodes for the runs of the matched budget. Bottom:
    against updates per agent, pairing the runs with equal updates."""
    colours = {m: f"C{k}" for k, m in enumerate(METHODS)}
    figure, axes = plt.subplots(2, len(sizes), figsize=(4.3 * len(sizes), 7), sharey=True)
    equal_updates = ("teamtr", "kl_no_refresh", "teamtr_nx_budget", "kl_no_refresh_nx_batch")
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
            if method in equal_updates:
                axes[1, column].plot(np.arange(shortest), mean, style, color=colours[method],
                                     label=method)
        axes[0, column].set(title=f"n = {n}: matched rollout budget", xlabel="rollout episodes")
        axes[1, column].set(title=f"n = {n}: equal updates", xlabel="updates per agent (stages)",
                            xscale="symlog")
    for row in axes:
        row[0].set_ylabel("exact team reward (mean over seeds)")
        row[0].legend(fontsize=6)
    figure.tight_layout()
    _save(figure, "teamtr_evidence_reward.png", out, docs)


def _save(figure: Any, name: str, out: Path, docs: Path | None) -> None:
    for folder in (out, docs):
        if folder is not None:
            figure.savefig(folder / name, dpi=120)


RESULTS_NAME = "teamtr_evidence_results.json"
"""The results file written to ``--docs``: runs, settings, runtime and summary."""


@dataclass
class Args:
    """TeamTR's compounding shift on relay teams: results go to ``--out``; ``docs/`` is written
    only with ``--docs``."""

    seeds: int = 8
    """seeds of the training runs"""
    shift_seeds: int = 16
    """seeds of the stale-bias measurement (first stage only)"""
    budget: int = 16_384
    """matched rollout budget per run, in episodes"""
    workers: int = 2
    """processes; 0 runs in this one"""
    quick: bool = False
    """a tiny version that checks the script"""
    out: Path = Path("runs/teamtr_evidence")
    """where results.json, report.md, runs.jsonl and the plots go"""
    docs: Path | None = None
    """also write the plots and the results file here (e.g. docs)"""
    resume: bool = False
    """keep the runs already in --out/runs.jsonl and run only the rest (same scale and
    settings only)"""
    adv_std_ddof: int = 1
    """advantages over the group's sample std (1: the reference's and the trainers' default)
    or its population std (0: the first run's)"""
    replot: Path | None = None
    """report a results file already written (e.g. docs/teamtr_evidence_results.json) instead
    of running"""


def write(data: dict[str, Any], out: Path, docs: Path | None) -> str:
    """Summarise ``data`` (its ``runs``), write results, report and plots; return the report.

    The results and the report are each written whole or not at all, as ``--replot
    docs/teamtr_evidence_results.json --docs docs`` rewrites the very file it read, whose
    runs are kept nowhere else."""
    data.setdefault("settings", {"task": TASK, "trainer": SETTINGS,
                                 "warm_accuracy": WARM_ACCURACY, "methods": METHODS,
                                 "regression": REGRESSION, "chance_line": CHANCE})
    data["summary"] = summarize(data["runs"])
    text = report_text(data["summary"])
    seconds = sum(run["seconds"] for run in data["runs"])
    text += (f"\n\n{len(data['runs'])} of {data['jobs']} runs; their own times sum to "
             f"{seconds:.0f} s; the run took {data['elapsed_s']:.0f} s with "
             f"{data['workers']} workers")
    out.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False)
    write_text_atomic(out / "results.json", payload)
    write_text_atomic(out / "report.md", text + "\n")
    if docs is not None:
        write_text_atomic(docs / RESULTS_NAME, payload)
    plot(data["runs"], data["summary"], out, docs)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Run the jobs in worker processes (or in this one with ``--workers 0``) and report."""
    given = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(Args, given, prog="teamtr_evidence.py")
    if args.adv_std_ddof not in (0, 1):
        raise ConfigError("adv_std_ddof", f"must be 0 or 1, got {args.adv_std_ddof}")
    scale = {"prompts": 64, "budget": args.budget, "eval_episodes": 256, "warm_steps": 100,
             "epochs": 4, "adv_std_ddof": args.adv_std_ddof}
    if args.quick:
        args.seeds, args.shift_seeds = 2, 2
        scale = {"prompts": 4, "budget": 8 * 4 * 4, "eval_episodes": 16, "warm_steps": 10,
                 "epochs": 1, "adv_std_ddof": args.adv_std_ddof}
    if args.docs is not None:
        args.docs.mkdir(parents=True, exist_ok=True)
    if args.replot:
        print(write(json.loads(args.replot.read_text()), args.out, args.docs))
        return 0
    jobs = make_jobs(args.seeds, args.shift_seeds, scale)
    journal = RunJournal(args.out / "runs.jsonl", _key, run_settings(scale), args.resume)
    done = journal.done
    todo = [job for job in jobs if _key(job) not in done]
    failed: dict[str, Exception] = {}
    started = time.perf_counter()
    with journal:
        progress = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc="teamtr evidence",
                        unit="run")
        if args.workers:
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(args.workers, mp_context=context) as pool:
                futures = {pool.submit(run_job, job): job for job in todo}
                for future in as_completed(futures):
                    _settle(futures[future], future.result, journal, failed)
                    progress.update()
        else:
            for job in todo:
                _settle(job, lambda job=job: run_job(job), journal, failed)
                progress.update()
        progress.close()
    if failed:  # every other run is journaled: --resume runs only the failed ones
        names = "; ".join(f"{name} ({error!r})" for name, error in failed.items())
        raise RuntimeError(f"{len(failed)} of {len(todo)} runs failed: {names}; the others are "
                           f"in {journal.path}: fix the cause and pass --resume to run only "
                           "these") from next(iter(failed.values()))
    data = {"command": " ".join(["python examples/teamtr_evidence.py", *given]),
            "scale": scale, "seeds": args.seeds, "shift_seeds": args.shift_seeds,
            "jobs": len(jobs), "workers": args.workers,
            "elapsed_s": time.perf_counter() - started,
            "runs": [done[_key(job)] for job in jobs]}
    print(write(data, args.out, args.docs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
