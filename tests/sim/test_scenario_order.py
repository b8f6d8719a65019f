"""``action_matches`` with ``after``: a verification the task asks for after a change counts only
when it follows the change (an agent that ran the tests only before its fix scored 1)."""

from __future__ import annotations

import pydantic
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import get_domain
from agentworld_envs.world.rewards import EpisodeLog, run_checks
from agentworld_envs.world.scenario import Scenario
from tests.helpers.witness import play_on_witness

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")

VERIFIED = {"check": "action_matches", "value": "pytest", "after": "fix"}


def scenario(*checks: dict) -> Scenario:
    return Scenario(domain="swe", id="demo", instruction="Fix it, then run the tests.",
                    candidate_actions=["a"], reward={"checks": list(checks)})


def verified(performed: list[str], attempted: list[str] | None = None) -> bool:
    log = EpisodeLog(scenario=scenario(VERIFIED), actions=attempted or performed,
                     performed=performed)
    return run_checks(log.scenario.reward.checks, log, reveal=False)["action_matches"]


@pytest.mark.parametrize(("performed", "passed"), [
    (["cat core.py", "fix core.py", "pytest -q"], True),
    (["pytest -q", "fix core.py", "PYTEST -q"], True),  # a second run, after the fix
    (["pytest -q", "fix core.py"], False),               # the tests ran only before the fix
    (["pytest -q", "cat core.py"], False),               # never fixed
    (["fix core.py && pytest -q"], True),                # later in the same command
    (["pytest -q && fix core.py"], False),               # earlier in the same command
    ([], False),
])
def test_the_pattern_counts_only_past_the_first_after_match(
        performed: list[str], passed: bool) -> None:
    assert verified(performed) is passed


def test_a_change_that_was_not_carried_out_is_no_change() -> None:
    """``after`` reads the carried-out actions, as the pattern does: a rejected edit is none."""
    assert not verified(["pytest -q"], attempted=["fix core.py", "pytest -q"])


def test_the_breakdown_names_the_order_only_when_revealed() -> None:
    checks = scenario(VERIFIED, {"check": "action_matches", "value": "fix"}).reward.checks
    log = EpisodeLog(scenario=scenario(), performed=["fix", "pytest"])
    assert run_checks(checks, log) == {"action_matches(pytest after fix)": True,
                                       "action_matches(fix)": True}
    assert run_checks(checks, log, reveal=False) == {"action_matches": True,
                                                     "action_matches#2": True}


@pytest.mark.parametrize(("check", "message"), [
    ({**VERIFIED, "after": "fix (core"}, r"check 'action_matches': after 'fix \(core' is not "
                                         "a regular expression"),
    ({**VERIFIED, "after": ""}, r"(?s)checks\.0\.after.*at least 1 character"),
    ({**VERIFIED, "check": "observation_contains"}, "check 'observation_contains' takes no after"),
    ({"check": "called_tool", "value": "bash", "after": "fix"}, "check 'called_tool' takes no"),
])
def test_an_after_that_could_not_order_anything_is_refused_when_read(check, message) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        scenario(check)


@pytest.mark.parametrize(("scenario_id", "verified_before_the_change"), [
    ("swe-fix-pagination-off-by-one", [1, 0, 2, 3]),  # read, tests, fix, report
    ("swe-add-verbose-flag", [0, 2, 1, 3]),           # read, --help, add the flag, report
    ("swe-rename-function", [0, 2, 1, 3]),            # grep, tests, rename, report
])
def test_a_builtin_verification_before_the_change_earns_nothing(
        scenario_id: str, verified_before_the_change: list[int]) -> None:
    gold = get_domain("swe").builtin[scenario_id].solution
    assert sorted(gold) == sorted(verified_before_the_change)  # the same steps, reordered
    assert play_on_witness("swe", scenario_id, verified_before_the_change) == 0.0
    assert play_on_witness("swe", scenario_id, gold) == 1.0
