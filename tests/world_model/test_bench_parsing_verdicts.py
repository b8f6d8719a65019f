"""Hostile text in the bench's readers: a judge note that quotes a fence does not cut the
verdict short (nor let a quoted verdict replace the real one), and the export's reasoning reader
takes linear time on a run of unclosed ``<think>`` tags; a checkout's judge template whose
message would differ from the release's is refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from agentworld_envs.bench.items import BenchFormatError, load_items
from agentworld_envs.bench.judge_parser import DIMENSIONS, parse_judge_output
from agentworld_envs.bench.release_instructions import instructions_from_template
from agentworld_envs.bench.transitions import _reasoning


def fenced_verdict(notes: list[str], score: int) -> str:
    body = json.dumps({"strengths": notes, "weaknesses": [],
                       "scores": dict.fromkeys(DIMENSIONS, score)})
    return f"Reasoning.\n<final_evaluation>\n```json\n{body}\n```\n</final_evaluation>"


def test_a_note_quoting_a_fence_after_a_verdict_does_not_replace_the_real_scores() -> None:
    """The note's fence once ended the block inside the string; the salvage then read the
    quoted all-5 verdict instead of the judge's all-1 one."""
    quoted = "{'scores': {" + ", ".join(f"'{d}': 5" for d in DIMENSIONS) + "}}"
    verdict = parse_judge_output(fenced_verdict([f"it printed {quoted}``` around it"], 1))
    assert verdict.scores == dict.fromkeys(DIMENSIONS, 1) and verdict.total == 1.0


def test_a_note_quoting_a_fence_and_a_brace_keeps_the_notes() -> None:
    note = "closes with ``` and a stray {"
    verdict = parse_judge_output(fenced_verdict([note], 4))
    assert verdict.strengths == [note] and verdict.total == 4.0


_PAIRED_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)  # the old reader


def test_reasoning_reads_what_the_paired_block_pattern_read() -> None:
    rng = np.random.default_rng(11)
    atoms = ["<think>", "</think>", "<THINK>", "</Think>", "a", " ", "\n", "x y", "<thin", "k>"]
    for _ in range(3000):
        raw = "".join(rng.choice(atoms, size=int(rng.integers(0, 14))))
        expected = "\n".join(b.strip() for b in _PAIRED_BLOCK.findall(raw)).strip()
        assert _reasoning(raw) == expected, raw


def test_reasoning_takes_linear_time_on_unclosed_think_tags() -> None:
    """2 MB of ``<think>``: about half an hour for the old lazy pattern (1.7 s at 56 KB,
    growing with the square), well under a second now. The subprocess and its timeout only
    guard the suite against a hang."""
    script = ("from agentworld_envs.bench.transitions import _reasoning\n"
              "print(repr(_reasoning('<think>a</think>' + '<think>' * 300_000)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout.strip() == repr("a")


@pytest.mark.parametrize("template", [
    "You are a strict judge.\n\n{context}\n\n{world_model_input}\n\n{predicted_observation}\n\n"
    "{ground_truth}\n\nScore it.",  # a preamble the bench would not send
    "{context}\n\n{predicted_observation}\n\n{ground_truth}\n\nScore it.",  # a field fewer
    "{context}\n{world_model_input}\n{predicted_observation}\n{ground_truth}\n\nScore it.",
    "{world_model_input}\n\n{context}\n\n{predicted_observation}\n\n{ground_truth}\n\nScore it.",
    "{context}\n\n{world_model_input}\n\n{predicted_observation!r}\n\n{ground_truth}\n\nScore it.",
])
def test_a_template_whose_message_would_differ_from_the_releases_is_refused(
        template: str) -> None:
    with pytest.raises(ValueError, match="not the release's layout before the instructions"):
        instructions_from_template(template)


def test_the_releases_layout_gives_its_instructions_leading_white_space_aside() -> None:
    layout = "{context}\n\n{world_model_input}\n\n{predicted_observation}\n\n{ground_truth}"
    assert instructions_from_template("\n" + layout + "\n\nScore {{it}}.\n") == "Score {it}."


def test_a_folder_named_like_an_items_file_is_not_read_as_one(tmp_path) -> None:
    """``wm bench DIR`` with a subfolder ``x.jsonl`` failed with ``IsADirectoryError``, exit 1;
    the folder's files are its items, and a folder holding none is refused in one line."""
    (tmp_path / "sub.jsonl").mkdir()
    with pytest.raises(BenchFormatError, match="no \\*.jsonl files"):
        load_items(tmp_path)
