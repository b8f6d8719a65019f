"""The bench report's figures are eval.py's to the printed digit, and a verdict that gives no
score above 0 is said, not silently dropped from the means."""

from __future__ import annotations

import json
import statistics

from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.bench.items import BenchItem, item_from_dict
from agentworld_envs.bench.report import normalise
from agentworld_envs.bench.run import run_bench

TAGGED = "<predicted_observation>{}</predicted_observation>"


def items(count: int) -> list[BenchItem]:
    return [item_from_dict({
        "task": "mcp", "id": i, "prompt": [f"act {i}"], "response": ["**Environment "
        "Observation:**\n{}"], "current_prompt": f"act {i}", "system_str": "You simulate.",
        "turn_idx": 1, "total_turns": 1}) for i in range(count)]


def judge(*scores: dict[str, object]) -> ScriptedBackend:
    """Gives item i the verdict ``scores[i]``."""
    return ScriptedBackend([{"match": f"act {i}\\b", "reply": "<final_evaluation>"
                             f"{json.dumps({'scores': s})}</final_evaluation>"}
                            for i, s in enumerate(scores)])


def test_domain_figures_normalise_the_mean_as_eval_py_does_so_the_printed_digits_agree(
        ) -> None:
    # totals 2.6 and 3.75: eval.py prints normalize(mean([2.6, 3.75])) = 54.3749999... as
    # 54.37; the mean of per-sample normalised totals is 54.375, printed 54.38
    result = run_bench(items(2), [TAGGED] * 2, judge(
        {"format": 3, "factuality": 3, "consistency": 3, "realism": 2, "quality": 2},
        {"format": 4, "factuality": 4, "consistency": 4, "realism": 3}))
    release = normalise(statistics.mean([2.6, 3.75]))
    assert f"{release:.2f}" == "54.37"
    report = result.report
    assert report.domains["mcp"]["total"] == release
    assert report.weighted["total"] == release
    assert f"| mcp | 2 | 0 | {release:.2f} |" in result.markdown()


def test_verdicts_with_no_score_above_0_are_counted_and_said_under_the_table() -> None:
    result = run_bench(items(3), [TAGGED] * 3, judge(
        {"format": 5, "factuality": 5, "consistency": 5, "realism": 5, "quality": 5},
        {"format": "N/A", "quality": "4.5"}, {}))
    assert result.report.counts == {"mcp": 3} and result.report.domains["mcp"]["total"] == 100.0
    assert result.report.unscored == 2 and result.to_dict()["unscored"] == 2
    assert result.markdown().endswith(
        "\nScored with no total above 0 (counted in n, left out of the total means): 2")
    full = run_bench(items(1), [TAGGED], judge({"format": 4}))
    assert full.report.unscored == 0 and "above 0" not in full.markdown()
