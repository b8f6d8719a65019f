"""The gold with one step dropped, or replaced by another candidate, earns nothing unless the
episode still does the task. Played on the witness, where only the checks decide, it scored 1
in 147 of the 731 such episodes; 35 did not do the task: the alarm time typed with no picker
open, the email typed before the tick revealed its field or saved without the required
password, the post written before its form opened, the title bolded with nothing selected, the
Do Not Disturb switch clicked with its list closed, the rename typed into no rename, the slide
title typed twice or a second slide added, a refund of another customer's charge, the release
note posted twice, the flag added twice, the off-by-one kept as ``(page - 1) * size + 1``, and
the notes read instead of written. The floor scenarios are left out: their reward is the real
``FloorEnv``'s verifier, which the witness does not play.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import DOMAINS, get_domain
from agentworld_envs.registration import make
from agentworld_envs.world.scenario import Scenario
from tests.helpers.witness import witness_backend

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")

READ = "a read only informs: answer_observed decides which read showed the answer"
EARLY = "answered from the first read's result"

ALLOWED: dict[str, dict[str, str]] = {
    "mcp-notes-offsite-venue": {**dict.fromkeys(
        ["drop 0", "0 as 1", "0 as 2", "drop 1", "1 as 0", "1 as 2"], READ), "1 as 3": EARLY},
    "mcp-github-open-bugs": {"0 as 1": READ},
    "mcp-calendar-move-review": {"drop 0": "the update needs no listing",
                                 "0 as 1": "the same update twice changes nothing more"},
    "mcp-sql-march-revenue": dict.fromkeys(["drop 0", "0 as 1", "0 as 2", "0 as 5", "drop 1",
                                            "1 as 0", "1 as 2", "1 as 5", "2 as 5"], READ),
    "mcp-weather-rain-ratelimited": {"0 as 3": READ},
    "mcp-fs-config-port": dict.fromkeys(["0 as 0", "0 as 2"], READ),
    "mcp-chat-post-release": {"drop 0": "posting needs no listing of channels"},
    "mcp-payments-refund-flaky": {"0 as 1": "the first refund fails (the seed's 30% error) and "
                                            "the retry refunds the charge"},
    "mcp-crm-title-stale": dict.fromkeys(
        ["drop 0", "0 as 1", "0 as 4", "drop 1", "1 as 0", "1 as 2", "1 as 4"], READ),
    "mcp-kanban-doing-count": {"0 as 1": READ},
    "search-lighthouse-keeper": dict.fromkeys(["0 as 1", "0 as 2"], READ),
    "search-eiffel-opening-year": {"0 as 4": READ},
    "search-velmora-founder": {"0 as 1": READ},
    "search-river-length-two-hop": {**dict.fromkeys(["drop 0", "0 as 1", "drop 1", "1 as 0"],
                                                    READ), "1 as 2": EARLY},
    "search-festival-headliner-memory": dict.fromkeys(["drop 0", "0 as 1", "0 as 2"], READ),
    "search-company-employees": {"0 as 1": READ},
    "search-mountain-first-ascent": {"0 as 1": READ},
    "search-novel-translator": {"0 as 1": READ},
    "terminal-count-log-errors": {**dict.fromkeys(
        ["drop 1", "1 as 2", "1 as 3"], "the cat only shows the count already written"),
        "1 as 0": "the count written twice is the same"},
    "terminal-stop-port-8080": {
        **dict.fromkeys(["drop 0", "0 as 2", "0 as 5"], "the check before the kill informs"),
        "0 as 1": "the second kill of 4412 changes nothing more",
        "2 as 0": "the same ss check, after the kill"},
    "terminal-largest-file": {"0 as 2": "du sizes /srv too, and the right path is written"},
    "terminal-clean-tmp-safely": {"drop 0": "du only reads",
                                  "0 as 1": "the second rm finds nothing left"},
    "terminal-cron-backup": {"0 as 4": "the crontab was empty: replacing it adds the one entry"},
    "swe-fix-pagination-off-by-one": {
        "drop 0": "reading the file only informs", "0 as 0": "the tests run before the fix too",
        "0 as 2": "the fix twice: the second finds nothing to replace"},
    "swe-which-test-fails": {"0 as 1": READ},
    "swe-required-python": {"0 as 1": READ},
    "swe-add-verbose-flag": {"drop 0": "reading the file only informs",
                             "0 as 2": "--help before the change too",
                             "0 as 4": "a run with --verbose before the change reads"},
    "swe-count-todos": {"0 as 1": READ},
    "swe-git-last-author": {"0 as 1": READ},
    "swe-rename-function": {"drop 0": "grep only informs",
                            "0 as 1": "the second rename finds nothing left",
                            "0 as 2": "the tests run before the rename too",
                            "0 as 4": "sed on a missing app.py changes nothing"},
    "swe-plan-migration": {"drop 0": "reading the module only informs",
                           "0 as 1": "the same plan written twice",
                           "0 as 3": "an empty list first: the plan replaces it"},
    "android-wifi-off": {"0 as 7": "searching settings reaches the same switch"},
    "android-send-sms": {"2 as 3": "the keyboard's enter sends it too"},
    "android-contact-phone": {"0 as 1": READ},
    "android-bluetooth-device-name": {"0 as 1": READ},
    "web-shop-order-status": {"0 as 1": READ, "0 as 2": "goto opens My Orders directly"},
    "web-map-walking-time": {"0 as 1": READ},
    "web-cheapest-blue-kettle": {**dict.fromkeys(
        ["drop 0", "0 as 1", "0 as 4", "drop 1", "1 as 0", "1 as 4"], READ), "1 as 2": EARLY},
    "web-wiki-capital": {**dict.fromkeys(
        ["drop 0", "0 as 1", "0 as 4", "drop 1", "1 as 0", "1 as 4"], READ), "1 as 2": EARLY},
    "web-cart-two-mugs": {"1 as 0": "the rate limit turns down the second fill, not a click; "
                                    "the click after adds the two"},
    "os-calc-sum-column": dict.fromkeys(["drop 2", "2 as 3"], "the task does not ask to save"),
    "os-browser-bookmark": {
        **dict.fromkeys(["drop 1", "1 as 2"], "ctrl+d saves the bookmark; Enter only closes "
                                              "its bubble"),
        "1 as 0": "ctrl+d on a bookmarked page only opens its editor",
        "1 as 3": "the history opens after the bookmark is saved"},
    "os-do-not-disturb": {"0 as 2": "gsettings turns it on; the blind click after hits nothing",
                          "1 as 2": "gsettings turns it on"},
    "os-install-visio-infeasible": {"0 as 3": "the install finds no package: it looked, "
                                              "nothing changed"},
    "os-impress-new-slide": dict.fromkeys(["drop 2", "2 as 3"], "the task does not ask to save"),
    "os-make-project-folder": {"0 as 1": "os.makedirs makes the same folder"},
    "os-empty-trash-only": {"0 as 1": "the first empty is turned down (turn 1's tool_error); "
                                      "the second empties it"},
}
"""Per scenario, the mutations of its gold that still do the task, and why: ``drop i`` leaves
out gold step ``i``, ``i as c`` plays candidate ``c`` in its place (an ending ends there)."""


def _hand_written() -> list[tuple[str, str]]:
    """(domain, scenario) of the built-in scenarios that the checks decide (not the floor's
    verifier)."""
    return [(key, scenario_id) for key in DOMAINS
            for scenario_id, scenario in get_domain(key).builtin.items()
            if scenario.solution and all(c.check != "floor_verifier"
                                         for c in scenario.reward.checks)]


def _mutations(scenario: Scenario) -> Iterator[tuple[str, list[int]]]:
    """Each non-ending gold step left out, and each replaced by every other candidate."""
    gold = list(scenario.solution)
    for i, step in enumerate(gold[:-1]):
        yield f"drop {i}", gold[:i] + gold[i + 1:]
        for other in range(len(scenario.candidate_actions)):
            if other != step:
                yield f"{i} as {other}", [*gold[:i], other, *gold[i + 1:]]


def _reward(env: Any, scenario: Scenario, episode: list[int]) -> float:
    env.reset(seed=0, options={"scenario": scenario.id})
    for step in episode:
        _, reward, terminated, truncated, _ = env.step(scenario.candidate_actions[step])
        if terminated or truncated:
            return reward
    raise AssertionError(f"{scenario.id}: {episode} did not end")


def test_the_table_names_hand_written_scenarios_and_their_mutations() -> None:
    mutations = {scenario_id: {name for name, _ in _mutations(get_domain(key).builtin[scenario_id])}
                 for key, scenario_id in _hand_written()}
    assert len(mutations) == 70
    for scenario_id, allowed in ALLOWED.items():
        assert set(allowed) <= mutations[scenario_id], scenario_id


@pytest.mark.parametrize(("domain", "scenario_id"), _hand_written())
def test_a_gold_mutation_earns_only_where_it_still_does_the_task(
        domain: str, scenario_id: str) -> None:
    scenario = get_domain(domain).builtin[scenario_id]
    env = make(domain, backend=witness_backend(scenario))
    try:
        assert _reward(env, scenario, list(scenario.solution)) == 1.0
        earned = {name for name, episode in _mutations(scenario)
                  if _reward(env, scenario, episode) == 1.0}
    finally:
        env.close()
    assert earned == set(ALLOWED.get(scenario_id, {}))
