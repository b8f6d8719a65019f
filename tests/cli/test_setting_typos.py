"""A typo in a setting, a flag or a name is one line that names it as the user wrote it and
says what is allowed. Before, an AgentWorld env setting gave pydantic's dump ("1 validation
error for SimConfig; ...; For further information visit ..."), ``scenarios="generatd"`` two
errors, one about a ``list[union[...]]``; ``floor run --max-steps 0`` named the internal field
``models.0.max_steps_override``; ``--tasks a1`` suggested E1, D1 and C1 but not A1; and
``--variants V0`` did not say which variants there are."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.cli import main
from agentworld_envs.cli_errors import UsageError
from floor_tasks.harness.sweep_config import SweepConfigError, resolve_tasks

MCP = "AgentWorld/MCP-v0"
SCENARIOS = ("AgentWorld env setting scenarios: must be 'builtin', 'generated', or a list of "
             "scenario ids, dicts or Scenario objects, got ")


def refusal(**settings: object) -> str:
    """What ``gym.make`` of the MCP env with ``settings`` raises, as a ValueError."""
    with pytest.raises(ValueError) as refused:
        gym.make(MCP, backend="scripted", **settings)
    assert isinstance(refused.value, UsageError)  # the console script's one line, exit 2
    return str(refused.value)


def cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``agentworld`` prints for ``argv``, which it refuses (exit status 2)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("agentworld: error: "), err
    return err.removeprefix("agentworld: error: ").rstrip("\n")


def test_an_unknown_env_setting_names_the_nearest_and_the_known_ones() -> None:
    message = refusal(scenario="generated")
    assert message.startswith("unknown AgentWorld env setting(s) ['scenario'] (did you mean "
                              "'scenarios'?); known: ['backend', 'controls', ")
    assert "'mode'" in message and "pydantic" not in message and "\n" not in message


def test_an_unknown_setting_in_another_case_suggests_the_known_one() -> None:
    assert "(did you mean 'mode'?)" in refusal(Mode="real")


@pytest.mark.parametrize(("settings", "message"), [
    ({"mode": "reel"},
     "AgentWorld env setting mode: must be 'simulated', 'hybrid' or 'real', got 'reel'"),
    ({"scenarios": "generatd"}, f"{SCENARIOS}'generatd'"),
    ({"scenarios": [3]}, f"{SCENARIOS}[3]"),
    ({"judge_backend": 3}, "AgentWorld env setting judge_backend: must be a backend name, a "
                           "backend config dict or a Backend, or None, got 3"),
    ({"controls": [{"kind": "tool_error", "probability": 1.5}]},
     "AgentWorld env setting controls[0].probability: must be at most 1, got 1.5"),
    ({"max_observation_chars": 3},
     "AgentWorld env setting max_observation_chars: must be at least 64, got 3"),
])
def test_a_bad_value_is_one_line_with_its_setting_what_was_given_and_what_is_allowed(
        settings: dict[str, object], message: str) -> None:
    assert refusal(**settings) == message


def test_the_vector_env_refuses_a_typo_the_same_way() -> None:
    with pytest.raises(ValueError, match=r"^unknown AgentWorld env setting\(s\) \['scenario'\]"):
        gym.make_vec(MCP, num_envs=2, backend="scripted", scenario="generated")


@pytest.mark.parametrize(("kw", "message"), [
    ("scenario=generated", "unknown AgentWorld env setting(s) ['scenario'] (did you mean "
                           "'scenarios'?); known: "),
    ("scenarios=generatd", f"{SCENARIOS}'generatd'"),
])
def test_serve_refuses_a_kw_typo_in_one_line(kw: str, message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_error(["serve", MCP, "--backend", "scripted", "--kw", kw], capsys)
    assert err.startswith(message) and "list[union" not in err and "pydantic" not in err


@pytest.mark.parametrize(("flags", "message"), [
    (["--max-steps", "0"], "--max-steps: must be greater than 0, got 0"),
    (["--max-tokens", "0"], "--max-tokens: must be greater than 0, got 0"),
    (["--repeats", "0"], "--repeats: must be at least 1, got 0"),
    (["--name", "a/b"], "--name: string should match pattern "
                        "'^[A-Za-z0-9][A-Za-z0-9._:@-]*$', got 'a/b'"),  # once, for 2 fields
    (["--max-steps", "0", "--max-tokens", "-1"],
     "--max-steps: must be greater than 0, got 0; --max-tokens: must be greater than 0, got -1"),
])
def test_floor_run_names_the_flag_as_typed(flags: list[str], message: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["floor", "run", "--tasks", "A1", "--out", str(tmp_path / "runs"), *flags]
    assert cli_error(argv, capsys) == message


def test_a_task_id_in_the_wrong_case_suggests_the_task_first(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_error(["floor", "run", "--tasks", "a1"], capsys)
    assert "unknown task id 'a1'; did you mean 'A1' or " in err


def test_a_sweep_task_id_in_the_wrong_case_suggests_the_task() -> None:
    with pytest.raises(SweepConfigError, match=r"^unknown task id\(s\): a1 \(did you mean A1\?\)$"):
        resolve_tasks(["a1"], ["A01", "A1", "E1"], {})


def test_a_variant_in_the_wrong_case_is_named_with_the_variants_there_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    err = cli_error(["floor", "run", "--tasks", "A1", "--variants", "V0", "--out", str(out)],
                    capsys)
    assert err == ("variants: no selected task has variant(s) V0 (did you mean v0?); they have: "
                   "v0, v1, v2, v3, v4, i1, i2, i3, i4")
    assert not out.exists()
