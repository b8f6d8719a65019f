"""Review of hand-written scenarios whose gold stopped short of the task yet scored 1.

Episodes are played on the witness backend, which plays each scenario's demonstrated screens
(and otherwise shows the initial one), so only the checks decide the reward. An ``int`` in an
episode is an index into the scenario's candidate actions; a string is the action itself.
"""

from __future__ import annotations

import json

import pydantic
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import get_domain
from agentworld_envs.world.rewards import answer_matches, dates
from agentworld_envs.world.scenario import Scenario
from tests.helpers.witness import play_on_witness

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")

DONE = '{"action_type": "status", "goal_status": "complete"}'
SEARCH = '{"name": "web_search", "arguments": {"queries": ["Python 3.0 release date"]}}'


def _tap(index: int) -> str:
    return json.dumps({"action_type": "click", "index": index})


def _type(text: str, index: int | None = None) -> str:
    action = {"action_type": "input_text", "text": text}
    return json.dumps(action if index is None else {**action, "index": index})


@pytest.mark.parametrize(("domain", "scenario_id", "episode"), [
    # the old gold, which stopped short of the task
    ("android", "android-wifi-off", [_tap(2), DONE]),
    ("android", "android-send-sms", [_tap(1), _type("On my way"), DONE]),
    ("android", "android-ledgerly-expense", [_tap(3), _type("12.50"), _type("Lunch"), DONE]),
    ("android", "android-calendar-dentist", [_tap(3), _type("Dentist"), DONE]),
    # any click then complete
    ("android", "android-wifi-off", [_tap(0), DONE]),
    # reached the switch, never switched it
    ("android", "android-wifi-off", [_tap(2), _tap(1), DONE]),
    # typed on the conversation list
    ("android", "android-send-sms", [_type("On my way"), DONE]),
    # filled in and picked Food, never saved; saved while sync failed and never retried
    ("android", "android-ledgerly-expense", [0, 1, 2, _tap(3), _tap(2), DONE]),
    ("android", "android-ledgerly-expense", [0, 1, 2, _tap(3), _tap(2), _tap(4), DONE]),
    # every field filled, never saved
    ("android", "android-calendar-dentist", [0, 1, 2, 3, 4, DONE]),
    # the formula typed into A1
    ("os", "os-calc-sum-column", ["pyautogui.write('=SUM(B2:B6)\\n')", "DONE"]),
    ("os", "os-calc-sum-column", ["pyautogui.write('=SUM(B2:B6)\\n')",
                                  "pyautogui.hotkey('ctrl', 's')", "DONE"]),
    # the wrong day, or no day
    ("search", "search-python-release-date",
     [SEARCH, "Python 3.0 was released on 5 December 2008."]),
    ("search", "search-python-release-date", [SEARCH, "December 2008."]),
    ("search", "search-python-release-date", [SEARCH, "3 December 2008 or 3 December 2009"]),
])
def test_a_wrong_episode_scores_nothing(domain: str, scenario_id: str,
                                        episode: list[int | str]) -> None:
    assert play_on_witness(domain, scenario_id, episode) == 0.0


@pytest.mark.parametrize(("domain", "scenario_id", "episode"), [
    # settings search instead of Network & internet
    ("android", "android-wifi-off", [_type("Wi-Fi", 1), _tap(1), _tap(3), DONE]),
    # sent with the keyboard's enter key
    ("android", "android-send-sms", [_tap(1), _type("On my way"), '{"action_type": '
                                     '"keyboard_enter"}', DONE]),
    # the amount typed into the field by its index
    ("android", "android-ledgerly-expense",
     [_tap(3), _type("12.50", 1), 2, _tap(3), _tap(2), _tap(4), _tap(4), DONE]),
    # tomorrow picked on the calendar before creating the event
    ("android", "android-calendar-dentist", [_tap(2), _tap(3), 2, 3, 4, 5, DONE]),
    # B7 chosen through the Name Box, never saved (the task does not ask it)
    ("os", "os-calc-sum-column", ["pyautogui.click(60, 170)", "pyautogui.write('B7\\n')",
                                  "pyautogui.write('=SUM(B2:B6)\\n')", "DONE"]),
    ("search", "search-python-release-date", [SEARCH, "It came out on December 3, 2008."]),
    ("search", "search-python-release-date", [SEARCH, "2008-12-03"]),
])
def test_another_right_way_still_scores(domain: str, scenario_id: str,
                                        episode: list[int | str]) -> None:
    assert play_on_witness(domain, scenario_id, episode) == 1.0


@pytest.mark.parametrize(("domain", "scenario_id"), [
    ("android", "android-wifi-off"), ("android", "android-send-sms"),
    ("android", "android-ledgerly-expense"), ("android", "android-calendar-dentist"),
    ("os", "os-calc-sum-column"), ("search", "search-python-release-date")])
def test_the_gold_does_the_whole_task_and_scores(domain: str, scenario_id: str) -> None:
    scenario = get_domain(domain).builtin[scenario_id]
    assert play_on_witness(domain, scenario_id, scenario.solution) == 1.0


def _showing(screen: str) -> dict:
    return {"name": "scripted", "rules": [
        {"match": "", "reply": f"<predicted_observation>\n{screen}\n</predicted_observation>"}]}


@pytest.mark.parametrize(("scenario_id", "episode", "screen"), [
    ("android-send-sms", [_tap(2), _type("On my way"), _tap(4), DONE],
     'App: Messages (com.google.android.apps.messaging) / ConversationActivity\n'
     '1: TextView "Dentist office"\n3: TextView "On my way, Now, Sent"'),
    ("android-ledgerly-expense", [_tap(3), _type("12.50"), _type("Lunch", 2), _tap(4), DONE],
     'App: Ledgerly (app.ledgerly) / HomeActivity\n'
     '1: LinearLayout "Lunch, 12.50, Groceries, Jun 9" [clickable]'),
    ("android-calendar-dentist", [_tap(3), _type("Dentist", 1), _tap(5), DONE],
     'App: Calendar (com.google.android.calendar) / AllInOneActivity\n'
     '1: TextView "Tue 9" [selected]\n3: LinearLayout "Dentist, 9:00 - 9:30 AM" [clickable]'),
    ("android-calendar-dentist", [_tap(3), _type("Dentist", 1), _tap(5), DONE],
     'App: Calendar (com.google.android.calendar) / AllInOneActivity\n'
     '2: TextView "Wed 10" [selected]\n3: LinearLayout "Dentist, 10:00 - 11:00 AM"'),
], ids=["sms-to-the-dentist", "expense-under-groceries", "event-on-today", "event-at-ten"])
def test_a_world_showing_the_wrong_outcome_scores_nothing(scenario_id: str,
                                                          episode: list[str],
                                                          screen: str) -> None:
    """A world model that carried the task out wrong: the message went to the dentist, the
    expense under Groceries, the event onto today or at the editor's default time."""
    assert play_on_witness("android", scenario_id, episode, backend=_showing(screen)) == 0.0


@pytest.mark.parametrize(("answer", "expected", "matches"), [
    ("3 December 2008", "3 December 2008", True),
    ("on the 3rd of Dec. 2008", "3 December 2008", True),
    ("Tuesday, December 3rd, 2008", "2008-12-03", True),
    ("2008-12-03T00:00Z", "3 December 2008", True),
    ("December 2008", "3 December 2008", False),
    ("5 December 2008", "3 December 2008", False),
    ("3 December 2009", "3 December 2008", False),
    ("30 February 2009", "February 2009", False),
    ("13 February 2009", "February 2009", True),
    ("Python 3.0, 2008", "3 December 2008", False),
])
def test_answers_compare_by_date(answer: str, expected: str, matches: bool) -> None:
    assert answer_matches(answer, expected, "date") is matches


def test_days_and_months_with_no_year_are_no_date() -> None:
    assert dates("3 of " * 20000 + "December " * 20000) == []


def test_a_date_check_needs_a_date_to_compare() -> None:
    with pytest.raises(pydantic.ValidationError, match="by date needs a date"):
        Scenario(domain="search", id="d", instruction="When?", reference_answer="soon",
                 candidate_actions=["soon"],
                 reward={"checks": [{"check": "answer_matches", "match": "date"}]})
