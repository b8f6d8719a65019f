"""What a new user's walkthrough met: ``examples/ray_rollouts.py`` on one group of sub-envs
(it exited 2 on a ``--num-actors 2`` the user never set) and its ``--help`` without defaults;
``wm sft --max_steps 0``, which trained a step; and a TeamTR budget below one stage, refused
only once the team's models had loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample
from agentworld_envs.cli import main, run_command
from tests.helpers.examples import load_example
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - a local Ray runtime, 2 CPUs


def test_ray_rollouts_help_shows_the_defaults(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    example = load_example("ray_rollouts", monkeypatch)
    with pytest.raises(SystemExit) as done:
        example.main(["--help"])
    assert done.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    for said in ("id (default: AgentWorld/MCP-v0)", "only) (default: scripted)",
                 "sub-envs in all (default: 16)", "one seed (default: 4)",
                 "episodes per sub-env (default: 2)", "random policy (default: 0)",
                 "Ray actors; unset: one per CPU of the Ray cluster, at most one per group"):
        assert said in shown, shown


def test_ray_rollouts_on_one_group_takes_the_librarys_actor_count(
        ray_runtime: Any, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    """The walkthrough's command: 4 sub-envs are one group of 4, so one actor."""
    example = load_example("ray_rollouts", monkeypatch)
    built = []

    class Recorded(example.RayVectorEnv):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(example, "RayVectorEnv", Recorded)
    assert run_command(lambda: example.main(
        ["--num-envs", "4", "--rounds", "1", "--env-id", "AgentFloor/B3-v0"])) == 0, (
        capsys.readouterr().err)
    assert [len(envs.blocks) for envs in built] == [1]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("round 0 group 0: rewards "), lines


@pytest.mark.parametrize("steps", ["0", "-2"])
def test_wm_sft_refuses_a_max_steps_that_means_no_steps_before_building_a_model(
        steps: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before, ``--max_steps 0`` trained one step of a from-scratch model and exited 0."""
    pytest.importorskip("trl")
    from trainers.world_model import sft

    def built(*_: Any, **__: Any) -> None:
        raise AssertionError("a tokenizer or model was built")

    monkeypatch.setattr(sft, "prepare_tokenizer", built)
    monkeypatch.setattr(sft, "prepare_model", built)
    train = write_items([i for i in load_sample() if i.task == "floor"][:2],
                        tmp_path / "train.jsonl")
    out = tmp_path / "out"
    assert main(["wm", "sft", "--train", str(train), "--max_steps", steps, "--output_dir",
                 str(out), "--threads", "1", "--report_to", "none"]) == 2
    assert capsys.readouterr().err == (f"agentworld: error: max_steps: must be at least 1, or "
                                       f"-1 for num_train_epochs to decide, not {steps}\n")
    assert not out.exists()


@pytest.mark.parametrize(("team", "total", "stage"), [
    (["--n-agents", "2"], "4", "8"),
    ([], "8", "12"),  # the env's default team of 3
])
def test_teamtr_refuses_a_budget_below_one_stage_before_any_model_loads(
        team: list[str], total: str, stage: str, tiny_lm_dir: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, the refusal came once every agent's model had loaded."""
    pytest.importorskip("torch")
    from trainers.policies import lm

    def loaded(*_: Any, **__: Any) -> None:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(lm, "CausalLMPolicy", loaded)
    assert main(["team", "train", "teamtr", "--env-id", "team_envs/arithmetic_chain-v0", *team,
                 "--model", str(tiny_lm_dir), "--lora-rank", "4", "--prompts-per-rollout", "1",
                 "--group-size", "4", "--total-episodes", total, "--log-dir", ""]) == 2
    assert capsys.readouterr().err == (
        f"agentworld: error: total_episodes: {total} is below one stage ({stage} rollout "
        f"episodes with these settings): nothing would train\n")
