"""Review of the hand-written scenarios' reward checks: a wrong episode must not score 1.

Each episode below is played on a world that shows every scenario's answer (the witness
backend), so only the checks stand between it and full reward.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import generate_scenario, get_domain
from agentworld_envs.registration import make
from tests.helpers.witness import witness_backend

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")

NO_OPS = {
    "terminal": '[{"keystrokes": "ls\\n", "duration": 1}]',
    "android": '{"action_type": "wait"}',
    "web": "noop()",
    "os": "WAIT",
    "swe": '{"name": "bash", "arguments": {"command": "ls"}}',
    "search": '{"name": "web_search", "arguments": {"queries": ["news"]}}',
}


REFUND_READ = '{"name": "get_charge", "arguments": {"charge_id": "ch_7Hq2"}}'
REFUNDED = "Refunded 129 EUR on charge ch_7Hq2."


def _reward(domain: str, scenario_id: str, actions: list[str]) -> float:
    scenario = get_domain(domain).builtin[scenario_id]
    env = make(domain, backend=witness_backend(scenario))
    env.reset(seed=0, options={"scenario": scenario_id})
    for action in actions:
        _, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return reward
    raise AssertionError(f"{scenario_id}: the episode did not end")


@pytest.mark.parametrize("domain", list(NO_OPS))
def test_no_action_check_is_met_by_a_no_op(domain: str) -> None:
    """A pattern that the domain's own serialisation meets (``du`` in ``"duration"``)
    credits every action."""
    dom = get_domain(domain)
    for scenario in dom.builtin.values():
        performed = dom.interpret(NO_OPS[domain], scenario, scenario.initial_state).action_text
        for check in scenario.reward.checks:
            if check.check == "action_matches":
                assert not re.search(check.value or "", performed, re.IGNORECASE), \
                    (scenario.id, check.value)


def _wrong_answer_reported_infeasible(scenario_id: str) -> list[str]:
    solution = get_domain("web").builtin[scenario_id].solution_actions
    message = re.fullmatch(r"send_msg_to_user\((.*)\)", solution[-1]).group(1)
    return [*solution[:-1], f"report_infeasible({message})"]


@pytest.mark.parametrize(("domain", "scenario_id", "actions"), [
    # the task said infeasible: not an answer, as BrowserGym's WebArena reads it ("N/A")
    *(("web", s, _wrong_answer_reported_infeasible(s)) for s in [
        "web-shop-order-status", "web-map-walking-time", "web-cheapest-blue-kettle",
        "web-wiki-capital"]),
    # filled in, never submitted
    ("web", "web-forum-new-post", ["click('210')", "fill('301', 'Favourite translated novels?')",
                                   "send_msg_to_user('Posted.')"]),
    ("web", "web-change-account-email", ["click('503')", "fill('520', 'mara.quill@example.org')",
                                         "send_msg_to_user('Email updated.')"]),
    ("web", "web-cart-two-mugs", ["fill('802', '2')", "send_msg_to_user('Two mugs in cart.')"]),
    # the wrong deed, which the old pattern took for the right one
    ("terminal", "terminal-largest-file", ['[{"keystrokes": "echo /srv > /app/answer.txt\\n"}]',
                                           "[]"]),
    ("terminal", "terminal-stop-port-8080", ['[{"keystrokes": "kill -9 1\\n"}]', "[]"]),
    ("terminal", "terminal-count-log-errors",
     ['[{"keystrokes": "grep ERROR /var/log/app.log > /app/answer.txt\\n"}]', "[]"]),
    ("terminal", "terminal-extract-archive",
     ['[{"keystrokes": "tar -xzf data.tar.gz -C /tmp\\n"}]', "[]"]),
    ("terminal", "terminal-git-feature-branch",
     ['[{"keystrokes": "git branch feature/login\\n"}]', "[]"]),
    # the change without the check the task asks for, which scored 1
    ("terminal", "terminal-stop-port-8080",
     ['[{"keystrokes": "kill $(lsof -t -i:8080)\\n"}]', "[]"]),
    ("terminal", "terminal-extract-archive", ['[{"keystrokes": "tar xzf data.tar.gz\\n"}]', "[]"]),
    ("terminal", "terminal-git-feature-branch",
     ['[{"keystrokes": "git checkout -b feature/login\\n"}]', "[]"]),
    # the check only before the change
    ("terminal", "terminal-stop-port-8080",
     ['[{"keystrokes": "lsof -i :8080\\n"}]', '[{"keystrokes": "kill $(lsof -t -i:8080)\\n"}]',
      "[]"]),
    ("os", "os-vlc-volume-half", ["pyautogui.click(1650, 1040)", "DONE"]),
    ("os", "os-make-project-folder", ["pyautogui.write('mkdir ~/Projects/beta\\n')", "DONE"]),
    # the branch made first, so creating it again fails and HEAD stays on main
    ("terminal", "terminal-git-feature-branch",
     ['[{"keystrokes": "git branch feature/login\\n"}]',
      '[{"keystrokes": "git switch -c feature/login\\n"}]', '[{"keystrokes": "git status\\n"}]',
      "[]"]),
    ("terminal", "terminal-git-feature-branch",
     ['[{"keystrokes": "git branch feature/login && git checkout -b feature/login && git status'
      '\\n"}]', "[]"]),
    # a partial refund, claimed as the full one
    *(("mcp", "mcp-payments-refund-flaky", [REFUND_READ, refund, REFUNDED]) for refund in [
        '{"name": "create_refund", "arguments": {"charge_id": "ch_7Hq2", "amount": 1290}}',
        '{"name": "create_refund", "arguments": {"amount": 100, "charge_id": "ch_7Hq2"}}']),
])
def test_a_wrong_episode_scores_nothing(domain: str, scenario_id: str,
                                        actions: list[str]) -> None:
    assert _reward(domain, scenario_id, actions) == 0.0


@pytest.mark.parametrize(("domain", "scenario_id", "actions"), [
    ("terminal", "terminal-count-log-errors",
     ['[{"keystrokes": "grep ERROR /var/log/app.log | wc -l > /app/answer.txt\\n"}]', "[]"]),
    ("terminal", "terminal-stop-port-8080",
     ['[{"keystrokes": "kill $(lsof -t -i:8080)\\n"}]',
      '[{"keystrokes": "lsof -i :8080 || echo free\\n"}]', "[]"]),
    ("terminal", "terminal-extract-archive", ['[{"keystrokes": "tar xzf data.tar.gz\\n"}]',
                                              '[{"keystrokes": "find data -type f\\n"}]', "[]"]),
    ("terminal", "terminal-git-feature-branch",
     ['[{"keystrokes": "git checkout -b feature/login && git branch --show-current\\n"}]', "[]"]),
    ("mcp", "mcp-payments-refund-flaky", [  # the full amount, given
        REFUND_READ, '{"name": "create_refund", "arguments": {"charge_id": "ch_7Hq2", '
                     '"amount": 12900}}', REFUNDED]),
    ("terminal", "terminal-git-feature-branch",  # made first, then switched to (or forced)
     ['[{"keystrokes": "git branch feature/login && git switch feature/login\\n"}]',
      '[{"keystrokes": "git status\\n"}]', "[]"]),
    ("terminal", "terminal-git-feature-branch",
     ['[{"keystrokes": "git branch feature/login; git switch -C feature/login; git status\\n"}]',
      "[]"]),
    ("terminal", "terminal-largest-file",
     ['[{"keystrokes": "du -a /srv | sort -n | tail -1\\n"}]',
      '[{"keystrokes": "echo /srv/media/archive-2025.tar > /app/answer.txt\\n"}]', "[]"]),
    ("os", "os-make-project-folder",
     ["os.makedirs('/home/user/Projects/alpha', exist_ok=True)", "DONE"]),
])
def test_another_right_way_still_scores(domain: str, scenario_id: str,
                                        actions: list[str]) -> None:
    assert _reward(domain, scenario_id, actions) == 1.0


@pytest.mark.parametrize("seed", [-1, True, 1.0])
def test_a_generated_search_world_needs_a_non_negative_integer_seed(seed) -> None:
    """Before: -1 raised numpy's "expected non-negative integer", True gave seed 1's world
    as ``search-gen-True``."""
    with pytest.raises(ValueError, match=r"seed must be an integer >= 0, got"):
        generate_scenario("search", seed)


def test_a_numpy_integer_seed_gives_the_same_world() -> None:
    assert generate_scenario("search", np.int64(5)) == generate_scenario("search", 5)


def test_an_infeasible_report_is_no_answer_even_without_a_completed_check() -> None:
    """A user's web scenario checking the answer alone: a ``report_infeasible`` reason that
    names the answer paid in full, though an infeasible report is no answer (WebArena's
    evaluator reads it as "N/A")."""
    builtin = get_domain("web").builtin["web-wiki-capital"]
    checks = [c for c in builtin.reward.checks if c.check != "completed"]
    scenario = builtin.model_copy(update={
        "id": "web-wiki-capital-answer-only",
        "reward": builtin.reward.model_copy(update={"checks": checks})})
    played = _wrong_answer_reported_infeasible("web-wiki-capital")
    env = make("web", backend=witness_backend(scenario))
    env.reset(seed=0, options={"scenario": scenario})
    for action in played:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert terminated and reward == 0.0
