"""``TurnRollout``'s outputs as TRL reads them: never an empty completion, an episode cut at
``max_completion_length`` always reads as truncated, and no turn past it is played."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.trl import TurnRollout, environment_reward, turn_environment_class
from agentworld_envs.trl.data import floor_rows
from floor_tasks.solutions import solution
from tests.trl.test_env import SYSTEM, _LookupForever, _rollout


def test_a_prompt_that_leaves_no_room_for_a_turn_is_refused_clearly(tiny_lm_dir: Path) -> None:
    """Before, the rollout returned empty completions and TRL failed on ``ids[-1]`` with an
    ``IndexError: list index out of range``."""
    with pytest.raises(ValueError, match=r"a prompt of \d+ tokens leaves no room for a turn of "
                                         r"max_completion_length 64 in the model's context of "
                                         r"100 tokens"):
        _rollout(tiny_lm_dir, context=100, budget=64)


def test_an_episode_cut_on_an_end_token_still_reads_as_truncated(tiny_lm_dir: Path) -> None:
    """Cut right after a turn's closing EOS, an unfinished episode ended in EOS, which TRL reads
    as a finished completion (``mask_truncated_completions`` kept it in the loss)."""
    from transformers import AutoTokenizer

    reply = _LookupForever(AutoTokenizer.from_pretrained(tiny_lm_dir), 0, 0).reply
    budget = len(reply) + 1  # the first turn and its closing EOS
    out, trainer = _rollout(tiny_lm_dir, context=4096, budget=budget)
    ends = {*trainer.eos_token_ids, trainer.processing_class.pad_token_id}
    assert len(trainer.asked) == 2  # the budget was spent: no second turn
    assert not any(session.done for session in trainer.environments)
    for ids, mask in zip(out["completion_ids"], out["env_mask"], strict=True):
        assert ids[:len(reply)] == reply and len(ids) <= budget and len(mask) == len(ids)
        assert ids[-1] not in ends  # TRL: ids[-1] not in eos_and_pad -> truncated


def test_an_episode_the_rollout_cut_short_gets_no_further_step_from_the_reward(
        tiny_lm_dir: Path) -> None:
    """Before, ``environment_reward`` played the whole decoded completion (every turn and the
    env's feedback: ``<tool_call>...</tool_call>\nuser\n<tool_response>...``) as one more
    ``env.step`` of an episode the rollout had left unfinished."""
    out, trainer = _rollout(tiny_lm_dir, context=4096, budget=500, keep_open=True)
    sessions = trainer.environments
    played = [len(session.env.unwrapped.trace.calls) for session in sessions]
    assert played[0] > 1 and not any(session.done for session in sessions)
    texts = trainer.processing_class.batch_decode(out["completion_ids"],
                                                  skip_special_tokens=True)
    assert environment_reward(texts, sessions) == [0.0, 0.0]
    assert [len(session.env.unwrapped.trace.calls) for session in sessions] == played
    assert [len(session.actions) for session in sessions] == played
    for session in sessions:
        session.env.close()


class _Solves(_LookupForever):
    """A stand-in trainer whose model plays A1 v0's reference solution: the lookup, then the
    answer (which ends the episode with a pass)."""

    def __init__(self, tokenizer: Any, context: int, budget: int) -> None:
        super().__init__(tokenizer, context, budget)
        call, answer = solution("A1")
        self.turns = [tokenizer(f"<tool_call>{call}</tool_call>", add_special_tokens=False)
                      ["input_ids"],
                      tokenizer(answer, add_special_tokens=False)["input_ids"]
                      + [tokenizer.eos_token_id]]
        self.calls = 0

    def _generate_single_turn(self, prompts: list, *_: Any) -> tuple[list, None]:
        self.asked += [len(p) for p in prompts]
        self.calls += 1
        return [list(self.turns[self.calls - 1]) for _ in prompts], None


def _solve(tiny_lm_dir: Path, budget: int) -> tuple[dict[str, Any], _Solves, list[float]]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    rows = floor_rows(["A1"], ["v0"], system_prompt=SYSTEM)
    session = turn_environment_class("AgentFloor/A1-v0")()
    prompts = [[*rows[0]["prompt"][:-1], {"role": "user", "content": session.reset(**rows[0])}]]
    trainer = _Solves(tokenizer, context=8192, budget=budget)
    trainer.environments = [session]
    try:
        out = TurnRollout()(prompts, trainer)
        text = tokenizer.decode(out["completion_ids"][0], skip_special_tokens=True)
        return out, trainer, environment_reward([text], [session])
    finally:
        session.env.close()


def test_a_turn_past_the_completion_budget_is_played_as_cut(tiny_lm_dir: Path) -> None:
    """Before, the whole answer was played past ``max_completion_length`` and the episode scored
    1.0, while the completion TRL trains on (cut at the budget) held half of it."""
    whole, trainer, reward = _solve(tiny_lm_dir, budget=4000)
    length = len(whole["completion_ids"][0])
    assert reward == [1.0] and trainer.calls == 2 and length < 4000
    out, trainer, reward = _solve(tiny_lm_dir, budget=length - 5)
    kept = out["completion_ids"][0]
    assert kept == whole["completion_ids"][0][:length - 5]
    session = trainer.environments[0]
    answer = trainer.processing_class.decode(kept[len(kept) - len(trainer.turns[1]) + 5:])
    assert session.actions[-1] == answer and len(session.actions) == 2  # the cut answer
    assert reward == [0.0] and session.done  # and the verifier failed it
    out, trainer, reward = _solve(tiny_lm_dir, budget=length - 1)  # all but the closing EOS
    assert reward == [1.0] and out["completion_ids"][0] == whole["completion_ids"][0][:-1]


def test_no_turn_is_played_once_the_completion_budget_is_spent(tiny_lm_dir: Path) -> None:
    """The env's feedback that fills the budget leaves no room: the episode stops unfinished
    (before, the answer was generated and played past the budget, and scored 1.0)."""
    whole, trainer, _ = _solve(tiny_lm_dir, budget=4000)
    lookup_and_feedback = len(whole["completion_ids"][0]) - len(trainer.turns[1])
    out, trainer, reward = _solve(tiny_lm_dir, budget=lookup_and_feedback)
    session = trainer.environments[0]
    assert trainer.calls == 1 and len(session.actions) == 1
    assert reward == [0.0] and session.cut_short
