"""TeamTR on symbolic teams: trust region, fresh rollouts, learning, determinism, resume."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from tests.helpers.histories import untimed
from trainers import stale_sequential, teamtr
from trainers.common.args import ConfigError
from trainers.common.objectives import message_advantages
from trainers.common.team import Team, build_team, make_optimizer
from trainers.common.updates import (
    UpdateSettings,
    message_log_ratios,
    snapshot,
    trust_region_update,
)
from trainers.policies.symbolic import SymbolicAgent

EASY = {"n_agents": 2, "env_kwargs": {"vocab_size": 3}, "prompts_per_rollout": 32,
        "learning_rate": 2e-2, "delta": 0.5, "delta_schedule": "constant", "log_dir": "",
        "eval_episodes": 512, "eval_every": 100}


def easy_args(**overrides: object) -> teamtr.Args:
    return teamtr.Args(**{**EASY, "total_episodes": 3000, **overrides})


def flat_params(module: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in module.parameters()])


def team_fingerprint(team: Team) -> list[torch.Tensor]:
    return [flat_params(p.module) for p in team.policies]


def one_agent_update(delta: float, max_backtracks: int = 2, backtrack: str = "interpolate"):
    args = easy_args(n_agents=3)
    team = build_team(args)
    batch = team.collect(args.prompts_per_rollout, args.group_size)
    policy, optimizer = team.policies[1], team.optimizers[1]
    optimizer.step()  # give the optimiser some state to restore
    before, state_before = flat_params(policy.module), snapshot(policy, optimizer)["optimizer"]
    result = trust_region_update(
        policy, optimizer, batch.samples[1],
        message_advantages(batch, 1, args.adv_clip, args.adv_std_ddof),
        UpdateSettings.from_args(args), team.generator, delta=delta, beta=0.01, quantile=0.99,
        beta_growth=1.5, max_backtracks=max_backtracks, backtrack=backtrack)
    return result, before, flat_params(policy.module), state_before, optimizer.state_dict()


def test_tiny_delta_backtracks_raises_beta_and_restores_the_agent() -> None:
    result, before, after, state_before, state_after = one_agent_update(delta=1e-9)
    assert not result.accepted and result.backtracks == 2
    assert result.beta == pytest.approx(0.01 * 1.5 ** 3)
    assert result.kl["kl_checked"] > 1e-9
    assert torch.equal(before, after)
    assert all(torch.equal(state_before["state"][k]["exp_avg"], state_after["state"][k]["exp_avg"])
               for k in state_before["state"])


def test_loose_delta_accepts_the_first_attempt() -> None:
    result, before, after, *_ = one_agent_update(delta=100.0)
    assert result.accepted and result.backtracks == 0 and result.beta == 0.01
    assert not torch.equal(before, after)
    assert 0 < result.kl["kl_q50"] <= result.kl["kl_q99"] <= result.kl["kl_max"] < 100


def test_each_failed_check_halves_the_step_towards_the_old_parameters() -> None:
    full, before, stepped, *_ = one_agent_update(delta=100.0)
    delta = full.kl["kl_checked"] / 10
    result, same_before, after, *_ = one_agent_update(delta=delta, max_backtracks=5)
    assert torch.equal(before, same_before)
    assert result.accepted and result.backtracks >= 1
    assert result.step_fraction == 0.5 ** result.backtracks
    assert result.kl["kl_checked"] <= delta
    assert torch.allclose(after, before + result.step_fraction * (stepped - before), atol=1e-6)
    # The reference's restore-and-redo barely shrinks the step: the same budget is not met.
    redo, *_ = one_agent_update(delta=delta, max_backtracks=5, backtrack="beta_only")
    assert not redo.accepted and redo.kl["kl_checked"] > 0.5 * full.kl["kl_checked"]


def test_stage_log_counts_accepted_and_rejected_updates_and_their_kl() -> None:
    args = easy_args(n_agents=3, total_episodes=2 * 3 * 128)
    record = teamtr.train(args).history[1]
    accepted = sum(record[f"trust_region/agent_{a}/accepted"] for a in range(3))
    assert record["trust_region/accepted_updates"] == accepted
    assert record["trust_region/rejected_updates"] == 3 - accepted
    kept = [a for a in range(3) if record[f"trust_region/agent_{a}/accepted"]]
    assert record["trust_region/accepted_kl_q99"] == pytest.approx(
        np.mean([record[f"trust_region/agent_{a}/kl_q99"] for a in kept]))
    assert 0 < record["trust_region/accepted_kl_mean"] <= args.delta


def test_a_stage_with_tiny_delta_leaves_every_agent_unchanged() -> None:
    args = easy_args(n_agents=3, delta=1e-9, max_backtracks=1, total_episodes=3 * 128)
    team = build_team(args)
    start = team_fingerprint(team)
    result = teamtr.train(args, team=team)
    stage = result.history[1]
    assert stage["trust_region/out_of_region_fraction"] == 1.0
    assert all(torch.equal(a, b) for a, b in zip(start, team_fingerprint(team), strict=True))
    assert team.betas == pytest.approx([args.kl_coef * 1.5 ** 2] * 3)


def test_fresh_rollouts_follow_each_update_while_stale_reuses_one() -> None:
    def record_collections(team: Team) -> list[list[torch.Tensor]]:
        seen = []
        collect = team.collect

        def spy(prompts: int, group_size: int, **options: Any):
            seen.append(team_fingerprint(team))
            return collect(prompts, group_size, **options)

        team.collect = spy
        return seen

    args = easy_args(n_agents=4, delta=100.0, total_episodes=2 * 4 * 128)
    team = build_team(args)
    seen = record_collections(team)
    history = teamtr.train(args, team=team).history
    assert len(seen) == 8 and team.collections == 8
    for stage in range(2):
        order = sorted(range(4), key=lambda a: history[stage + 1][
            f"trust_region/agent_{a}/position"])
        for k in range(1, 4):
            earlier, later = seen[4 * stage + k - 1], seen[4 * stage + k]
            changed = [a for a in range(4) if not torch.equal(earlier[a], later[a])]
            assert changed == [order[k - 1]]  # exactly the agent updated just before

    stale_args = stale_sequential.Args(**{**EASY, "n_agents": 4, "total_episodes": 8 * 128})
    stale_team = build_team(stale_args)
    stale_seen = record_collections(stale_team)
    stale_history = stale_sequential.train(stale_args, team=stale_team).history
    stages = [r for r in stale_history if r["stage"] >= 0 and "charts/team_reward" in r]
    assert len(stale_seen) == len(stages) == stale_team.collections == 8
    for before, after in zip(stale_seen, stale_seen[1:], strict=False):
        assert all(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_teamtr_learns_an_easy_relay() -> None:
    result = teamtr.train(easy_args(seed=0))
    assert result.initial_eval < 0.4
    assert result.final_eval > 0.8


def test_logs_kl_quantiles_out_of_region_and_stale_gap() -> None:
    args = easy_args(n_agents=3, total_episodes=2 * 3 * 128, gain_eval_episodes=256)
    record = teamtr.train(args).history[1]
    for agent in range(3):
        for key in ("kl_q50", "kl_q90", "kl_q99", "kl_max", "beta", "backtracks"):
            assert f"trust_region/agent_{agent}/{key}" in record
        assert {"fresh", "stale", "true_gain", "fresh_holdout", "stale_holdout"} <= {
            k.rsplit("/", 1)[1] for k in record if k.startswith(f"surrogate/agent_{agent}/")}
    first = min(range(3), key=lambda a: record[f"trust_region/agent_{a}/position"])
    assert record[f"surrogate/agent_{first}/fresh"] == record[f"surrogate/agent_{first}/stale"]
    assert record["surrogate/stale_gap"] > 0
    assert 0.0 <= record["trust_region/out_of_region_fraction"] <= 1.0


def test_same_seed_same_run_and_other_seed_differs() -> None:
    runs = [teamtr.train(easy_args(seed=seed, total_episodes=1024)) for seed in (5, 5, 6)]
    assert untimed(runs[0].history) == untimed(runs[1].history)
    assert all(torch.equal(a, b) for a, b in zip(team_fingerprint(runs[0].team),
                                                 team_fingerprint(runs[1].team), strict=True))
    assert untimed(runs[0].history) != untimed(runs[2].history)


def test_interrupted_run_resumes_from_its_last_checkpoint(tmp_path) -> None:
    full = teamtr.train(easy_args(total_episodes=5 * 256,
                                  checkpoint_dir=str(tmp_path / "full")))

    def interrupt(stage: int, team: Team, record: dict) -> None:
        if stage == 1:
            raise KeyboardInterrupt

    args = easy_args(total_episodes=5 * 256, checkpoint_dir=str(tmp_path / "cut"))
    with pytest.raises(KeyboardInterrupt):
        teamtr.train(args, on_stage_end=interrupt)
    resumed = teamtr.train(dataclasses.replace(args, resume=True))
    assert resumed.initial_eval is None
    assert untimed(resumed.history) == untimed(full.history)
    assert all(torch.equal(a, b) for a, b in zip(team_fingerprint(full.team),
                                                 team_fingerprint(resumed.team), strict=True))
    assert sorted(p.name for p in (tmp_path / "cut").iterdir()) == ["latest.json",
                                                                    "stage_000005"]
    assert sorted(p.name for p in (tmp_path / "cut" / "stage_000005").iterdir()) == [
        "agent_0.pt", "agent_1.pt", "trainer.pt"]


def test_a_resumed_run_logs_every_point_an_uninterrupted_one_logs_once(tmp_path) -> None:
    """TensorBoard's log of a run resumed after stage 1 equals that of a run never stopped:
    the resumed writer purges what came after the last saved stage, not that stage's points,
    and the final evaluation is not logged again at a step whose stage was evaluated."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    def points(run_dir: str) -> dict[str, list[tuple[int, float]]]:
        events = EventAccumulator(run_dir, size_guidance={"scalars": 0})
        events.Reload()
        return {tag: [(e.step, e.value) for e in events.Scalars(tag)]
                for tag in ("charts/team_reward", "charts/eval_team_reward")}

    settings = dict(total_episodes=4 * 256, eval_every=1, eval_episodes=64)
    full = teamtr.train(easy_args(**settings, log_dir=str(tmp_path / "full")))

    def interrupt(stage: int, team: Team, record: dict) -> None:
        if stage == 1:
            raise KeyboardInterrupt

    args = easy_args(**settings, log_dir=str(tmp_path / "cut"),
                     checkpoint_dir=str(tmp_path / "checkpoint"))
    with pytest.raises(KeyboardInterrupt):
        teamtr.train(args, on_stage_end=interrupt)
    resumed = teamtr.train(dataclasses.replace(args, resume=True))
    logged = points(full.run_dir)
    assert [step for step, _ in logged["charts/team_reward"]] == [256, 512, 768, 1024]
    assert [step for step, _ in logged["charts/eval_team_reward"]] == [0, 256, 512, 768, 1024]
    assert points(resumed.run_dir) == logged
    assert full.history[-1]["charts/final_eval"] == full.history[-2]["charts/eval_team_reward"]


def test_a_run_resumes_only_with_its_own_settings(tmp_path) -> None:
    args = easy_args(total_episodes=2 * 256, checkpoint_dir=str(tmp_path))
    teamtr.train(args)
    longer = dataclasses.replace(args, total_episodes=3 * 256, resume=True)
    with pytest.raises(ConfigError, match="^seed: 2 differs from the checkpoint's 1"):
        teamtr.train(dataclasses.replace(longer, seed=2))
    with pytest.raises(ConfigError, match="^exp_name: 'stale_sequential' differs"):
        stale_sequential.train(stale_sequential.Args(**{
            **EASY, "total_episodes": 3 * 256, "checkpoint_dir": str(tmp_path),
            "resume": True}))
    assert teamtr.train(longer).team.episodes == 3 * 256  # a longer budget may resume


def test_a_replacement_must_name_an_agent_and_a_stage_the_budget_reaches() -> None:
    with pytest.raises(ConfigError, match="^replace_agent: 5 is not an agent of this 3-agent"):
        teamtr.train(easy_args(n_agents=None, replace_agent=5, total_episodes=512))
    with pytest.raises(ConfigError, match="^replace_at_stage: stage 4 is past the last one"):
        teamtr.train(easy_args(replace_agent=1, replace_at_stage=4, total_episodes=4 * 256))
    assert teamtr.train(easy_args(replace_agent=1, replace_at_stage=2, total_episodes=3 * 256 +
                                  128)).team.episodes == 3 * 256 + 128


@pytest.mark.parametrize(("field", "value"), [
    ("kl_coef", float("nan")), ("weight_decay", float("inf")), ("beta_growth", float("inf")),
    ("stage0_delta", float("inf")), ("max_grad_norm", float("nan")),
])
def test_a_setting_that_is_not_a_finite_number_is_refused(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=f"^{field}: expected a finite number"):
        teamtr.Args(**{field: value})


def test_beta_only_backtracking_needs_a_positive_kl_coef() -> None:
    with pytest.raises(ConfigError, match="^kl_coef: backtrack beta_only grows beta"):
        teamtr.Args(backtrack="beta_only", kl_coef=0.0)


@pytest.mark.parametrize(("field", "value"), [
    ("group_size", 1), ("total_episodes", 10), ("learning_rate", -1.0), ("delta", 0.0),
    ("kl_quantile", 1.5), ("n_agents", 9), ("order", "sideways"), ("beta_growth", 1.0),
    ("max_backtracks", -1), ("replace_agent", -2), ("stage0_delta", 0.0), ("seed", "one"),
    ("resume", True), ("delta_schedule", "linear"), ("update_epochs", 0),
])
def test_invalid_config_is_rejected_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^{field}: ") as error:
        teamtr.Args(**{field: value})
    assert error.value.field == field


def test_bad_env_settings_name_the_field() -> None:
    with pytest.raises(ConfigError, match="^env_id: "):
        build_team(teamtr.Args(env_id="team_envs/nothing-v0"))
    with pytest.raises(ConfigError, match="^env_kwargs: .*vocab_size"):
        build_team(teamtr.Args(env_kwargs={"vocab_size": 99}))
    with pytest.raises(ConfigError, match="^model: "):
        build_team(teamtr.Args(env_id="team_envs/countdown-v0"))


def test_stage0_aligns_a_newcomer_before_updates_resume() -> None:
    trained = teamtr.train(easy_args(n_agents=3, env_kwargs={"vocab_size": 3, "credit": "steps"},
                                     total_episodes=9000, seed=1))
    team, seed = trained.team, 12345
    incumbent = team.policies[1]
    reward_before = team.evaluate(1024, seed)
    newcomer = team.factory(1, {**incumbent.spec(), "hidden_size": 32, "seed": 99})
    team.policies[1] = newcomer
    reward_swapped = team.evaluate(1024, seed)
    team.policies[1] = incumbent
    batch = team.collect(64, 4)
    record = teamtr.stage0_align(newcomer, make_optimizer(newcomer, 1e-2, 0.0),
                                 batch.samples[1], delta0=0.01, max_steps=1000)
    team.replace(1, newcomer, beta=1e-3)
    reward_aligned = team.evaluate(1024, seed)
    assert reward_before > 0.75 and reward_swapped < reward_before - 0.3
    assert record["stage0/within_bound"] == 1.0 and record["stage0/kl"] <= 0.01
    assert reward_aligned > reward_before - 0.1


def test_replacement_mid_training_through_the_trainer() -> None:
    args = easy_args(n_agents=3, total_episodes=4 * 3 * 128 + 128, replace_agent=2,
                     replace_at_stage=2, replacement_hidden_size=16)
    result = teamtr.train(args)
    replaced = next(r for r in result.history if "stage0/kl" in r)
    assert replaced["stage"] == 2 and replaced["stage0/agent"] == 2
    assert result.team.policies[2].spec()["hidden_size"] == 16
    assert result.team.policies[0].spec()["hidden_size"] == 64
    assert result.team.episodes == 4 * 3 * 128 + 128
    assert [r["stage"] for r in result.history if r["stage"] >= 0][-2] == 3


def test_resume_after_replacement_rebuilds_the_newcomer(tmp_path) -> None:
    args = easy_args(n_agents=3, total_episodes=3 * 3 * 128 + 128, replace_agent=0,
                     replace_at_stage=1, replacement_hidden_size=8,
                     checkpoint_dir=str(tmp_path))
    full = teamtr.train(args)
    resumed = teamtr.train(dataclasses.replace(args, total_episodes=4 * 3 * 128 + 128,
                                               resume=True))
    assert resumed.team.policies[0].spec()["hidden_size"] == 8
    assert untimed(resumed.history[:len(full.history) - 1]) == untimed(full.history[:-1])


def test_advantages_are_broadcast_to_the_agents_messages() -> None:
    args = easy_args()
    team = build_team(args)
    batch = team.collect(8, 4)
    advantages = message_advantages(batch, 0, args.adv_clip, args.adv_std_ddof).numpy()
    groups = batch.groups[batch.samples[0].episode]
    for group in np.unique(groups):
        values = advantages[groups == group]
        assert abs(values.mean()) < 1e-5
        assert np.allclose(values, 0) or abs(values.std(ddof=1) - 1) < 1e-3


@pytest.mark.parametrize("folder", ["never_made", "empty"])
def test_resume_without_a_checkpoint_is_refused_naming_the_folder(tmp_path, folder: str) -> None:
    """A mistyped or empty checkpoint_dir started a fresh run, silently."""
    (tmp_path / "empty").mkdir()
    args = easy_args(total_episodes=256, checkpoint_dir=str(tmp_path / folder), resume=True)
    found = "does not exist" if folder == "never_made" else "holds no finished stage"
    with pytest.raises(ConfigError, match=f"^resume: checkpoint_dir '.*{folder}' {found}"):
        teamtr.train(args)
    assert not (tmp_path / "never_made").exists() and not any((tmp_path / "empty").iterdir())


@pytest.mark.parametrize(("env_id", "settings"), [
    ("team_envs/relay-v0", {"model": "smollm2"}), ("team_envs/relay-v0", {"lora_rank": 8}),
    ("team_envs/compositional-v0", {"temperature": 0.7}), ("team_envs/relay-v0", {"models": ["m"]}),
    ("team_envs/countdown-v0", {"hidden_size": 128, "model": "/no/such/model"}),
])
def test_a_setting_of_the_other_kind_of_policy_is_refused(env_id: str, settings: dict) -> None:
    """model= or lora_rank= on a symbolic team (hidden_size= on a text one) was ignored."""
    field = next(iter(settings))
    with pytest.raises(ConfigError, match=f"^{field}: {env_id} is a ") as error:
        build_team(teamtr.Args(env_id=env_id, **settings))
    assert error.value.field == field


def test_a_budget_below_one_stage_is_refused() -> None:
    """It trained nothing and reported the untrained team as the trained one (issue 30)."""
    args = teamtr.Args(env_id="team_envs/relay-v0", total_episodes=256, log_dir="")
    with pytest.raises(ConfigError, match="total_episodes: 256 is below one stage"):
        teamtr.train(args)


def test_each_stage_logs_its_time_per_phase() -> None:
    record = teamtr.train(easy_args(total_episodes=512)).history[1]
    phases = [record[f"time/{p}_s"] for p in ("rollout", "scoring", "update")]
    assert all(t >= 0 for t in phases) and record["time/rollout_s"] > 0
    assert sum(phases) <= record["time/stage_s"] + 1e-9
    assert "transcript" not in record and "charts/tokens_per_s" not in record  # symbolic


def test_an_accepted_update_returns_the_log_ratios_its_check_scored() -> None:
    args = easy_args(n_agents=2)
    team = build_team(args)
    batch = team.collect(args.prompts_per_rollout, args.group_size)
    policy, samples = team.policies[0], batch.samples[0]
    for delta, accepted in ((100.0, True), (1e-9, False)):
        result = trust_region_update(
            policy, team.optimizers[0], samples,
            message_advantages(batch, 0, args.adv_clip, args.adv_std_ddof),
            UpdateSettings.from_args(args), team.generator, delta=delta, beta=0.01,
            quantile=0.99, beta_growth=1.5, max_backtracks=1)
        assert result.accepted is accepted
        if accepted:
            assert torch.equal(result.log_ratios, message_log_ratios(policy, samples))
            assert result.log_ratios.abs().sum() > 0  # the policy did move
        else:
            assert result.log_ratios is None


def test_the_stale_gap_reuses_the_checks_scoring_with_the_same_figures(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stage's fresh surrogates, taken from the trust-region checks, equal those of scoring
    each accepted update again (one scoring pass fewer per agent), and the first agent's stale
    surrogate is its fresh one (the stage-start rollouts are its fresh rollouts)."""
    args = easy_args(n_agents=3, prompts_per_rollout=8, total_episodes=3 * 32, eval_every=1000,
                     eval_episodes=8)
    passes: list[int] = []
    scoring = SymbolicAgent._scored

    def counted(self, samples):
        passes[-1] += 1
        return scoring(self, samples)

    def rescoring(*call, **kwargs):
        return dataclasses.replace(trust_region_update(*call, **kwargs), log_ratios=None)

    monkeypatch.setattr(SymbolicAgent, "_scored", counted)
    runs = []
    for patch in (False, True):
        with monkeypatch.context() as context:
            if patch:
                context.setattr(teamtr, "trust_region_update", rescoring)
            passes.append(0)
            runs.append(teamtr.train(args).history[1])
    surrogates = [{k: v for k, v in run.items() if k.startswith("surrogate/")} for run in runs]
    assert surrogates[0] == surrogates[1] and len(surrogates[0]) == 7
    first = next(a for a in range(3) if runs[0][f"trust_region/agent_{a}/position"] == 0)
    assert surrogates[0][f"surrogate/agent_{first}/fresh"] == surrogates[0][
        f"surrogate/agent_{first}/stale"]
    assert all(runs[0][f"trust_region/agent_{a}/accepted"] for a in range(3))
    assert passes[1] - passes[0] == 3
