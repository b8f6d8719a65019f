"""The bench scores as AgentWorldBench's evaluation does: its judge-output parser, its output
parser, its judge messages (byte for byte) and its aggregation, on hand-made data.

The prompt directory here is our own, in the release's layout; none of the release's texts.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentworld_envs.backends import Backend, ChatRequest, Completion, register_backend
from agentworld_envs.bench.cli import add_commands
from agentworld_envs.bench.items import BenchItem, item_from_dict, write_items
from agentworld_envs.bench.judge import JudgePrompts, judge_request
from agentworld_envs.bench.judge_parser import JudgeParseError, parse_judge_output
from agentworld_envs.bench.report import MACRO_LABEL, WEIGHTED_LABEL
from agentworld_envs.bench.run import run_bench
from agentworld_envs.world.parsing import clean_response_marker, parse_model_output
from agentworld_envs.world.prompt_sets import PromptSetError

FIVE = {"format": 5, "factuality": 4, "consistency": 3, "realism": 2, "quality": 1}


def final(scores: object, wrap: str = "```json\n{}\n```") -> str:
    return "<final_evaluation>\n" + wrap.format(json.dumps({"scores": scores})) + \
        "\n</final_evaluation>"


def read(text: str) -> dict[str, int]:
    return parse_judge_output(text).scores


# --- the judge-output parser (judge_parser.parse_judge_output), one case per rule ----------

def test_empty_reply_fails() -> None:
    with pytest.raises(JudgeParseError, match="empty"):
        parse_judge_output("  \n")


def test_reasoning_is_stripped_with_its_fake_verdict() -> None:
    assert read("<think>draft " + final({"format": 1}) + "</think>" + final(FIVE)) == FIVE


def test_an_orphan_think_stops_at_final_evaluation() -> None:
    assert read("<think>still thinking " + final(FIVE)) == FIVE


def test_the_last_final_evaluation_block_is_read() -> None:
    assert read(final({"format": 1}) + " then " + final(FIVE)) == FIVE


def test_an_unclosed_final_evaluation_runs_to_the_end() -> None:
    assert read('<final_evaluation>{"scores": {"format": 3}}')["format"] == 3


def test_without_the_tag_the_whole_text_is_read() -> None:
    assert read("verdict: " + json.dumps({"scores": FIVE})) == FIVE


def test_the_last_fenced_block_with_scores_wins_over_a_later_fence_and_bare_object() -> None:
    text = ("```json\n" + json.dumps({"scores": FIVE}) + "\n```\n```json\n{\"note\": 1}\n```\n"
            + json.dumps({"scores": {"format": 1}}))
    assert read(text) == FIVE


def test_the_last_fenced_block_is_taken_even_without_scores() -> None:
    text = json.dumps({"scores": FIVE}) + "\n```json\n{\"scores_\": 1}\n```"
    with pytest.raises(JudgeParseError, match="no scores object"):
        parse_judge_output(text)


def test_the_last_brace_matched_object_with_scores_wins_over_a_later_object() -> None:
    assert read(json.dumps({"scores": FIVE}) + ' and {"summary": "fine"}') == FIVE


def test_without_any_scores_the_last_object_is_taken_and_fails() -> None:
    with pytest.raises(JudgeParseError, match="no scores object"):
        parse_judge_output('{"a": 1} {"b": 2}')


def test_an_unbalanced_brace_falls_back_to_the_backward_match() -> None:
    assert read("a stray { brace, then " + json.dumps({"scores": FIVE})) == FIVE


@pytest.mark.parametrize("broken", [
    '{"scores": {"format": 5, "factuality": 4, "consistency": 3, "realism": 2, "quality": 1,},}',
    "{'scores': {'format': 5, 'factuality': 4, 'consistency': 3, 'realism': 2, 'quality': 1}}",
    "{scores: {format: 5, factuality: 4, consistency: 3, realism: 2, quality: 1}}",
], ids=["trailing_commas", "single_quoted_keys", "bare_keys"])
def test_repairs(broken: str) -> None:
    assert read(broken) == FIVE


def test_the_scores_object_is_salvaged_from_broken_json() -> None:
    text = '{"strengths": [oops], "scores": ' + json.dumps(FIVE) + "}"
    assert read(text) == FIVE


def test_flat_scores_fail() -> None:
    with pytest.raises(JudgeParseError, match="no scores object"):
        parse_judge_output(json.dumps(FIVE))


def test_scores_that_are_not_an_object_fail() -> None:
    with pytest.raises(JudgeParseError, match="no scores object"):
        parse_judge_output('{"scores": 4}')


def test_no_json_at_all_fails() -> None:
    with pytest.raises(JudgeParseError, match="no JSON object"):
        parse_judge_output("format 5, factuality 4")


@pytest.mark.parametrize(("value", "score"), [
    (4, 4), (True, 1), (2.5, 2), (3.5, 4), (4.5, 4), (3.4, 3), ("4/5", 4), ("4 / 5", 4),
    ("4.5", 0), ("N/A", 0), (None, 0), ([4], 0), (6, 5), (0, 0), (-1, -1),
], ids=["int", "true", "2.5", "3.5", "4.5", "3.4", "4/5", "4 / 5", "str_float", "n/a", "null",
        "list", "clamped", "zero", "negative"])
def test_a_dimension_value_is_read_as_the_release_reads_it(value: object, score: int) -> None:
    assert read(final({**FIVE, "format": value}))["format"] == score


def test_a_missing_dimension_is_left_out_of_the_total() -> None:
    verdict = parse_judge_output(final({"format": 5, "factuality": 4, "consistency": 3}))
    assert verdict.scores["realism"] == verdict.scores["quality"] == 0 and verdict.total == 4.0


def test_zero_and_negative_dimensions_are_left_out_of_the_total() -> None:
    assert parse_judge_output(final({**FIVE, "realism": -1, "quality": 0})).total == 4.0


def test_an_empty_scores_object_is_a_success_with_total_zero() -> None:
    verdict = parse_judge_output(final({}))
    assert verdict.total == 0.0 and set(verdict.scores.values()) == {0}


def test_a_string_strengths_becomes_a_list() -> None:
    verdict = parse_judge_output(json.dumps({"strengths": "tidy", "scores": FIVE}))
    assert verdict.strengths == ["tidy"] and verdict.weaknesses == []


# --- the world-model output parser and the marker (output_parser.py) ----------------------

@pytest.mark.parametrize(("raw", "expected"), [
    ("", "No output"),
    ("<think>only thinking</think>", "No output"),
    ("<predicted_observation></predicted_observation>", ""),
    ("<predicted_observation>a</predicted_observation><PREDICTED_OBSERVATION>b", "b"),
    ("<predicted_observation >a</predicted_observation>", "<predicted_observation >a"
     "</predicted_observation>"),
    ("<think>x <predicted_observation>fake</think> <predicted_observation> real \n", "real"),
    ("half a thought</think>screen", "screen"),
    ("<think>a<think>b</think><predicted_observation>seen</predicted_observation>", "seen"),
    ("<think>A <predicted_observation>X <think>B </think> C", "No output"),  # not "X  C"
], ids=["empty", "blank", "empty_block", "last_open", "spaced_tag", "fake_tag", "orphan_close",
        "orphan_open", "fifo_pairs"])
def test_prediction_as_the_release_parses_it(raw: str, expected: str) -> None:
    assert parse_model_output(raw) == expected


def test_marker_cut_when_leading_else_removed_everywhere() -> None:
    marker = "**Environment Observation:**"
    assert clean_response_marker(f"\n{marker}\nok {marker}\n") == f"ok {marker}"
    assert clean_response_marker(f"a {marker} b {marker}") == "a  b"


# --- the judge request ---------------------------------------------------------------------

def prompt_dir(root: Path, instructions: bool = True) -> Path:
    for domain in ("mcp", "search"):
        (root / domain).mkdir(parents=True)
        (root / domain / "system_prompt.txt").write_text(f"WM {domain}\n")
        (root / domain / "judge_system_prompt.txt").write_text(f"Judge {domain} fairly.\n")
    if instructions:
        (root / "judge_user_instructions.txt").write_text("Give <final_evaluation>.\n")
    return root


def bench_item(task: str, ident: int, turn: int = 1) -> BenchItem:
    prompts = [f'### Turn {k}\n**Action:**\n```json\n{{\n  "id": "{task}{ident}.{k}"\n}}\n```'
               for k in range(1, turn + 1)]
    return item_from_dict({
        "task": f"agentworld/{task}", "id": ident, "prompt": prompts,
        "response": [f"**Environment Observation:**\nresult {k}" for k in range(1, turn + 1)],
        "current_prompt": prompts[-1], "system_str": "WM", "turn_idx": turn,
        "total_turns": turn})


def test_judge_request_is_built_byte_for_byte(tmp_path: Path) -> None:
    prompts = JudgePrompts.load(str(prompt_dir(tmp_path)))
    item = item_from_dict({
        "task": "mcp", "id": 7,
        "prompt": ["### Turn 1\n**Action:**\nA1", "### Turn 2\n**Action:**\nA2"],
        "response": ["**Environment Observation:**\nO1", "**Environment Observation:**\nO2\n"],
        "current_prompt": "### Turn 2\n**Action:**\nA2", "system_str": "S", "turn_idx": 2,
        "total_turns": 2})
    request = judge_request(item, "<think>hm</think>\n<predicted_observation>\n"
                            "**Environment Observation:**\nP2\n</predicted_observation>", prompts)
    assert request.messages == [
        {"role": "system", "content": "Judge mcp fairly.\n"},
        {"role": "user", "content":
            "# Context (Historical Interactions):\n\n"
            "### Turn 1\n**Action:**\nA1\n**Environment Observation:**\nO1\n\n\n\n"
            "# Current Turn:\n\n### Turn 2\n**Action:**\nA2\n\n"
            "**World Model Output (Simulated):**\n```\nP2\n```\n\n"
            "**Ground Truth (Real Output):**\n```\nO2\n```\n\n"
            "Give <final_evaluation>."}]
    assert (request.sampling.max_tokens, request.sampling.temperature) == (32768, 0.6)
    assert request.sampling.seed is None
    first = judge_request(bench_item("mcp", 0), "", prompts).messages[1]["content"]
    assert first.startswith("# Current Turn:\n\n### Turn 1") and "```\nNo output\n```" in first


def test_judge_system_prompt_of_an_unknown_domain_is_empty(tmp_path: Path) -> None:
    prompts = JudgePrompts.load(prompt_dir(tmp_path))
    assert judge_request(bench_item("floor", 0), "x", prompts).messages[0]["content"] == ""


def test_a_prompt_directory_needs_the_judge_instructions(tmp_path: Path) -> None:
    with pytest.raises(PromptSetError, match="judge_user_instructions.txt"):
        JudgePrompts.load(prompt_dir(tmp_path, instructions=False))


TEMPLATE = ('''"""Judge prompts (our own text, in the release's layout)."""
from pathlib import Path
Path(__file__).with_name("EXECUTED").write_text("yes")  # reading must not run this
SCORE_DIMENSIONS = ["format"]
JUDGE_USER_PROMPT = """{context}

{world_model_input}

{predicted_observation}

{ground_truth}

Score it. Example: {{"scores": {{"format": 5}}}}
"""
OTHER_PROMPT = """{context}\n\nnot this one"""
''')


def checkout(root: Path, template: str = TEMPLATE) -> Path:
    """A directory shaped like a Qwen-AgentWorld checkout: prompts/ and eval/'s task_configs."""
    prompt_dir(root / "prompts", instructions=False)
    configs = root / "eval" / "lwm_eval_utils" / "task_configs.py"
    configs.parent.mkdir(parents=True)
    configs.write_text(template)
    return root


@pytest.mark.parametrize("where", ["checkout", "its prompts folder"])
def test_a_checkout_gives_the_instructions_from_its_task_configs_unexecuted(
        tmp_path: Path, where: str) -> None:
    root = checkout(tmp_path)
    prompts = JudgePrompts.load(root if where == "checkout" else root / "prompts")
    assert prompts.instructions == 'Score it. Example: {"scores": {"format": 5}}'
    assert prompts.source.endswith("task_configs.py (JUDGE_USER_PROMPT)")
    user = judge_request(bench_item("mcp", 0), "x", prompts).messages[1]["content"]
    assert user.endswith('```\n\nScore it. Example: {"scores": {"format": 5}}')
    assert prompts.system("mcp") == "Judge mcp fairly.\n"
    assert not (root / "eval" / "lwm_eval_utils" / "EXECUTED").exists()


def test_a_separate_instructions_file_wins_over_the_checkouts_template(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    (root / "prompts" / "judge_user_instructions.txt").write_text("Mine.")
    prompts = JudgePrompts.load(root)
    assert (prompts.instructions, prompts.source) == (
        "Mine.", str((root / "prompts" / "judge_user_instructions.txt").resolve()))


@pytest.mark.parametrize(("template", "message"), [
    ("JUDGE_USER_PROMPT = '{context} and no ground truth'", "does not end with"),
    ("JUDGE_USER_PROMPT = '{ground_truth}\\n\\nx {later}'", "does not end with"),
    ("JUDGE_USER_PROMPT = '{ground_truth}\\nno blank line'", "blank line"),
    ("JUDGE_USER_PROMPT = f'{1}'", "assigns no string"),
    ("def broken(:", "cannot read"),
])
def test_a_checkout_whose_template_is_not_the_releases_layout_is_refused(
        tmp_path: Path, template: str, message: str) -> None:
    with pytest.raises(PromptSetError, match=message):
        JudgePrompts.load(checkout(tmp_path, template))


def test_wm_bench_says_which_instructions_it_used_and_names_a_renamed_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentworld_envs.cli import main

    argv = ["wm", "bench", "SAMPLE", "--backend", "scripted", "--judge", "scripted"]
    # the scripted judge's verdicts are unreadable: status 1, after saying what it used
    assert main([*argv, "--prompts", str(checkout(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert f"judge instructions: {tmp_path.resolve()}" in out and "(JUDGE_USER_PROMPT)" in out
    assert main([*argv, "--retries", "3"]) == 2
    err = capsys.readouterr().err
    assert err == "agentworld: error: --retries was renamed --max-retries; pass --max-retries " \
                  "instead\n"


def test_the_builtin_set_uses_our_wording_in_the_same_layout() -> None:
    request = judge_request(bench_item("mcp", 0), "x", JudgePrompts.load("builtin"))
    assert "five dimensions" in request.messages[0]["content"]
    user = request.messages[1]["content"]
    assert user.startswith("# Current Turn:\n\n") and "<final_evaluation>" in user


# --- a whole bench run, figures computed by hand ------------------------------------------

VERDICTS: dict[str, list[str]] = {
    "mcp0.1": [final(dict.fromkeys(FIVE, 5))],
    "mcp1.2": [final({"format": 4, "factuality": "3/5", "consistency": 3, "realism": 4})],
    "mcp2.1": [final({})],
    "search0.1": [final({"format": 2, "factuality": -1, "consistency": 3, "realism": 3,
                         "quality": 3})],
    "search1.1": ["I cannot decide."] * 3,
    "search2.1": ["garbled", final({"format": 4.5, "factuality": 4, "consistency": 4,
                                    "realism": 4, "quality": 6})],
    "search3.1": [final(dict.fromkeys(FIVE, 3))],
}


class ScriptedJudge(Backend):
    """Answers each item's judge requests with its next scripted reply (keyed by the action id
    in the current turn); records every request."""

    name = "compat_test_judge"

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.systems: set[tuple[str, str]] = set()

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        replies = []
        for request in requests:
            current = request.messages[1]["content"].split("# Current Turn:")[1]
            key = current.split('"id": "')[1].split('"')[0]
            replies.append(Completion(text=VERDICTS[key][self.asked.count(key)]))
            self.asked.append(key)
            self.systems.add((key.rstrip("0123456789."), request.messages[0]["content"]))
        return replies


JUDGES: list[ScriptedJudge] = []
register_backend("compat_test_judge", lambda: JUDGES.append(ScriptedJudge()) or JUDGES[-1])


def hand_made_bench() -> tuple[list[BenchItem], list[str]]:
    items = [bench_item("mcp", 0), bench_item("mcp", 1, turn=2), bench_item("mcp", 2),
             bench_item("mcp", 3)] + [bench_item("search", i) for i in range(4)]
    tagged = "<predicted_observation>result</predicted_observation>"
    return items, [tagged, tagged, tagged, "", tagged, tagged, tagged, "unclosed"]


def test_bench_run_on_hand_made_items_gives_the_hand_computed_figures(tmp_path: Path,
                                                                      capsys) -> None:
    """Figures by the release's rules (normalise(x) = (x - 1) / 4 * 100; failed samples out;
    every mean drops zeros, keeps negatives).

    mcp: m0 all 5 -> 5; m1 format 4, factuality "3/5" = 3, consistency 3, realism 4, quality
    missing -> (4+3+3+4)/4 = 3.5; m2 {} -> 0 (valid, dropped from means); m3 no generation
    (failed). Total mean (5+3.5)/2 = 4.25 -> 81.25. format (5+4)/2 = 4.5 -> 87.5; quality 5
    (m1's missing one dropped) -> 100.
    search: s0 2, -1, 3, 3, 3 -> (2+3+3+3)/4 = 2.75; s1 unreadable 3 times (failed); s2
    second attempt, 4.5 -> 4 (half to even), 6 -> 5: (4+4+4+4+5)/5 = 4.2; s3 all 3 -> 3.
    Total mean (2.75+4.2+3)/3 = 3.31667 -> 57.9167. factuality (-1+4+3)/3 = 2 -> 25.
    Overall sample-weighted: (5+3.5+2.75+4.2+3)/5 = 3.69 -> 67.25.
    Overall macro: (81.25 + 57.9167)/2 = 69.5833.
    Weighted factuality: (5+3-1+4+3)/5 = 2.8 -> 45.
    """
    items, outputs = hand_made_bench()
    folder = tmp_path / "items"
    write_items(items[:4], folder / "mcp_test.jsonl")
    write_items(items[4:], folder / "search_test.jsonl")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"key": i.key, "output": o}) + "\n"
                                   for i, o in zip(items, outputs, strict=True)))
    parser = argparse.ArgumentParser()
    add_commands(parser)
    args = parser.parse_args(["bench", str(folder), "--predictions", str(predictions),
                              "--judge", "compat_test_judge", "--prompts",
                              str(prompt_dir(tmp_path / "prompts")), "--out",
                              str(tmp_path / "out")])
    from agentworld_envs.backends.faults import TooManyFaultsError

    # the one unreadable verdict ends the run, after the table (the console script: status 1)
    with pytest.raises(TooManyFaultsError, match=r"^1 of 7 judge verdicts failed \(1x judge "
                       r"output: no JSON object\); the table above leaves those samples out"):
        args.handler(args)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    domains = report["domains"]
    assert domains["mcp"]["total"] == pytest.approx(81.25)
    assert domains["mcp"]["format"] == pytest.approx(87.5)
    assert domains["mcp"]["quality"] == pytest.approx(100.0)
    assert domains["search"]["total"] == pytest.approx(57.9167, abs=1e-4)
    assert domains["search"]["factuality"] == pytest.approx(25.0)
    assert report["overall_weighted"]["total"] == pytest.approx(67.25)
    assert report["overall_macro"]["total"] == pytest.approx(69.5833, abs=1e-4)
    assert report["overall_weighted"]["factuality"] == pytest.approx(45.0)
    assert report["counts"] == {"mcp": 3, "search": 3}
    assert report["failed"] == {"mcp": 1, "search": 1}
    assert report["failure_reasons"] == {"No model generation": 1,
                                         "judge output: no JSON object": 1}
    assert "rule_capped" not in report
    out = capsys.readouterr().out
    assert f"| **{WEIGHTED_LABEL}** | 6 | 2 | 67.25 |" in out
    assert f"| **{MACRO_LABEL}** | 6 | 2 | 69.58 |" in out
    assert "No model generation: 1; judge output: no JSON object: 1" in out
    judge = JUDGES[-1]
    assert judge.systems == {("mcp", "Judge mcp fairly.\n"), ("search", "Judge search fairly.\n")}
    assert sorted(judge.asked) == sorted(["mcp0.1", "mcp1.2", "mcp2.1", "search0.1"]
                                         + ["search1.1"] * 3 + ["search2.1"] * 2
                                         + ["search3.1"])


def test_rule_caps_are_reported_beside_the_compatible_score() -> None:
    items, outputs = hand_made_bench()
    plain = run_bench(items, outputs, ScriptedJudge(), error_delay_s=0)
    capped = run_bench(items, outputs, ScriptedJudge(), rule_caps=True, error_delay_s=0)
    assert capped.report == plain.report
    # s3's output is unclosed: its capped total is min(3, 2.0) = 2; the others are unchanged,
    # so search's capped mean is (2.75 + 4.2 + 2) / 3 = 2.98333 -> 49.5833.
    assert capped.capped is not None and plain.capped is None
    assert capped.capped.domains["search"]["total"] == pytest.approx(49.5833,
                                                                                abs=1e-4)
    record = next(r for r in capped.records if r["key"] == "agentworld/search/3")
    assert record["total"] == 3.0 and record["capped_total"] == 2.0
    assert record["rules"] == ["no_end_tag"]
    assert "not comparable with AgentWorldBench" in capped.markdown()


def test_failures_name_their_reason_in_records_and_summary() -> None:
    class Down(Backend):
        def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
            from agentworld_envs.backends import BackendError
            raise BackendError("connection refused")

    items, outputs = hand_made_bench()
    result = run_bench(items[:2], outputs[:2], Down(), error_delay_s=0)
    assert result.report.failure_reasons == {"judge backend error": 2}
    assert all("connection refused" in r["error"] and r["attempts"] == 3
               for r in result.records)


# --- one-way layers ------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
def test_no_sim_module_imports_bench() -> None:
    import ast

    offenders = set()
    for path in (ROOT / "agentworld_envs" / "sim").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "agentworld_envs.bench" or n.startswith("agentworld_envs.bench.")
                   for n in names):
                offenders.add(path.relative_to(ROOT).as_posix())
    assert not offenders, offenders
