"""A team trainer's seed outside what numpy and torch take is one line and exit status 2."""

from __future__ import annotations

import pytest

from agentworld_envs.cli import main
from trainers import teamtr
from trainers.common.args import ConfigError


@pytest.mark.parametrize("seed", ["-1", str(2**64 - 1)])
def test_a_seed_out_of_range_is_one_line_and_exit_2(seed: str, capsys) -> None:
    """Before: numpy's "expected non-negative integer" or torch's "Overflow when unpacking long
    long", with a traceback, once the team was being built."""
    status = main(["team", "train", "teamtr", "--seed", seed, "--log-dir", ""])
    err = capsys.readouterr().err
    assert status == 2
    assert err == f"agentworld: error: seed: must be from 0 to 2**32 - 1, got {seed}\n"


def test_the_largest_seed_trains() -> None:
    args = teamtr.Args(seed=2**32 - 1, n_agents=2, prompts_per_rollout=8, total_episodes=64,
                       eval_episodes=8, log_dir="", gain_eval_episodes=8)
    assert teamtr.train(args).team.episodes == 64
    with pytest.raises(ConfigError, match="^seed: "):
        teamtr.Args(seed=2**32)


@pytest.mark.parametrize(("env_id", "flags", "field", "kind"), [
    ("team_envs/relay-v0", ["--replace-agent", "1", "--replacement-model", "smollm2",
                            "--total-episodes", "96", "--prompts-per-rollout", "8",
                            "--eval-episodes", "8"],
     "replacement_model", "a symbolic team"),
    ("team_envs/countdown-v0", ["--model", "/no/such/model", "--replace-agent", "1",
                                "--replacement-hidden-size", "8"],
     "replacement_hidden_size", "a text team"),
])
def test_a_replacement_setting_of_the_other_kind_of_policy_is_refused(
        env_id: str, flags: list[str], field: str, kind: str, capsys) -> None:
    """Before: ignored; the run trained to its end without the replacement asked for."""
    status = main(["team", "train", "teamtr", "--env-id", env_id, "--log-dir", "", *flags])
    assert status == 2
    assert capsys.readouterr().err.startswith(f"agentworld: error: {field}: {env_id} is {kind}")


@pytest.mark.parametrize(("device", "says"), [
    ("gpu", "'gpu' is not a torch device"),
    ("cuda:64", "cuda:64 is not on this machine"),
])
def test_a_device_torch_cannot_use_is_one_line_and_exit_2(device: str, says: str,
                                                         capsys) -> None:
    """Before: torch's RuntimeError (or "Torch not compiled with CUDA enabled") with a
    traceback, after the models were loaded."""
    status = main(["team", "train", "joint", "--env-id", "team_envs/countdown-v0", "--model",
                   "/no/such/model", "--device", device, "--log-dir", ""])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err.startswith(f"agentworld: error: device: {says}")


def test_a_team_size_given_twice_must_agree(capsys) -> None:
    """Before: --n-agents silently replaced env_kwargs' n_agents (a 3-agent team trained)."""
    status = main(["team", "train", "teamtr", "--n-agents", "3", "--env-kwargs",
                   '{"n_agents": 4}', "--total-episodes", "96", "--prompts-per-rollout", "8",
                   "--eval-episodes", "8", "--log-dir", ""])
    assert status == 2
    assert capsys.readouterr().err == ("agentworld: error: n_agents: 3 agents, but env_kwargs "
                                       "asks for 4: give the team size once\n")
    same = teamtr.Args(n_agents=3, env_kwargs={"n_agents": 3}, prompts_per_rollout=8,
                       total_episodes=96, eval_episodes=8, log_dir="")
    assert teamtr.train(same).team.n_agents == 3


@pytest.mark.parametrize(("flag", "model", "says"), [
    ("--model", "/no/such/model", "model: model '/no/such/model' is no folder"),
    ("--models", "/no/such/a,/no/such/a", "models: model '/no/such/a' is no folder"),
])
def test_a_model_that_cannot_load_is_one_line_and_exit_2(flag: str, model: str, says: str,
                                                        capsys) -> None:
    """Before: exit 1 with Hugging Face's "Repo id must be in the form ..." traceback."""
    status = main(["team", "train", "joint", "--env-id", "team_envs/countdown-v0",
                   "--n-agents", "2", flag, model, "--log-dir", ""])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err.startswith(f"agentworld: error: {says}")
