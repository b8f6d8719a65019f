"""An item whose ``current_prompt`` is empty is asked and judged on ``prompt[turn_idx - 1]``,
as ``eval.py``'s ``run_inference`` and ``build_judge_messages`` fall back to it."""

from __future__ import annotations

from agentworld_envs.bench.items import item_from_dict
from agentworld_envs.bench.judge import JudgePrompts, judge_request


def test_an_empty_current_prompt_falls_back_to_the_turns_prompt() -> None:
    item = item_from_dict({
        "task": "mcp", "id": 0, "prompt": ["### Turn 1\nact one", "### Turn 2\nact two"],
        "response": ["**Environment Observation:**\none", "**Environment Observation:**\ntwo"],
        "current_prompt": "", "system_str": "You simulate.", "turn_idx": 2, "total_turns": 2})
    assert item.messages()[-1] == {"role": "user", "content": "### Turn 2\nact two"}
    user = judge_request(item, "two", JudgePrompts.load("builtin")).messages[1]["content"]
    assert "\n\n# Current Turn:\n\n### Turn 2\nact two\n\n**World Model Output" in user
    given = item_from_dict({**item.to_dict(), "current_prompt": "### Turn 2\nas given"})
    assert given.messages()[-1]["content"] == "### Turn 2\nas given"
