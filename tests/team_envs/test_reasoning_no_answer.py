"""reasoning-v0: a message with no answer scores 0. It was given to the dataset's scorer as "",
which several scorers reward as a well-formed answer (arc_agi 0.05, more than an unreadable
board), so a team earned reward for saying nothing."""

from __future__ import annotations

import pettingzoo
import pytest

import team_envs  # noqa: F401

pytest.importorskip("reasoning_gym")


def _answer(task: str, message: str | None, **kwargs) -> tuple[float, dict]:
    env = pettingzoo.make("aec", "team_envs/reasoning-v0", task=task, n_agents=2, held_out=1,
                          size=2, **kwargs)
    env.reset(seed=0, options={"split": "test", "index": 0})
    env.step("working")
    env.step(message)
    return env.rewards["agent_0"], env.infos["agent_0"]["verdict"]


@pytest.mark.parametrize("task", ["arc_agi", "sentence_reordering", "color_cube_rotation"])
@pytest.mark.parametrize("message", ["", " \n\t", "ANSWER:", "**ANSWER:** ", "**ANSWER**:\n",
                                     "<think>ANSWER: 42</think>", None],
                         ids=["empty", "blank", "marker", "bold-marker", "bold-marker-2",
                              "only-thinking", "invalid-action"])
def test_no_answer_scores_zero(task: str, message: str | None) -> None:
    reward, verdict = _answer(task, message)
    assert reward == 0.0 and verdict["error"] == "no answer"


def test_an_empty_answer_still_scores_where_the_reference_is_empty() -> None:
    # reasoning-gym draws item i of seed s from Random(s + i): ab's item 18 of seed 0 ends empty
    reward, verdict = _answer("ab", "ANSWER:", dataset_seed=18)
    assert verdict["expected"] == "" and reward == 1.0


def test_a_dataset_whose_scorer_rewards_any_answer_is_refused() -> None:
    """game_of_life_halting scores ``bool(answer) == bool(reference)``: "False", "banana" and
    the right answer all earned 1. Refused alone and as a composite's part."""
    from reasoning_gym.composite import DatasetSpec

    composite = {"datasets": [DatasetSpec("game_of_life_halting", 1.0, {}),
                              DatasetSpec("basic_arithmetic", 1.0, {})]}
    for kwargs in ({"task": "game_of_life_halting"}, {"task": "composite", "config": composite}):
        with pytest.raises(ValueError, match="game_of_life_halting scores every non-empty "
                                             "answer 1"):
            pettingzoo.make("aec", "team_envs/reasoning-v0", held_out=1, size=4, **kwargs)
