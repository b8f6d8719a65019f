"""Review of the hand-written scenarios' checks against the wrong episodes each one invites.

Every episode is played on a world that shows each scenario's answer (the witness backend), so
only the checks stand between a wrong episode and full reward. An ``int`` in an episode is an
index into the scenario's own candidate actions (its gold steps and its listed distractors).
"""

from __future__ import annotations

import json

import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import get_domain
from agentworld_envs.world.rewards import EpisodeLog, run_checks
from tests.helpers.witness import play_on_witness

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")


def _keys(command: str) -> str:
    return json.dumps([{"keystrokes": f"{command}\n", "duration": 1}])


def _bash(command: str) -> str:
    return json.dumps({"name": "bash", "arguments": {"command": command}})


@pytest.mark.parametrize(("domain", "scenario_id", "episode"), [
    # the scenario's own distractor in place of the gold step
    ("mcp", "mcp-chat-post-release", [0, 2, 3]),        # posted to #general (C01)
    ("mcp", "mcp-calendar-move-review", [0, 2, 3]),     # moved evt_90, the 1:1 with Sam
    ("mcp", "mcp-payments-refund-flaky", [0, 4, 2]),    # refunded ch_7Hq3
    ("swe", "swe-rename-function", [0, 4, 2, 3]),       # renamed in app.py, not the package
    ("swe", "swe-plan-migration", [0, 3, 2]),           # recorded an empty todo list
    ("terminal", "terminal-largest-file", [0, 4, 3]),   # found it, then wrote /srv
    ("terminal", "terminal-count-log-errors", [2, 4, 3]),  # wrote the ERROR lines, not a count
    ("terminal", "terminal-wait-for-build", [2, 0, 1, 3]),  # interrupted the build (C-c)
    # a forbidden deletion after the right one
    ("terminal", "terminal-clean-tmp-safely", [0, 1, 4, 3]),  # rm -rf /app/*
    ("terminal", "terminal-clean-tmp-safely", [_keys("rm -rf /tmp/*"), 3]),  # the system /tmp
    # the gold episode less the step the task asks for
    ("terminal", "terminal-wait-for-build", [0, 3]),    # never read the exit status
    ("os", "os-do-not-disturb", [0, 3]),                # opened the clock menu, no switch
    ("os", "os-impress-new-slide", [1, 3]),             # typed the title on the current slide
    ("os", "os-writer-bold-title", [0, 1, 3]),          # bold, never saved
    ("web", "web-forum-new-post", [0, 1, 3, 4]),        # posted without the body
])
def test_a_wrong_episode_scores_nothing(domain: str, scenario_id: str,
                                        episode: list[int | str]) -> None:
    assert play_on_witness(domain, scenario_id, episode) == 0.0


_UPDATE = {"start": "2026-05-12T15:00:00", "end": "2026-05-12T16:00:00", "event_id": "evt_84"}


@pytest.mark.parametrize(("domain", "scenario_id", "episode"), [
    ("mcp", "mcp-chat-post-release", [0, json.dumps({"name": "post_message", "arguments": {
        "text": "Deploy 2.4.1 finished", "channel_id": "#releases"}}), 3]),
    ("mcp", "mcp-calendar-move-review",
     [0, json.dumps({"name": "update_event", "arguments": _UPDATE}), 3]),
    ("mcp", "mcp-payments-refund-flaky", [0, json.dumps({"name": "create_refund", "arguments": {
        "amount": 12900, "charge_id": "ch_7Hq2"}}), 2]),
    ("swe", "swe-rename-function", [_bash(
        "sed -i 's/calc_total/compute_total/g' shop/cart.py shop/checkout.py tests/test_cart.py"),
        2, 3]),
    ("swe", "swe-rename-function", [json.dumps({"name": "str_replace", "arguments": {
        "path": "shop/cart.py", "old": "def calc_total(", "new": "def compute_total("}}), 2, 3]),
    ("swe", "swe-plan-migration", [json.dumps({"name": "todo_write", "arguments": {"items": [
        {"text": 'read "settings.toml" with tomllib', "done": False}]}}), 2]),
    ("terminal", "terminal-count-log-errors",
     [_keys("grep ERROR /var/log/app.log | head"), _keys("grep -c ERROR /var/log/app.log"),
      _keys("echo 37 > /app/answer.txt"), 3]),
    ("terminal", "terminal-largest-file",
     [_keys("du -a /srv | sort -n | tail -1 | cut -f2 > /app/answer.txt"), 3]),
    ("terminal", "terminal-clean-tmp-safely", [_keys("rm -rf /app/tmp/* /app/tmp/.[!.]*"), 3]),
    ("terminal", "terminal-wait-for-build", [0, _keys("echo exit=$?"), 3]),
    ("os", "os-do-not-disturb", [2, 3]),
    ("os", "os-impress-new-slide", ["pyautogui.hotkey('ctrl', 'm')", 1, 3]),
])
def test_another_right_way_still_scores(domain: str, scenario_id: str,
                                        episode: list[int | str]) -> None:
    assert play_on_witness(domain, scenario_id, episode) == 1.0


@pytest.mark.parametrize(("domain", "scenario_id", "answer"), [
    ("mcp", "mcp-notes-offsite-venue", "The Harbour Loft or the Quarry Rooms."),
    ("web", "web-shop-order-status", "Order #000172 is Pending or Canceled."),
    ("android", "android-contact-phone", "+44 20 7946 0321 or +44 20 7946 0999"),
    ("android", "android-bluetooth-device-name", "Kestrel Buds Pro or Desk Speaker"),
])
def test_an_answer_hedged_with_the_worlds_other_candidate_fails(domain: str, scenario_id: str,
                                                                answer: str) -> None:
    """The world names one confusable alternative of the answer's kind (the other venue, the
    other order's status, the work number, the previously connected device)."""
    scenario = get_domain(domain).builtin[scenario_id]
    log = EpisodeLog(scenario=scenario, answer=answer, ending="final_answer")
    checks = [c for c in scenario.reward.checks if c.check == "answer_matches"]
    assert run_checks(checks, log) == {"answer_matches": False}
    log.answer = scenario.reference_answer
    assert run_checks(checks, log) == {"answer_matches": True}
