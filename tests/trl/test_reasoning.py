"""``environment_reward`` plays a final answer as the harness plays a reply
(``Completion.to_action``): without its reasoning, which the verifier must not read."""

from __future__ import annotations

import pytest

pytest.importorskip("trl", reason="the TRL adapters need trl: pip install 'agentworld[train]'")

import floor_tasks  # noqa: E402
from agentworld_envs.protocol.chat import Completion  # noqa: E402
from agentworld_envs.trl import environment_class, environment_reward  # noqa: E402


@pytest.mark.parametrize(("answer", "reward"), [
    ("<think>The status is active.</think>I am not sure.", 0.0),
    ("<think>Is it inactive? No.</think>The status is active.", 1.0),
])
def test_the_final_answer_is_scored_without_its_reasoning(answer: str, reward: float) -> None:
    """Before, the first answer scored 1.0: the verifier read the status in the reasoning
    (which TRL leaves in the content for a template with no reasoning parser)."""
    session = environment_class("AgentFloor/A1-v0")()
    session.reset(variant="v0", seed=0)
    lookup, _ = floor_tasks.solution("A1", "v0")
    session._step(lookup)
    completion = [{"role": "assistant", "content": answer}]
    assert environment_reward([completion], [session]) == [reward]
    assert session.actions[-1] == Completion(text=answer).to_action()
    session.env.close()
