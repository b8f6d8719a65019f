"""The README's held-out table of the embedded world model is the committed eval files' output:
every figure of its rows (but the earlier ``floor_wm`` run's) read back from
``docs/world_model_eval_<domain>.json``, so a rerun that changes a file must change the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", ROOT / "agentworld_envs/models/adapters/tools/README.md")


def _cells(result: dict, domain: str) -> tuple[str, str | None, str]:
    """The row's figures as the table prints them: n and exact; the exact rate on the answers
    training lacks (None where those are all the items, which the table says in words);
    structural, values and calls."""
    report = result["report"]
    scores, n = report["domains"][domain], report["counts"][domain]
    low, high = result["exact_wilson95"]
    unseen = result["unseen_answers"]
    lacking = None
    if unseen["items"] != n:
        u_low, u_high = unseen["exact_wilson95"]
        lacking = f"{unseen['exact']:.1f} ({u_low:.1f}–{u_high:.1f}), {unseen['items']} items"
    return (f"| {n} | {scores['exact']:.1f} ({low:.1f}–{high:.1f}) |", lacking,
            " | ".join(f"{scores[k]:.1f}" for k in ("structural", "values", "calls")) + " |")


@pytest.mark.parametrize("domain", ["floor", "mcp"])
@pytest.mark.parametrize("model", ["fine-tuned", "base (built-in prompt)"])
def test_the_table_rows_are_the_committed_files(domain: str, model: str) -> None:
    result = json.loads((ROOT / f"docs/world_model_eval_{domain}.json").read_text())[model]
    head, lacking, tail = _cells(result, domain)
    for doc in DOCS:
        rows = [line for line in doc.read_text().splitlines()
                if line.startswith(f"| {domain}") and "floor_wm" not in line
                and ("adapter" in line) == (model == "fine-tuned")]
        assert len(rows) == 1, (doc.name, rows)
        assert head in rows[0] and rows[0].endswith(f"| {tail}"), rows[0]
        assert (f"| {lacking} |" if lacking else "| the same") in rows[0], rows[0]
