"""``TurnRollout``'s outputs as TRL reads them: never an empty completion, and an episode cut
at ``max_completion_length`` always reads as truncated."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentworld_envs.trl import (
    environment_reward,
)
from tests.test_trl_env import _LookupForever, _rollout


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
    assert len(trainer.asked) > 2  # the episodes went on past the cut
    for ids, mask in zip(out["completion_ids"], out["env_mask"], strict=True):
        assert ids[:len(reply)] == reply and len(ids) <= budget and len(mask) == len(ids)
        assert ids[-1] not in ends  # TRL: ids[-1] not in eos_and_pad -> truncated


def test_an_episode_the_rollout_cut_short_gets_no_further_step_from_the_reward(
        tiny_lm_dir: Path) -> None:
    """Before, ``environment_reward`` played the whole decoded completion (every turn and the
    env's feedback: ``<tool_call>...</tool_call>\nuser\n<tool_response>...``) as one more
    ``env.step`` of an episode the rollout had left unfinished."""
    out, trainer = _rollout(tiny_lm_dir, context=900, budget=64, keep_open=True)
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
