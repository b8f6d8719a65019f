"""A LoRA team's damaged adapter checkpoint is one error, before any agent changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from trainers import teamtr
from trainers.common.args import ConfigError
from trainers.common.checkpoint import load_checkpoint
from trainers.common.team import build_team

pytest.importorskip("peft")


def _args(tiny_lm_dir: Path, directory: Path) -> teamtr.Args:
    return teamtr.Args(env_id="team_envs/countdown-v0", n_agents=2, model=str(tiny_lm_dir),
                       lora_rank=4, max_new_tokens=3, prompts_per_rollout=2, group_size=2,
                       total_episodes=8, eval_episodes=2, log_dir="", delta=1e3,
                       learning_rate=1e-2, checkpoint_dir=str(directory))


def _stop(stage: int, team, record: dict) -> None:
    raise KeyboardInterrupt


def test_a_cut_adapter_file_is_one_error_and_changes_no_agent(tiny_lm_dir: Path,
                                                              tmp_path: Path) -> None:
    """agent_0's adapter was loaded before agent_1's cut file raised safetensors' own error."""
    directory = tmp_path / "checkpoint"
    args = _args(tiny_lm_dir, directory)
    with pytest.raises(KeyboardInterrupt):
        teamtr.train(args, on_stage_end=_stop)
    stage = next(directory.glob("stage_*"))
    weights = stage / "agent_1" / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:weights.stat().st_size // 2])
    team = build_team(args)
    before = {n: p.detach().clone() for n, p in team.policies[0].module.named_parameters()}
    with pytest.raises(ConfigError, match=f"^resume: .*{stage.name}/agent_1/adapter_model"
                                          r"\.safetensors is cut short"):
        load_checkpoint(directory, team)
    after = dict(team.policies[0].module.named_parameters())
    assert all(torch.equal(value, after[name]) for name, value in before.items())
    shutil.rmtree(stage / "agent_1")
    with pytest.raises(ConfigError, match=f"{stage.name}/agent_1 holds no adapter"):
        load_checkpoint(directory, team)
