"""The TeamTR evidence script's summaries (units of the stale bias, kept step fractions, paired
differences) on tiny synthetic runs, and TeamTR's reduced-resampling option."""

from __future__ import annotations

import importlib
import json
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
import torch

from trainers import teamtr
from trainers.common.args import ConfigError
from trainers.common.team import Team, build_team
from trainers.experiments import teamtr_evidence


@pytest.fixture(scope="module")
def evidence():
    return teamtr_evidence


def synthetic_run(n: int, seed: int, kl: float, gain: float, c: float) -> dict:
    """A TeamTR first stage shaped like the bound: every update has KL ``kl`` and true gain
    ``gain``; the update after i others has stale bias c · Σ_{k<i} √KL_k = c · i · √kl."""
    rows = [{"position": i, "true": gain, "stale": gain - c * i * math.sqrt(kl), "kl": kl,
             "step_fraction": 0.5} for i in range(n)]
    return {"method": "teamtr", "n": n, "seed": seed, "shift_only": True, "first_stage": rows}


def test_stale_bias_units_follow_the_bound_shape_only_per_sqrt_kl(evidence) -> None:
    # √KL per update falls like n^-1/2 and the true gain like n^-1: absolute and per-gain slopes
    # differ from the bound's; per √KL the bias is exactly c · n(n − 1)/2.
    c = 0.1
    kls = {n: 0.08 / n for n in (2, 4, 8)}
    gains = {n: 0.22 / n for n in (2, 4, 8)}  # at n = 8, later updates flip sign from i = 3
    runs = [synthetic_run(n, seed, kls[n], gains[n], c) for n in (2, 4, 8) for seed in (1, 2)]
    one = evidence.stale_bias_units(runs[0])
    assert one["sqrt_kl"] == pytest.approx(0.2) and one["gain"] == pytest.approx(0.11)
    assert one["stage"]["absolute"] == pytest.approx(c * 0.2)
    assert one["stage"]["per_sqrt_kl"] == pytest.approx(c)
    assert one["stage"]["per_gain"] == pytest.approx(c * 0.2 / 0.11)

    shift = evidence.summarize_shift(runs, np.random.default_rng(0))
    bound = shift["bound_slope_n"]
    assert bound == pytest.approx(np.polyfit(np.log([2, 4, 8]), np.log([1, 6, 28]), 1)[0])
    assert bound == pytest.approx(2.40, abs=0.01)
    for n in (2, 4, 8):
        assert shift["bias"]["per_sqrt_kl"][n]["mean"] == pytest.approx(c * n * (n - 1) / 2)
        assert shift["bias"]["absolute"][n]["mean"] == pytest.approx(
            c * math.sqrt(kls[n]) * n * (n - 1) / 2)
        assert shift["units"]["sqrt_kl"][n]["mean"] == pytest.approx(math.sqrt(kls[n]))
    slopes = shift["slope_n"]
    assert slopes["per_sqrt_kl"]["value"] == pytest.approx(bound)
    assert slopes["absolute"]["value"] == pytest.approx(bound - 0.5)
    assert slopes["per_gain"]["value"] == pytest.approx(bound + 0.5)
    assert shift["unit_slope_n"]["sqrt_kl"]["value"] == pytest.approx(-0.5)
    # identical seeds: the bootstrap interval collapses onto the point
    assert slopes["absolute"]["low"] == pytest.approx(slopes["absolute"]["high"])
    # by position the bias grows like the number of agents updated before, in every unit
    assert shift["position_n"] == 8
    assert all(fit["value"] == pytest.approx(1.0) for fit in shift["slope_position"].values())
    relation = shift["relation"][8]
    assert relation["same_sign"] == pytest.approx(2 / 7)
    assert relation["smaller"] == pytest.approx(5 / 7)
    ratios = [1 - c * i * math.sqrt(kls[8]) / gains[8] for i in range(1, 8)]
    assert relation["median_ratio"] == pytest.approx(np.median(ratios))


def test_training_summary_counts_kept_steps_regressions_and_paired_differences(evidence) -> None:
    def run(method: str, seed: int, curve: list[float], fractions: list[float]) -> dict:
        return {"method": method, "n": 2, "seed": seed, "shift_only": False,
                "curve": [(256 * k, value) for k, value in enumerate(curve)], "warm_kl": 1e-4,
                "accepted": float(sum(f > 0 for f in fractions)), "updates": len(fractions),
                "accepted_kl_q99": 0.1, "step_fractions": fractions, "stages": len(curve) - 1,
                "episodes": 256 * (len(curve) - 1), "first_stage": []}

    runs = [run("teamtr_nx_budget", 1, [0.5, 0.7, 0.9, 0.95, 0.6], [1.0, 0.5, 0.25, 0.0]),
            run("teamtr_nx_budget", 2, [0.5, 0.8, 0.9, 0.95, 0.95], [0.5, 0.5, 0.5, 0.5]),
            run("kl_no_refresh", 1, [0.5, 0.6, 0.8, 0.9, 0.9], [1.0] * 4),
            run("kl_no_refresh", 2, [0.5, 0.6, 0.9, 0.9, 0.9], [1.0] * 4)]
    train = evidence.summarize_training(runs)
    cell = train["table"]["teamtr_nx_budget"][2]
    assert cell["regressed"] == 1 and cell["collapsed"] == 0
    assert cell["accepted"] == pytest.approx((3 / 4 + 4 / 4) / 2)
    assert cell["step_fraction"] == pytest.approx(3.75 / 8)  # the rejected update keeps 0
    assert cell["step_fraction_accepted"] == pytest.approx(3.75 / 7)
    assert cell["final"]["mean"] == pytest.approx(0.775)
    paired = train["paired"]["equal_updates"]["by_n"][2]
    assert paired[1]["value"] == pytest.approx(((0.7 - 0.6) + (0.8 - 0.6)) / 2)
    half = 12.7062 * 0.05  # t_{0.975, 1} x the sd of (0.1, 0.2) over the root of 2 seeds
    assert paired[1]["low"] == pytest.approx(0.15 - half, abs=1e-4)
    assert paired[1]["high"] == pytest.approx(0.15 + half, abs=1e-4)
    assert paired[4]["value"] == pytest.approx(((0.6 - 0.9) + (0.95 - 0.9)) / 2)


EASY = {"n_agents": 4, "env_kwargs": {"vocab_size": 3}, "prompts_per_rollout": 32,
        "learning_rate": 2e-2, "delta": 100.0, "delta_schedule": "constant", "log_dir": "",
        "eval_episodes": 64, "eval_every": 100}


def fingerprints_at_collection(team: Team) -> list[list[torch.Tensor]]:
    """The team's parameters at every rollout it collects from now on."""
    seen = []
    collect = team.collect

    def spy(prompts: int, group_size: int, **options: Any):
        seen.append([torch.cat([p.detach().flatten() for p in policy.module.parameters()])
                     for policy in team.policies])
        return collect(prompts, group_size, **options)

    team.collect = spy
    return seen


def test_reduced_resampling_rolls_out_before_every_second_update() -> None:
    args = teamtr.Args(**EASY, resample_every=2, total_episodes=2 * 2 * 128)
    team = build_team(args)
    seen = fingerprints_at_collection(team)
    history = teamtr.train(args, team=team).history
    stages = [r for r in history if "charts/team_reward" in r]
    assert len(stages) == 2 and len(seen) == team.collections == 4
    for stage, record in enumerate(stages):
        order = sorted(range(4), key=lambda a: record[f"trust_region/agent_{a}/position"])
        earlier, later = seen[2 * stage], seen[2 * stage + 1]
        changed = [a for a in range(4) if not torch.equal(earlier[a], later[a])]
        assert changed == sorted(order[:2])  # the two agents updated on the first rollout


def test_resampling_once_per_stage_costs_one_rollout() -> None:
    args = teamtr.Args(**EASY, resample_every=4, total_episodes=3 * 128)
    result = teamtr.train(args)
    assert result.team.collections == 3
    assert sum("charts/team_reward" in r for r in result.history) == 3
    with pytest.raises(ConfigError, match="^resample_every: "):
        teamtr.Args(resample_every=0)


def _stub_runs(monkeypatch, evidence, fail: tuple = ()) -> list[tuple]:
    """Stand-in runs (the keys of those made, in order), the run ``fail`` raising, no report."""
    made = []

    def run_job(job: dict) -> dict:
        if evidence._key(job) == fail:
            raise ArithmeticError("this run fails")
        made.append(evidence._key(job))
        return {**job, "budget": job["scale"]["budget"]}

    monkeypatch.setattr(evidence, "run_job", run_job)
    monkeypatch.setattr(evidence, "write", lambda data, out, docs: "")
    return made


def _journaled(out) -> set[tuple]:
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert "settings" in lines[0]
    return {teamtr_evidence._key(run) for run in lines[1:]}


def test_resuming_under_another_budget_or_scale_is_refused(evidence, monkeypatch,
                                                           tmp_path) -> None:
    made = _stub_runs(monkeypatch, evidence)
    argv = ["--seeds", "1", "--shift-seeds", "1", "--workers", "0", "--out", str(tmp_path)]
    assert evidence.main([*argv, "--budget", "128"]) == 0
    assert len(made) == 27  # 9 methods x 3 team sizes
    for other in (["--budget", "256"], ["--quick"]):
        with pytest.raises(ValueError, match=r"differ in scale \("):
            evidence.main([*argv, *other, "--resume"])
    assert evidence.main([*argv, "--budget", "128", "--resume"]) == 0
    assert len(made) == 27 and len(_journaled(tmp_path)) == 27


def test_the_advantages_std_reaches_every_trainer_and_a_change_refuses_resuming(
        evidence, monkeypatch, tmp_path) -> None:
    scale = {"prompts": 4, "budget": 64, "eval_episodes": 4, "epochs": 1, "adv_std_ddof": 0}
    for method in evidence.METHODS:
        module, settings = evidence.method_args(method, 2, 1, scale)
        trainer = importlib.import_module(f"trainers.{module}")
        assert trainer.Args(**settings).adv_std_ddof == 0
    _stub_runs(monkeypatch, evidence)
    argv = ["--seeds", "1", "--shift-seeds", "1", "--workers", "0", "--out", str(tmp_path),
            "--budget", "128"]
    assert evidence.main(argv) == 0  # the reference's sample std by default
    with pytest.raises(ValueError, match=r"differ in scale \("):
        evidence.main([*argv, "--adv-std-ddof", "0", "--resume"])
    with pytest.raises(ConfigError, match="adv_std_ddof: must be 0 or 1, got 2"):
        evidence.main([*argv, "--adv-std-ddof", "2"])


@pytest.mark.parametrize("workers", [0, 2])
def test_a_failed_run_is_named_and_every_other_run_is_journaled(
        evidence, monkeypatch, tmp_path, workers: int) -> None:
    # threads stand in for the worker processes, which would not see the stub
    monkeypatch.setattr(evidence, "ProcessPoolExecutor",
                        lambda workers, mp_context: ThreadPoolExecutor(workers))
    failing = ("kl_no_refresh", 4, 1, False)
    made = _stub_runs(monkeypatch, evidence, fail=failing)
    argv = ["--seeds", "1", "--shift-seeds", "1", "--budget", "128", "--workers", str(workers),
            "--out", str(tmp_path)]
    with pytest.raises(RuntimeError, match=r"1 of 27 runs failed: kl_no_refresh n=4 seed=1 "
                                           r"\(ArithmeticError\('this run fails'\)\)"):
        evidence.main(argv)
    assert len(made) == 26 and _journaled(tmp_path) == set(made)
    made = _stub_runs(monkeypatch, evidence)
    assert evidence.main([*argv, "--resume"]) == 0
    assert made == [failing]  # resuming runs only the failed run


def test_a_rerun_without_resume_is_one_line_and_exit_2(evidence, monkeypatch, tmp_path,
                                                       capsys) -> None:
    from agentworld_envs.cli import run_command

    _stub_runs(monkeypatch, evidence)
    argv = ["--seeds", "1", "--shift-seeds", "1", "--workers", "0", "--out", str(tmp_path),
            "--budget", "128"]
    assert run_command(lambda: evidence.main(argv)) == 0
    capsys.readouterr()
    assert run_command(lambda: evidence.main(argv)) == 2  # was a traceback
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "holds 27 finished runs: pass --resume" in error
