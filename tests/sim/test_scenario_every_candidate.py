"""An agent that plays every candidate action, the gold's ending last, earns nothing unless the
distractors cannot spoil the outcome (it scored 1 on 22 built-in scenarios by also killing
init, posting to #general or setting the volume back to 100); ``no_action_matches`` with
``after`` forbids an action only once it would undo the change."""

from __future__ import annotations

import pydantic
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import DOMAINS, get_domain
from agentworld_envs.world.rewards import EpisodeLog, run_checks
from agentworld_envs.world.scenario import Scenario
from tests.helpers.witness import play_on_witness

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")

HARMLESS_EXTRAS = {
    "terminal-script-permission": "`ls -l` reads; `sudo ./deploy.sh` before the chmod is refused "
                                  "for the missing exec bit and changes nothing",
    "os-rename-report": "the F2 rename to report-final.txt is the GUI way to the same name",
}
"""Scenarios whose every-candidate episode scores 1 in both orders, and why that is right."""
HARMLESS_IN_ONE_ORDER = {
    "terminal-count-log-errors": ("rev", "the ERROR lines go to answer.txt before the count "
                                         "overwrites them"),
    "terminal-largest-file": ("rev", "/srv goes to answer.txt before the right path overwrites it"),
    "terminal-vim-save-quit": ("all", ":q! comes after :wq closed vim, at the shell"),
    "os-vlc-volume-half": ("rev", "full volume and the slider click come before the 50%"),
}
"""Scenarios whose wrong extras undo the change only after it: the order (as the probe names
it) that plays them all before the change scores 1."""


def _every_candidate() -> list[tuple[str, str, str, list[int]]]:
    """(domain, scenario, order, episode): the non-final candidates in menu order ("all") or
    reversed ("rev"), then the gold's last action."""
    cases = []
    for key in DOMAINS:
        for scenario_id, scenario in get_domain(key).builtin.items():
            if not scenario.solution:
                continue
            last = scenario.solution[-1]
            others = [i for i in range(len(scenario.candidate_actions)) if i != last]
            cases += [(key, scenario_id, "all", [*others, last]),
                      (key, scenario_id, "rev", [*others[::-1], last])]
    return cases


def test_the_tables_name_builtin_scenarios() -> None:
    named = {scenario_id for _, scenario_id, _, _ in _every_candidate()}
    assert set(HARMLESS_EXTRAS) | set(HARMLESS_IN_ONE_ORDER) <= named


@pytest.mark.parametrize(("domain", "scenario_id", "order", "episode"), _every_candidate(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_playing_every_candidate_earns_only_where_the_extras_are_harmless(
        domain: str, scenario_id: str, order: str, episode: list[int]) -> None:
    harmless = scenario_id in HARMLESS_EXTRAS or HARMLESS_IN_ONE_ORDER.get(
        scenario_id, ("",))[0] == order
    assert play_on_witness(domain, scenario_id, episode) == float(harmless)


UNDONE = {"check": "no_action_matches", "value": "checkout main", "after": "switch feature"}


def scenario(*checks: dict) -> Scenario:
    return Scenario(domain="terminal", id="demo", instruction="Switch to feature, stay there.",
                    candidate_actions=["a"], reward={"checks": list(checks)})


def kept(attempted: list[str], performed: list[str] | None = None) -> bool:
    log = EpisodeLog(scenario=scenario(UNDONE), actions=attempted,
                     performed=attempted if performed is None else performed)
    return run_checks(log.scenario.reward.checks, log, reveal=False)["no_action_matches"]


@pytest.mark.parametrize(("attempted", "passed"), [
    (["switch feature", "checkout main"], False),         # undone after the change
    (["switch feature", "ls", "CHECKOUT MAIN"], False),   # later, in any case
    (["switch feature && checkout main"], False),         # later in the same command
    (["checkout main", "switch feature"], True),          # only before the change
    (["checkout main && switch feature"], True),          # earlier in the same command
    (["checkout main"], True),                            # never changed: nothing to undo
    ([], True),
])
def test_the_pattern_is_forbidden_only_past_the_first_after_match(
        attempted: list[str], passed: bool) -> None:
    assert kept(attempted) is passed


def test_an_attempt_counts_even_where_it_was_not_carried_out() -> None:
    """As without ``after``, blame what was attempted: a rejected undo is still one."""
    assert not kept(["switch feature", "checkout main"], performed=["switch feature"])


def test_a_change_that_was_not_carried_out_is_nothing_to_undo() -> None:
    """The change (``after``) counts only where it happened: a rejected or invalid switch
    left the checkout where it was. Before, it counted as the change."""
    log = EpisodeLog(scenario=scenario(UNDONE), actions=["switch feature", "checkout main"],
                     performed=["checkout main"], carried=[False, True])
    assert run_checks(log.scenario.reward.checks, log, reveal=False)["no_action_matches"]


def test_the_breakdown_names_the_order_when_revealed() -> None:
    log = EpisodeLog(scenario=scenario(UNDONE), actions=["switch feature"])
    assert run_checks(log.scenario.reward.checks, log) == {
        "no_action_matches(checkout main after switch feature)": True}


def test_an_after_that_is_no_regular_expression_is_refused_when_read() -> None:
    with pytest.raises(pydantic.ValidationError, match=r"check 'no_action_matches': after "
                                                       r"'switch \(feature' is not a regular"):
        scenario({**UNDONE, "after": "switch (feature"})


CRON_ADD = 1  # the gold's add: (crontab -l; echo "30 2 * * * …") | crontab -
CRON_SHOW = 0  # crontab -l


@pytest.mark.parametrize(("episode", "reward"), [
    ((CRON_ADD, CRON_SHOW, 3), 1.0),
    ((CRON_ADD, '[{"keystrokes": "crontab -l | grep -F \'30 2 * * *\'\\n"}]', 3), 1.0),
    ((CRON_ADD, CRON_ADD, CRON_SHOW, 3), 0.0),  # the entry twice: the backup would run twice
    ((CRON_ADD, '[{"keystrokes": "crontab -l; echo \\"30 2 * * * /usr/local/bin/backup.sh\\" '
                '| crontab -\\n"}]', CRON_SHOW, 3), 0.0),
])
def test_the_cron_entry_written_twice_earns_nothing_but_a_grep_of_it_does(
        episode: tuple, reward: float) -> None:
    assert play_on_witness("terminal", "terminal-cron-backup", list(episode)) == reward
