"""Shared trainer utilities: objectives and their masking, settings parsing, logging, CLI."""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np
import pytest
import torch

from agentworld_envs.cli_errors import UsageError
from trainers.cli import add_commands
from trainers.common.args import TeamArgs
from trainers.common.batch import RolloutBatch
from trainers.common.flags import field_docs, parse_args
from trainers.common.objectives import (
    group_advantages,
    kl_summary,
    leave_one_out_centred,
    message_kl,
    message_log_ratio,
    ppo_clip_loss,
    surrogate_gain,
)
from trainers.teamtr import Args


def test_group_advantages_normalise_within_groups_and_clip() -> None:
    rewards = np.array([1.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5])
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    advantages = group_advantages(rewards, groups, clip=5.0, ddof=0)  # the population std
    assert advantages[:4] == pytest.approx([np.sqrt(3), -1 / np.sqrt(3), -1 / np.sqrt(3),
                                            -1 / np.sqrt(3)], rel=1e-4)
    assert advantages[4:].tolist() == [0.0] * 4
    assert group_advantages(rewards, groups, clip=1.0).max() == 1.0


def test_message_kl_and_ratio_ignore_masked_positions() -> None:
    old = torch.log(torch.tensor([[0.5, 0.5, 0.9], [0.2, 0.3, 0.1]]))
    new = torch.log(torch.tensor([[0.25, 0.5, 0.1], [0.2, 0.6, 0.7]]))
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    garbage = new.clone()
    garbage[:, 2] = torch.tensor([-50.0, 3.0])  # the masked position changes wildly
    for candidate in (new, garbage):
        kl = message_kl(candidate, old, mask)
        delta = torch.log(torch.tensor([0.5, 1.0]))
        assert kl[0] == pytest.approx(float(torch.expm1(delta[0]) - delta[0]), abs=1e-6)
        assert kl[1] == pytest.approx(float(torch.expm1(torch.log(torch.tensor(2.0)))
                                            - torch.log(torch.tensor(2.0))), abs=1e-6)
        assert message_log_ratio(candidate, old, mask).tolist() == pytest.approx(
            [np.log(0.5), np.log(2.0)], abs=1e-6)


def test_message_kl_sums_tokens_so_long_messages_weigh_more() -> None:
    old = torch.full((1, 4), float(np.log(0.5)))
    new = torch.full((1, 4), float(np.log(0.25)))
    one, four = torch.tensor([[1.0, 0, 0, 0]]), torch.ones(1, 4)
    assert message_kl(new, old, four) == pytest.approx(4 * message_kl(new, old, one))


def test_ppo_clip_loss_clips_and_weights() -> None:
    log_ratio = torch.log(torch.tensor([2.0, 0.5, 1.0]))
    advantages = torch.tensor([1.0, -1.0, 1.0])
    loss, clipped = ppo_clip_loss(log_ratio, advantages, clip=0.2)
    assert loss == pytest.approx(-(1.2 - 0.8 + 1.0) / 3) and clipped == pytest.approx(2 / 3)
    weighted, _ = ppo_clip_loss(log_ratio, advantages, 0.2, weights=torch.tensor([0., 0., 2.]))
    assert weighted == pytest.approx(-2 / 3)


def test_surrogate_gain_is_zero_without_change_and_signed_with_it() -> None:
    batch = RolloutBatch(np.array([1.0, 0.0, 1.0, 0.0]), np.array([0, 0, 1, 1]), [])
    episodes = np.arange(4)
    assert surrogate_gain(torch.zeros(4), episodes, batch) == 0.0
    towards_success = torch.log(torch.tensor([2.0, 0.5, 2.0, 0.5]))
    assert surrogate_gain(towards_success, episodes, batch) > 0
    assert surrogate_gain(-towards_success, episodes, batch) < 0


def test_surrogate_gain_is_unbiased_for_a_known_exact_gain() -> None:
    """Problem z in {0, 1}; reward 0.5 z + [a == z]; the policy moves from 50/50 to
    P(a = z) = 0.7 (z = 0) and 0.8 (z = 1): the exact gain is (0.2 + 0.3) / 2 = 0.25. A baseline
    that includes the episode itself would give (G - 1) / G of it, 0.1875 at G = 4."""
    rng = np.random.default_rng(0)
    groups, size = 40_000, 4
    z = np.repeat(rng.integers(2, size=groups), size)
    a = rng.integers(2, size=groups * size)
    rewards = 0.5 * z + (a == z)
    p_right = np.where(z == 1, 0.8, 0.7)
    rho = np.where(a == z, p_right, 1 - p_right) / 0.5
    batch = RolloutBatch(rewards, np.repeat(np.arange(groups), size), [])
    estimate = surrogate_gain(torch.log(torch.as_tensor(rho)), np.arange(len(a)), batch)
    centred = rewards - np.repeat(rewards.reshape(groups, size).mean(axis=1), size)
    error = np.std((rho - 1) * centred * size / (size - 1)) / np.sqrt(len(a))
    assert abs(estimate - 0.25) < 4 * error < 0.01
    assert surrogate_gain(torch.zeros(4), np.arange(4),
                          RolloutBatch(np.ones(4), np.arange(4), [])) == 0.0  # groups of one


def test_leave_one_out_centring_excludes_the_episode_itself() -> None:
    rewards = np.array([1.0, 0.0, 0.0, 3.0, 5.0])
    centred = leave_one_out_centred(rewards, np.array([0, 0, 0, 1, 2]))
    assert centred.tolist() == pytest.approx([1.0, -0.5, -0.5, 0.0, 0.0])


def test_kl_summary_quantiles() -> None:
    kl = torch.arange(101, dtype=torch.float64) / 100
    summary = kl_summary(kl, delta=0.5, quantile=0.9)
    assert summary["kl_q50"] == pytest.approx(0.5) and summary["kl_checked"] == pytest.approx(0.9)
    assert summary["kl_q99"] == pytest.approx(0.99) and summary["kl_beyond"] == 50 / 101
    assert kl_summary(torch.zeros(0), 0.1, 0.99)["kl_q99"] == 0.0


def test_every_args_field_is_documented() -> None:
    docs = field_docs(Args)
    names = {f for f in Args.__dataclass_fields__}
    assert names == set(docs) and all(docs.values())


def test_parse_args_reads_every_kind_of_field() -> None:
    args = parse_args(Args, ["--n-agents", "4", "--env-kwargs", '{"vocab_size": 5}',
                             "--order", "static", "--learning-rate", "0.1", "--resume",
                             "--checkpoint-dir", "ck", "--delta-schedule", "constant"])
    assert (args.n_agents, args.env_kwargs, args.order, args.learning_rate, args.resume) == (
        4, {"vocab_size": 5}, "static", 0.1, True)
    with pytest.raises(UsageError, match="sideways"):
        parse_args(Args, ["--order", "sideways"])


def test_parse_args_reads_a_list_field_as_comma_separated_items() -> None:
    @dataclasses.dataclass
    class Listed:
        seeds: list[int] = dataclasses.field(default_factory=lambda: [0])
        """seeds to run"""

    assert parse_args(Listed, ["--seeds", "3,1,2"]).seeds == [3, 1, 2]
    assert parse_args(Listed, []).seeds == [0]


def test_base_args_reject_wrong_types_with_the_field_name() -> None:
    with pytest.raises(ValueError, match="^env_kwargs: expected dict"):
        TeamArgs(env_kwargs="vocab_size=4")


def test_cli_trains_and_writes_tensorboard(tmp_path, capsys) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    parser = argparse.ArgumentParser()
    add_commands(parser)
    args = parser.parse_args(["train", "teamtr", "--n-agents", "2", "--total-episodes", "256",
                              "--prompts-per-rollout", "32", "--eval-episodes", "64",
                              "--log-dir", str(tmp_path), "--env-kwargs",
                              json.dumps({"vocab_size": 3})])
    assert args.handler(args) == 0
    assert "final team reward" in capsys.readouterr().out
    [run] = list(tmp_path.iterdir())
    events = EventAccumulator(str(run))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"charts/team_reward", "charts/eval_team_reward", "trust_region/agent_1/kl_q99",
            "trust_region/out_of_region_fraction", "surrogate/stale_gap",
            "surrogate/agent_0/fresh"} <= tags
    assert "hyperparameters/text_summary" in events.Tags()["tensors"]


def test_cli_lists_and_plays_envs(capsys) -> None:
    parser = argparse.ArgumentParser()
    add_commands(parser)
    for argv in (["envs"], ["play", "team_envs/relay-v0", "--env-kwargs", '{"n_agents": 3}']):
        args = parser.parse_args(argv)
        assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "team_envs/floor_team-v0" in out and "agent_2 (receiver)" in out


def test_evidence_script_quick_run_writes_its_run_directory_not_docs(tmp_path) -> None:
    from pathlib import Path

    from trainers.experiments import teamtr_evidence as evidence

    defaults = parse_args(evidence.Args, [])
    assert defaults.docs is None and defaults.out == Path("runs/teamtr_evidence")
    out, docs = tmp_path / "run", tmp_path / "docs"
    assert evidence.main(["--quick", "--workers", "0", "--out", str(out),
                          "--docs", str(docs)]) == 0
    names = {"teamtr_evidence_shift.png", "teamtr_evidence_reward.png"}
    assert names | {"results.json", "report.md", "runs.jsonl"} == {p.name for p in out.iterdir()}
    assert names | {evidence.RESULTS_NAME} == {p.name for p in docs.iterdir()}
    report = (out / "report.md").read_text()
    assert "nan" not in report.lower() and "Log-log slope against n" in report
    assert all(f"| {method} |" in report for method in evidence.METHODS)
    data = json.loads((out / "results.json").read_text(),
                      parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert data == json.loads((docs / evidence.RESULTS_NAME).read_text())
    lines = (out / "runs.jsonl").read_text().splitlines()  # a resumed run reruns nothing
    (out / "runs.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    assert evidence.main(["--quick", "--workers", "0", "--out", str(out), "--resume"]) == 0
    resumed = json.loads((out / "results.json").read_text())["runs"]
    assert [r["curve"] for r in resumed] == [r["curve"] for r in data["runs"]]
    assert (out / "runs.jsonl").read_text().splitlines()[:-1] == lines[:-1]
    assert set(data["summary"]["training"]["table"]) == set(evidence.METHODS)
    results = data["runs"]
    assert {(r["method"], r["n"]) for r in results} == {
        (m, n) for m in evidence.METHODS for n in evidence.TEAM_SIZES}
    starts: dict[tuple[int, int], set[float]] = {}
    for run in results:  # every method starts from the same warm-started team
        starts.setdefault((run["n"], run["seed"]), set()).add(run["curve"][0][1])
    assert all(len(values) == 1 for values in starts.values())
