"""The YAML sweep format: validation errors, arms, interventions and expansion to runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from floor_tasks.harness.sweep_config import (
    SweepConfigError,
    expand,
    load_sweep,
    resolve_tasks,
)
from floor_tasks.task import TIERS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sweeps"
TIER_OF = {f"{tier}{i}": tier for tier in TIERS for i in range(1, 6)}  # A01.., A1.., .., E5
TASK_IDS = list(TIER_OF)
VARIANTS_OF = {t: ["v0", "v1"] + (["i1"] if t in ("A1", "B1") else []) for t in TASK_IDS}

MINIMAL = """
sweep_name: s
models:
  - name: m
    backend: {name: oracle}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return path


def load_text(tmp_path: Path, text: str):
    return load_sweep(write(tmp_path, text))


def test_defaults(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL)
    assert (config.tasks, config.variants, config.repeats) == ("all", ["v0"], 1)
    runs = expand(config, TASK_IDS, TIER_OF, VARIANTS_OF)
    assert [r.task_id for r in runs] == list(TASK_IDS)
    assert runs[0].settings.temperature == 0.0 and runs[0].settings.seed == 0
    assert runs[0].run_id == "m|A01|v0|0"


@pytest.mark.parametrize(
    "text,where",
    [
        ("sweep_name: s\nmodels:\n  - name: m\n", "models.0.backend: field required"),
        ("sweep_name: s\nmodels:\n  - name: m\n    backend: {model: x}\n",
         "models.0.backend.name: field required"),
        (MINIMAL + "repeats: 0\n", "repeats: input should be greater than or equal to 1"),
        (MINIMAL + "runs_per_combo: 3\n", "runs_per_combo: extra inputs are not permitted"),
        (MINIMAL + "tasks: tier:A,Z\n", "tasks: unknown tier(s) ['Z']"),
        (MINIMAL + "variants: v0\n", "variants: expected 'all' or a list"),
        (MINIMAL + "variants: [v0, v0]\n", "variants: duplicate variants: v0"),
        (MINIMAL.replace("name: m", "name: a|b"), "models.0.name: string should match"),
        (MINIMAL + "    thinking: maybe\n", "models.0.thinking: input should be a valid boolean"),
        (MINIMAL + "    backend_extra: 1\n", "models.0.backend_extra: extra inputs"),
        (MINIMAL + "  - name: m\n    backend: {name: oracle}\n", "duplicate model names: m"),
        (MINIMAL + "interventions:\n  - {name: x, max_steps_override: -1}\n",
         "interventions.0.max_steps_override: input should be greater than 0"),
        ("sweep_name: s\nmodels:\n  - name: m\n    backend: {name: openai, api_key: sk-1}\n",
         "models.0.backend: do not put api_key in a sweep file"),
    ],
)
def test_schema_errors_name_file_and_field(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(SweepConfigError) as info:
        load_text(tmp_path, text)
    assert str(tmp_path / "sweep.yaml") in str(info.value)
    assert where in str(info.value)


def test_yaml_and_shape_errors(tmp_path: Path) -> None:
    with pytest.raises(SweepConfigError, match=r"sweep.yaml:2: invalid YAML: expected ','"):
        load_text(tmp_path, "models: [unclosed\n")
    with pytest.raises(SweepConfigError, match="must be a YAML mapping"):
        load_text(tmp_path, "- just a list\n")
    with pytest.raises(SweepConfigError, match="cannot read"):
        load_sweep(tmp_path / "missing.yaml")


def test_unknown_tasks_and_variants_are_named(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL + "tasks: [A1, Z9, Q1]\n")
    with pytest.raises(SweepConfigError, match=r"sweep.yaml: tasks: unknown task id\(s\): Z9, Q1"):
        expand(config, TASK_IDS, TIER_OF, VARIANTS_OF)
    config = load_text(tmp_path, MINIMAL + "tasks: [A1, C33]\n")
    with pytest.raises(SweepConfigError, match=r"unknown task id\(s\): C33 \(did you mean C3\?\)"):
        expand(config, TASK_IDS, TIER_OF, VARIANTS_OF)
    config = load_text(tmp_path, MINIMAL + "tasks: [C1]\nvariants: [v0, i1, v9]\n")
    no_variant = r"variants: no selected task has variant\(s\) i1, v9; they have: v0, v1"
    with pytest.raises(SweepConfigError, match=no_variant):
        expand(config, TASK_IDS, TIER_OF, VARIANTS_OF)


def test_variants_apply_where_tasks_have_them(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL + "tasks: [A1, A2]\nvariants: [v0, i1]\nrepeats: 2\n")
    runs = expand(config, TASK_IDS, TIER_OF, VARIANTS_OF)
    assert [(r.task_id, r.variant, r.repeat) for r in runs] == [
        ("A1", "v0", 0), ("A1", "v0", 1), ("A1", "i1", 0), ("A1", "i1", 1),
        ("A2", "v0", 0), ("A2", "v0", 1),
    ]
    config = load_text(tmp_path, MINIMAL + "tasks: tier:B\nvariants: all\n")
    runs = expand(config, TASK_IDS, TIER_OF, VARIANTS_OF)
    assert len(runs) == 5 * 2 + 1


def test_resolve_tasks() -> None:
    assert resolve_tasks("tier:A0,E", TASK_IDS, TIER_OF) == [
        "A01", "A02", "A03", "A04", "A05", "E1", "E2", "E3", "E4", "E5"]
    assert resolve_tasks("C3", TASK_IDS, TIER_OF) == ["C3"]


INTERVENTIONS = """
sweep_name: ablation
tasks: [A1]
models:
  - name: small
    backend: {name: openai, model: s, base_url: "http://127.0.0.1:8000/v1"}
    params_b: 1.5
    price_in_per_mtok: 0.1
    price_out_per_mtok: 0.2
    max_tokens: 512
    extra: {top_k: 20, chat_template_kwargs: {foo: 1}}
  - name: big
    backend: {name: openai, model: b, base_url: "http://127.0.0.1:8000/v1"}
    system_prompt_suffix: " /no_think"
interventions:
  - name: think
    thinking: true
    max_tokens: 2048
    extra: {top_k: 50}
  - name: plain
"""


def test_interventions_multiply_models(tmp_path: Path) -> None:
    config = load_text(tmp_path, INTERVENTIONS)
    runs = expand(config, TASK_IDS, TIER_OF, VARIANTS_OF)
    by_slug = {r.model_slug: r for r in runs}
    assert list(by_slug) == ["small+think", "small+plain", "big+think", "big+plain"]
    think = by_slug["small+think"].settings
    assert think.max_tokens == 2048 and think.thinking is True
    assert think.run_settings().sampling.extra == {
        "top_k": 50, "chat_template_kwargs": {"foo": 1, "enable_thinking": True}}
    plain = by_slug["small+plain"].settings
    assert plain.max_tokens == 512
    assert plain.run_settings().sampling.extra == {"top_k": 20,
                                                   "chat_template_kwargs": {"foo": 1}}
    assert by_slug["big+think"].settings.system_prompt_suffix == " /no_think"
    assert by_slug["big+think"].settings.run_settings().system_prompt.endswith("\n /no_think")
    assert by_slug["big+plain"].backend == {"name": "openai", "model": "b",
                                            "base_url": "http://127.0.0.1:8000/v1"}
    assert config.price_table() == {
        slug: {"price_in_per_mtok": 0.1, "price_out_per_mtok": 0.2}
        for slug in ("small+think", "small+plain")
    }
    assert config.param_table() == {"small+think": 1.5, "small+plain": 1.5}


def test_run_specs_do_not_share_mutable_settings(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL + "tasks: [A1, A2]\n")
    first, second = expand(config, TASK_IDS, TIER_OF, VARIANTS_OF)
    first.settings.extra["x"] = 1
    assert second.settings.extra == {}


def test_example_sweeps_load_and_expand() -> None:
    smoke = load_sweep(EXAMPLES / "smoke.yaml")
    runs = expand(smoke, TASK_IDS, TIER_OF, VARIANTS_OF)
    assert [r.task_id for r in runs] == ["A1", "A2", "A3", "A4", "A5"]
    assert {r.backend["name"] for r in runs} == {"oracle"}
    local = load_sweep(EXAMPLES / "local_server.yaml")
    runs = expand(local, TASK_IDS, TIER_OF, VARIANTS_OF)
    assert len(runs) == 4 * 30 * 3
    assert all(r.backend["base_url"].startswith("http://127.0.0.1:") for r in runs)
    assert {r.settings.run_settings().sampling.extra["chat_template_kwargs"]["enable_thinking"]
            for r in runs} == {True, False}


def _laughs(indent: str, levels: int = 9) -> str:
    """A YAML "billion laughs": ``levels`` anchors, each a list of nine aliases of the last."""
    lines = [f"{indent}l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{indent}l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


HOSTILE = {  # the fuzzers' sweep files: text (or bytes), and what the one error line names
    "aliases in a backend": (
        MINIMAL.replace("{name: oracle}", "\n      name: oracle\n      junk:\n")
        + _laughs("        "),
        "sweep.yaml:14: models.0.backend.junk.l5.0: more than 100000 values, aliases expanded"),
    "aliases in a model's extra": (MINIMAL + "    extra:\n" + _laughs("      "),
                                   "sweep.yaml:12: models.0.extra.l5.0: more than 100000"),
    "aliases in an intervention's extra": (
        MINIMAL + "interventions:\n  - name: i\n    extra:\n" + _laughs("      "),
        "sweep.yaml:14: interventions.0.extra.l5.0: more than 100000 values"),
    "repeats": (MINIMAL + "repeats: 1000000000\n",
                "sweep.yaml:6: repeats: input should be less than or equal to 1000"),
    "a long name": (MINIMAL.replace("sweep_name: s", "sweep_name: " + "s" * 1_000_000),
                    "sweep.yaml:2: sweep_name: string should have at most 100 characters"),
    "a large file": (MINIMAL + "#" * (1 << 20), "sweep.yaml: larger than 1048576 bytes"),
    "nesting": (MINIMAL + "description: " + "[" * 100_000 + "]" * 100_000 + "\n",
                "sweep.yaml:6: description.0.0.0.0.0.0.0...: nested deeper than 64 levels"),
    "a long number": (MINIMAL + "repeats: " + "9" * 5000 + "\n",
                      "sweep.yaml:6: repeats: a number of 5000 characters (at most 300)"),
    "invalid UTF-8": (MINIMAL.encode() + b"description: \xff\n",
                      "sweep.yaml:6: not UTF-8 text (byte 76)"),
    "UTF-16": (MINIMAL.encode("utf-16"), "sweep.yaml:1: not UTF-8 text (byte 0)"),
    "a bad date": (MINIMAL + "description: 2026-13-45\n", "invalid YAML: month must be in 1..12"),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_sweep_file_is_one_line_exit_2_and_nothing_written(
        case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from agentworld_envs.cli import main

    content, expected = HOSTILE[case]
    path = tmp_path / "sweep.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.chdir(tmp_path)  # where results_dir "runs" would go
    assert main(["floor", "sweep", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"agentworld: error: {path}"), err[:300]
    assert expected in err and len(err) < 400, err[:300]
    assert list(tmp_path.iterdir()) == [path]


def test_aliases_within_the_bound_still_work(tmp_path: Path) -> None:
    config = load_text(tmp_path, MINIMAL + "    extra: &shared {top_k: 5, stop: [x]}\n"
                       "interventions:\n  - {name: i, extra: *shared}\n")
    assert config.arms()[0].settings.extra == {"top_k": 5, "stop": ["x"]}


def test_a_schema_error_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    """The README promises ``file:line: field.path: problem``; schema errors had no line."""
    config = tmp_path / "sweep.yaml"
    config.write_text(MINIMAL + "  - name: n\n    backend: {name: oracle}\n    extra: [1]\n")
    from agentworld_envs.cli import main

    assert main(["floor", "sweep", str(config)]) == 2
    assert f"{config}:8: models.1.extra: " in capsys.readouterr().err
