"""The fidelity bench: item loading, judge parsing, rule diagnostics, both Overall figures."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence

import pytest

from agentworld_envs.backends import (
    Backend,
    BackendError,
    ChatRequest,
    Completion,
    register_backend,
)
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.bench.diagnostics import apply_rules, diagnose
from agentworld_envs.bench.items import BenchFormatError, BenchItem, item_from_dict, load_items
from agentworld_envs.bench.judge import JudgeParseError, judge_outputs, parse_judge_output
from agentworld_envs.bench.report import MACRO_LABEL, WEIGHTED_LABEL, normalise
from agentworld_envs.bench.run import predict, run_bench, score_fidelity
from agentworld_envs.bench.sample import load_sample

SCORES = {"format": 5, "factuality": 4, "consistency": 3, "realism": 2, "quality": 1}


class FnBackend(Backend):
    """Answers each request with ``fn(request)``; records every batch it is sent."""

    name = "fn"

    def __init__(self, fn: Callable[[ChatRequest], str]) -> None:
        self.fn = fn
        self.batches: list[int] = []

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.batches.append(len(requests))
        return [Completion(text=self.fn(r)) for r in requests]


def item(domain: str = "floor", ident: int = 0, truth: str = '{"status": "ok"}',
         turn: int = 1) -> BenchItem:
    prompts = [f"### Turn {k}\n\n**Action:**\nact {k}" for k in range(1, turn + 1)]
    return item_from_dict({
        "task": domain, "id": ident, "prompt": prompts,
        "response": [f"**Environment Observation:**\nobs {k}" for k in range(1, turn)]
        + [f"**Environment Observation:**\n{truth}"],
        "current_prompt": prompts[-1], "system_str": "You simulate.", "turn_idx": turn,
        "total_turns": turn})


def verdict(scores: dict[str, float]) -> str:
    return f"<final_evaluation>\n{json.dumps({'strengths': [], 'scores': scores})}\n" \
           "</final_evaluation>"


# --- loader -------------------------------------------------------------------------------

def test_item_chat_layout_follows_agentworld() -> None:
    it = item(turn=3)
    roles = [m["role"] for m in it.messages()]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert it.messages()[2]["content"] == "**Environment Observation:**\nobs 1"
    assert it.ground_truth == '{"status": "ok"}'
    assert it.messages()[-1]["content"] == it.current_prompt


@pytest.mark.parametrize(("change", "message"), [
    ({"turn_idx": 0}, "turn_idx"),
    ({"turn_idx": 2}, "turn_idx"),
    ({"id": "7"}, "id must be an integer"),
    ({"id": True}, "id must be an integer"),
    ({"prompt": "text"}, "prompt must be a list"),
    ({"response": []}, "ground truth"),
    ({"task": ""}, "task"),
    ({"total_turns": 0}, "total_turns"),
])
def test_loader_rejects_bad_fields(change: dict, message: str) -> None:
    data = {**item().to_dict(), **change}
    with pytest.raises(BenchFormatError, match=message):
        item_from_dict(data, "x.jsonl:3")


def test_loader_names_missing_fields_and_keeps_extra_ones(tmp_path) -> None:
    data = item().to_dict()
    del data["system_str"]
    with pytest.raises(BenchFormatError, match=r"x:1: missing field\(s\) \['system_str'\]"):
        item_from_dict(data, "x:1")
    path = tmp_path / "mcp_test.jsonl"
    extra = {**item("mcp").to_dict(), "uid": "abc"}
    path.write_text(json.dumps(extra) + "\n\n" + json.dumps(item("mcp", 1).to_dict()) + "\n")
    loaded = load_items(tmp_path)
    assert [i.key for i in loaded] == ["mcp/0", "mcp/1"]
    assert loaded[0].meta == {"uid": "abc"} and loaded[0].to_dict()["uid"] == "abc"
    path.write_text(json.dumps(item("mcp").to_dict()) + "\n" + json.dumps(item("mcp").to_dict()))
    with pytest.raises(BenchFormatError, match="mcp_test.jsonl:2: duplicate item mcp/0"):
        load_items(path)
    path.write_text("{not json\n")
    with pytest.raises(BenchFormatError, match="invalid JSON"):
        load_items(path)


def test_shipped_sample_is_valid_and_has_two_domains() -> None:
    sample = load_sample()
    assert {i.task for i in sample} == {"floor", "search"}
    floor = [i for i in sample if i.task == "floor"]
    assert all(i.source["ground_truth"] == "real" for i in floor)
    assert all(json.loads(i.ground_truth.split("\n")[0])["call_id"].count("_") >= 2
               for i in floor)


# --- judge parsing (every tolerance, one case each: tests/world_model/test_bench_compat.py) ---

@pytest.mark.parametrize("text", [
    verdict(SCORES),
    "<think>maybe <final_evaluation>{\"scores\": {\"format\": 1}}</final_evaluation></think>"
    + verdict(SCORES),
    "<think>" + verdict(SCORES),
    "```json\n" + json.dumps({"scores": SCORES}) + "\n```",
    "<final_evaluation>{'scores': {'format': 5, 'factuality': 4, 'consistency': 3, "
    "'realism': 2, 'quality': 1,},}</final_evaluation>",
    "reasoning...</think>" + verdict(SCORES),
    '{"draft": 1} then ' + json.dumps({"scores": SCORES}) + " done",
])
def test_judge_parser_reads_broken_and_wrapped_output(text: str) -> None:
    assert parse_judge_output(text).scores == SCORES


@pytest.mark.parametrize("text", [
    "", "no scores here", json.dumps(SCORES),
    "Scores -> format: 5, factuality: 4, consistency: 3, realism: 2, quality: 1",
])
def test_judge_parser_refuses_what_the_release_refuses(text: str) -> None:
    with pytest.raises(JudgeParseError):
        parse_judge_output(text)


def test_judge_retries_only_unreadable_items_with_the_same_request() -> None:
    seen: list[ChatRequest] = []

    def answer(request: ChatRequest) -> str:
        seen.append(request)
        text = request.messages[-1]["content"]
        attempt = sum(1 for r in seen if r.messages[-1]["content"] == text)
        return verdict(SCORES) if text == "good" or attempt == 3 else "garbled"

    requests = [ChatRequest([{"role": "user", "content": c}]) for c in ("good", "late")]
    results = judge_outputs(FnBackend(answer), requests, attempts=3)
    assert results[0].verdict is not None and results[0].attempts == 1
    assert results[1].verdict is not None and results[1].attempts == 3
    assert [r for r in seen if r.messages[-1]["content"] == "late"] == [requests[1]] * 3
    failed = judge_outputs(FnBackend(lambda r: "garbled"), requests[:1], attempts=3)[0]
    assert failed.verdict is None and failed.attempts == 3 and "no JSON object" in failed.error


def test_judge_backend_errors_become_failed_samples() -> None:
    class Broken(Backend):
        def complete(self, requests):
            raise BackendError("down")

    result = judge_outputs(Broken(), [ChatRequest([{"role": "user", "content": "x"}])], 2,
                           error_delay_s=0)[0]
    assert result.verdict is None and "down" in result.error
    assert result.reason == "judge backend error" and result.attempts == 2


# --- diagnostics and rules -------------------------------------------------------------

def test_diagnostics_count_tags_hedging_and_empty_output() -> None:
    d = diagnose("<think>it might be</think><predicted_observation>ok</predicted_observation>")
    assert (d.response_start_tag_count, d.response_end_tag_count) == (1, 1)
    assert d.raw_speculative_word_count == 0 and d.tags_closed
    assert d.extracted_output_chars == 2 and not d.extracted_no_output
    empty = diagnose("<think>only thoughts</think>")
    assert empty.extracted_no_output and empty.extracted_output_chars == 0
    hedged = diagnose("<predicted_observation>It would likely fail, or maybe pass")
    assert hedged.raw_would_word_count == 1 and hedged.raw_likely_word_count == 1
    assert hedged.observation_speculative_word_count == 3 and not hedged.tags_closed
    scores, cap, fired = apply_rules({k: 5.0 for k in SCORES}, hedged)
    assert cap == 2.0 and scores["realism"] == 3.0 and fired == ["no_end_tag", "hedging"]
    scores, _, fired = apply_rules({k: 5.0 for k in SCORES}, empty, require_tags=False)
    assert scores["factuality"] == scores["quality"] == 1.0 and fired == ["no_output"]


# --- scoring ------------------------------------------------------------------------------

def test_both_overall_figures_on_a_hand_made_example() -> None:
    # Domain "a": one perfect sample (100). Domain "b": three samples at total 2 (25) and one
    # sample whose verdict never parses (failed, excluded).
    items = [item("a", 0, "A")] + [item("b", i, f"B{i}") for i in range(4)]
    outputs = ["<predicted_observation>x</predicted_observation>"] * 5

    def judge(request: ChatRequest) -> str:
        text = request.messages[-1]["content"]
        if "```\nA\n```" in text:
            return verdict({k: 5 for k in SCORES})
        if "```\nB3\n```" in text:
            return "unreadable"
        return verdict({k: 2 for k in SCORES})

    result = run_bench(items, outputs, FnBackend(judge), retries=2)
    report = result.report
    assert report.domains["a"]["total"] == 100.0 and report.domains["b"]["total"] == 25.0
    assert report.macro["total"] == pytest.approx(62.5)          # (100 + 25) / 2
    assert report.weighted["total"] == pytest.approx(43.75)      # (100 + 3 * 25) / 4
    assert report.failed == {"b": 1} and report.counts == {"a": 1, "b": 3}
    assert report.failure_reasons == {"judge output: no JSON object": 1}
    table = report.markdown()
    assert f"| **{MACRO_LABEL}** | 4 | 1 | 62.50" in table
    assert f"| **{WEIGHTED_LABEL}** | 4 | 1 | 43.75" in table
    assert "judge output: no JSON object: 1" in table


def test_rule_caps_are_opt_in_and_missing_generations_are_never_judged() -> None:
    items = [item("a", 0), item("a", 1), item("a", 2)]
    judge = FnBackend(lambda r: verdict({k: 5 for k in SCORES}))
    outputs = ["<predicted_observation>unclosed", None, ""]
    plain = run_bench(items, outputs, judge)
    assert plain.records[0]["total"] == 5.0 and "rules" not in plain.records[0]
    assert plain.report.domains["a"]["total"] == 100.0 and plain.capped is None
    assert [r["reason"] for r in plain.records[1:]] == ["No model generation"] * 2
    assert judge.batches == [1]
    capped = run_bench(items, outputs, judge, rule_caps=True)
    assert capped.records[0]["capped_total"] == 2.0 and capped.records[0]["rules"] == \
        ["no_end_tag"]
    assert capped.report == plain.report
    assert capped.capped is not None and capped.capped.domains["a"]["total"] == normalise(2.0)


def test_fidelity_of_a_perfect_oracle_is_one_and_of_an_empty_model_zero() -> None:
    sample = [i for i in load_sample() if i.source.get("ground_truth") == "real"]
    truth = {json.dumps(i.messages()): i.ground_truth for i in sample}
    oracle = FnBackend(lambda r: "<think>replay</think><predicted_observation>\n"
                       f"{truth[json.dumps(r.messages)]}\n</predicted_observation>")
    from agentworld_envs.backends import SamplingParams

    perfect = score_fidelity(sample, predict(oracle, sample, SamplingParams(), batch_size=4))
    assert perfect.report.weighted == {"exact": 100.0, "structural": 100.0, "values": 100.0,
                                       "calls": 100.0}
    assert perfect.report.macro == perfect.report.weighted
    assert oracle.batches == [4] * (len(sample) // 4) + ([len(sample) % 4] if len(sample) % 4
                                                         else [])
    empty = score_fidelity(sample, predict(FnBackend(lambda r: ""), sample, SamplingParams()))
    assert empty.report.weighted == {"exact": 0.0, "structural": 0.0, "values": 0.0,
                                     "calls": 0.0}
    missing = score_fidelity(sample[:2], [None, None])
    assert missing.report.weighted["exact"] == 0.0


def test_fidelity_partial_agreement_and_non_json_truth() -> None:
    items = [item("a", 0, '{"status": "ok", "result": {"id": "P1", "price": 9}}'),
             item("b", 1, "plain text screen")]
    outputs = ['<predicted_observation>{"result": {"price": 12, "id": "P1"}, "status": "ok"}'
               "</predicted_observation>", "<predicted_observation>plain text screen"]
    report = score_fidelity(items, outputs).report
    assert report.domains["a"]["structural"] == 100.0
    assert report.domains["a"]["values"] == pytest.approx(200 / 3)
    assert report.domains["b"]["exact"] == 100.0 and math.isnan(report.domains["b"]["values"])
    assert report.macro["exact"] == 50.0 and report.macro["values"] == pytest.approx(200 / 3)


def test_predict_passes_batches_and_position_seeds() -> None:
    seeds: list[int | None] = []
    backend = FnBackend(lambda r: seeds.append(r.sampling.seed) or "x")
    from agentworld_envs.backends import SamplingParams

    outputs = predict(backend, [item("a", i) for i in range(5)], SamplingParams(seed=10), 2)
    assert outputs == ["x"] * 5 and backend.batches == [2, 2, 1] and seeds == list(range(10, 15))
    seeds.clear()
    predict(backend, [item("a", i) for i in range(2)], SamplingParams(), 2)
    assert seeds == [None, None]  # no seed unless asked, as the release sends none


# --- damaged files through the CLI ------------------------------------------------------------

GOOD = json.dumps(item().to_dict())
DAMAGED = {  # line 2 of an items file (line 1 is good), and what the one error line says
    "not JSON": (b"hello", ":2: invalid JSON"),
    "a cut line": (GOOD[:40].encode(), ":2: invalid JSON"),
    "deep nesting": (b"[" * 100_000 + b"]" * 100_000, ":2: invalid JSON: nested more than 200"),
    "a 5,000-digit number": (GOOD.replace('"id": 0', '"id": ' + "9" * 5000).encode(),
                             ":2: invalid JSON: a number is not finite or has more than 300"),
    "NaN": (GOOD.replace('"id": 0', '"id": NaN').encode(), ":2: invalid JSON"),
    "invalid UTF-8": (b'{"task": "\xff\xfe"}', ":2: not UTF-8 text (byte 10 of the line)"),
    "a lone surrogate": (GOOD.replace("You simulate.", "\\ud800").encode(),
                         ":2: a lone surrogate escape"),
    "a list": (b"[1, 2]", ":2: an item must be a JSON object"),
    "a missing field": (GOOD.replace('"system_str"', '"system"').encode(), ":2: missing field"),
    "a repeated item": (GOOD.encode(), ":2: duplicate item floor/0"),
}


@pytest.mark.parametrize("case", DAMAGED)
def test_a_damaged_items_file_is_one_line_naming_file_and_line_and_nothing_written(
        case: str, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentworld_envs.cli import main

    line, expected = DAMAGED[case]
    items = tmp_path / "items.jsonl"
    items.write_bytes(GOOD.encode() + b"\n" + line + b"\n")
    argv = ["wm", "bench", str(items), "--backend", "scripted", "--judge", "scripted",
            "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"agentworld: error: {items}{expected}"), err
    assert "Traceback" not in err and list(tmp_path.iterdir()) == [items]
    with pytest.raises(BenchFormatError, match=re.escape(expected)):
        main(["--debug", *argv])


def test_damaged_predictions_name_file_and_line(tmp_path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from agentworld_envs.cli import main

    items, predictions = tmp_path / "items.jsonl", tmp_path / "records.jsonl"
    items.write_text(GOOD + "\n")
    predictions.write_text('{"key": "floor/0", "output": "{}"}\n{"key": 3}\n')
    assert main(["wm", "fidelity", str(items), "--predictions", str(predictions)]) == 2
    assert capsys.readouterr().err.startswith(
        f"agentworld: error: {predictions}:2: a prediction needs a string key")


def test_a_failed_write_leaves_the_old_file_whole(tmp_path) -> None:
    from agentworld_envs.atomic_write import write_text_atomic

    path = write_text_atomic(tmp_path / "records.jsonl", "old\n")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(path, "new \ud800\n")
    assert path.read_text() == "old\n" and list(tmp_path.iterdir()) == [path]


# --- bad input is refused before any model call ---------------------------------------------

class CountingWorldModel(ScriptedBackend):
    """The scripted placeholder, keeping every request it gets in ``requests``."""

    requests: list[ChatRequest] = []

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        CountingWorldModel.requests += requests
        return super().complete(requests)


register_backend("bench_test_counting", CountingWorldModel)


def test_a_prompt_set_missing_a_domains_judge_prompt_fails_before_any_world_model_call(
        tmp_path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld_envs.cli import main

    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "judge_user_instructions.txt").write_text("Give your verdict.")
    monkeypatch.setattr(CountingWorldModel, "requests", [])
    assert main(["wm", "bench", "SAMPLE", "--backend", "bench_test_counting", "--judge",
                 "scripted", "--prompts", str(prompts), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no search/judge_system_prompt.txt" in err
    assert CountingWorldModel.requests == [] and not (tmp_path / "out").exists()


BAD_FLAGS = {  # argv after the command and its items; what the one error line says
    "batch size 0": (["bench", "--batch-size", "0"], "--batch-size: must be at least 1, not 0"),
    "negative batch size": (["fidelity", "--batch-size", "-1"], "must be at least 1, not -1"),
    "no judge attempt": (["bench", "--max-retries", "0"], "--max-retries: must be at least 1"),
    "negative attempts": (["bench", "--max-retries", "-2"], "--max-retries: must be at least 1"),
    "fault budget": (["fidelity", "--max-faults", "-2"], "--max-faults: must be at least -1"),
    "empty items": (["bench", "EMPTY"], "no bench items to score"),
    "empty items, fidelity": (["fidelity", "EMPTY"], "no bench items to score"),
    "judge config": (["bench", "--judge", "{bad"], "backend is not valid JSON"),
}


@pytest.mark.parametrize("case", BAD_FLAGS)
def test_bad_flags_and_empty_items_are_one_line_before_any_call_and_write_nothing(
        case: str, tmp_path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld_envs.cli import main

    (command, *flags), message = BAD_FLAGS[case]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    items = str(empty) if "EMPTY" in flags else "SAMPLE"
    flags = [f for f in flags if f != "EMPTY"]
    judge = ["--judge", "scripted"] if command == "bench" and "--judge" not in flags else []
    monkeypatch.setattr(CountingWorldModel, "requests", [])
    assert main(["wm", command, items, "--backend", "bench_test_counting", *judge, *flags,
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert CountingWorldModel.requests == [] and not (tmp_path / "out").exists()



# --- unreadable verdicts are faults, as in `wm rl` -------------------------------------------

NO_SCORES = '<final_evaluation>\n{"strengths": []}\n</final_evaluation>'


@pytest.mark.parametrize("judged", ["all unreadable", "one scored"])
def test_unreadable_verdicts_end_the_run_with_one_line_after_the_table(
        judged: str, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    from agentworld_envs.cli import main

    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(item(ident=0).to_dict()) + "\n"
                     + json.dumps(item(ident=1, turn=2).to_dict()) + "\n")
    rules = [{"match": "act 2" if judged == "one scored" else "^$", "reply": verdict(SCORES)},
             {"match": ".", "reply": NO_SCORES}]
    judge = json.dumps({"name": "scripted", "rules": rules})
    argv = ["wm", "bench", str(items), "--backend", "scripted", "--judge", judge,
            "--max-retries", "1", "--no-progress"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    unread = 2 if judged == "all unreadable" else 1
    assert captured.err == (f"agentworld: error: {unread} of 2 judge verdicts failed "
                            f"({unread}x judge output: no scores object); the table above "
                            "leaves those samples out\n")
    assert "Failed samples (excluded from every mean): judge output: no scores object: " \
           f"{unread}" in captured.out  # the release's listing is kept
    assert f"| {WEIGHTED_LABEL}" in captured.out.replace("**", "")

    # past --max-faults: one line, and no table
    assert main([*argv, "--max-faults", str(unread - 1)]) == 1
    captured = capsys.readouterr()
    assert captured.err == (f"agentworld: error: {unread} of 2 judge verdicts failed "
                            f"({unread}x judge output: no scores object); stopped after more "
                            f"than {unread - 1} (--max-faults); no table is printed\n")
    assert "Failed samples" not in captured.out and MACRO_LABEL not in captured.out
