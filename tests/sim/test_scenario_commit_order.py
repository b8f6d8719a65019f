"""Scenarios that ask to enter something and commit it (save, submit, add to the cart): the
commit counts only after what it commits, through ``action_matches`` with ``after``. Before,
saving first and editing after (the change left unsaved) scored 1. Likewise a slide's title
counts only once the slide exists (typing it first titled the current slide).

Episodes are played on the witness backend, so only the checks decide the reward. An ``int``
in an episode is an index into the scenario's candidate actions; a string is the action itself.
"""

from __future__ import annotations

import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import get_domain
from tests.helpers.witness import play_on_witness

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")

Episode = tuple[int | str, ...]

ORDERS: dict[str, list[tuple[Episode, Episode]]] = {
    # scenario: (a right episode, the same episode committed only before its content); the gold's
    # pair first, then other orders of the unrelated steps and other spellings
    "os-writer-bold-title": [
        ((0, 1, 2, 3), (0, 2, 1, 3)),
        ((0, "pyautogui.click(420, 95)", 2, 3), (0, 2, "pyautogui.click(420, 95)", 3)),
        ((0, "pyautogui.hotkey('ctrl', 'b'); pyautogui.hotkey('ctrl', 's')", 3),
         (0, "pyautogui.hotkey('ctrl', 's'); pyautogui.hotkey('ctrl', 'b')", 3)),
        ((2, 0, 1, 2, 3), (2, 0, 1, 3)),  # saved again after the change
    ],
    "web-change-account-email": [
        ((0, 1, 2, 3, 4), (0, 3, 1, 2, 4)),
        ((0, 2, 1, 3, 4), (0, 2, 3, 1, 4)),  # the password first
        ((0, "fill(bid='520', value='mara.quill@example.org')", 2, "click(bid='510')", 4),
         (0, 2, "click(bid='510')", "fill(bid='520', value='mara.quill@example.org')", 4)),
        ((0, 3, 1, 2, 3, 4), (0, 3, 1, 2, 4)),
    ],
    "web-forum-new-post": [
        ((0, 1, 2, 3, 4), (0, 1, 3, 2, 4)),  # the body after submitting
        ((0, 2, 1, 3, 4), (0, 2, 3, 1, 4)),  # the body first, the title after submitting
        ((0, 1, 2, "click(bid='304')", 4), (0, "click(bid='304')", 1, 2, 4)),
    ],
    "web-cart-two-mugs": [  # turn 2 is rate-limited: the action there changes nothing
        ((0, 1, 1, 2), (1, 1, 0, 2)),
        (("fill(bid='802', value='2')", "click(bid='803')", "click(bid='803')", 2),
         ("click(bid='803')", "click(bid='803')", "fill(bid='802', value='2')", 2)),
    ],
    "web-newsletter-unsubscribe": [
        ((0, 1, 2), (1, 0, 2)),
        (("click(bid='901')", "click(bid='902')", 2), ("click(bid='902')", "click(bid='901')", 2)),
        ((1, 0, 1, 2), (1, 0, 2)),
    ],
    "os-impress-new-slide": [  # the title typed before the slide exists
        ((0, 1, 2, 3), (1, 0, 2, 3)),
        (("pyautogui.hotkey('ctrl', 'm')", 1, 3), (1, "pyautogui.hotkey('ctrl', 'm')", 3)),
        (("pyautogui.click(300, 95); pyautogui.write('Results')", 3),
         ("pyautogui.write('Results'); pyautogui.click(300, 95)", 3)),
    ],
}
OTHER_WAYS = [(sid, *pair) for sid, pairs in ORDERS.items() for pair in pairs[1:]]


def reward(scenario_id: str, episode: Episode) -> float:
    return play_on_witness(scenario_id.partition("-")[0], scenario_id, list(episode))


@pytest.mark.parametrize("scenario_id", ORDERS)
def test_the_gold_scores_and_committed_before_its_content_scores_nothing(
        scenario_id: str) -> None:
    right, committed_first = ORDERS[scenario_id][0]
    gold = get_domain(scenario_id.partition("-")[0]).builtin[scenario_id].solution
    assert list(right) == gold
    assert sorted(committed_first) == sorted(gold)  # the same steps, reordered
    assert reward(scenario_id, right) == 1.0
    assert reward(scenario_id, committed_first) == 0.0


@pytest.mark.parametrize(("scenario_id", "right", "committed_first"), OTHER_WAYS)
def test_another_right_way_scores_only_with_its_commit_after_the_content(
        scenario_id: str, right: Episode, committed_first: Episode) -> None:
    assert reward(scenario_id, right) == 1.0
    assert reward(scenario_id, committed_first) == 0.0
