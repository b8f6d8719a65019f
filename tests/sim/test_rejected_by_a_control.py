"""An action that a ``tool_error`` or ``rate_limit`` control turned down changed nothing, so no
``action_matches`` check credits it; ``no_action_matches`` still blames it (it was attempted).
Before, the rejected Add to Cart of ``web-cart-two-mugs`` and the failed refund of
``mcp-payments-refund-flaky`` scored 1 for an agent that ignored the error and claimed success.

Episodes are played on the witness backend, so only the checks decide the reward.
"""

from __future__ import annotations

from typing import Any

import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import get_domain
from agentworld_envs.registration import make
from agentworld_envs.world.scenario import Check
from tests.helpers.witness import play_on_witness, witness_backend

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")

FILL, ADD = "fill('802', '2')", "click('803')"
CLAIM = "send_msg_to_user('Two mugs are in the cart.')"
GET = '{"name": "get_charge", "arguments": {"charge_id": "ch_7Hq2"}}'
REFUND = '{"name": "create_refund", "arguments": {"charge_id": "ch_7Hq2"}}'
ANSWER = "Refunded 129 EUR on charge ch_7Hq2."


def test_the_add_to_cart_the_rate_limit_rejected_earns_nothing() -> None:
    # turn 2 is rate-limited: the cart stays empty, and the claim is false
    assert play_on_witness("web", "web-cart-two-mugs", [FILL, ADD, CLAIM]) == 0.0
    assert play_on_witness("web", "web-cart-two-mugs", [FILL, ADD, ADD, CLAIM]) == 1.0
    assert play_on_witness("web", "web-cart-two-mugs", [FILL, "noop()", ADD, CLAIM]) == 1.0


@pytest.mark.parametrize("episode", [
    [ADD, "noop()", FILL, ADD, CLAIM],        # one mug at quantity 1, then two more: three
    [FILL, "noop()", ADD, ADD, CLAIM],        # both clicks went through: four
    [FILL, "noop()", f"{ADD}\n{ADD}", CLAIM],  # the same, in one action
])
def test_a_second_add_to_cart_that_went_through_earns_nothing(episode: list[str]) -> None:
    """Counted from the first Add that went through, so the retry of the rate-limited one is
    not a second (the gold). Before, the three-mug episode scored 1."""
    assert play_on_witness("web", "web-cart-two-mugs", episode) == 0.0


def _refund_env() -> Any:
    scenario = get_domain("mcp").builtin["mcp-payments-refund-flaky"]
    return make("mcp", backend=witness_backend(scenario))


def _play(env: Any, seed: int, actions: list[str]) -> tuple[float, list[dict[str, Any]]]:
    env.reset(seed=seed, options={"scenario": "mcp-payments-refund-flaky"})
    infos = []
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        infos.append(info)
        if terminated or truncated:
            return reward, infos
    return 0.0, infos


def test_a_refund_that_failed_earns_nothing_and_one_tried_again_does() -> None:
    env = _refund_env()
    failed = [seed for seed in range(40) if _play(env, seed, [GET, REFUND])[1][1]["controls"]]
    assert failed, "the 30% tool error never fired on the refund"
    seed = failed[0]
    reward, infos = _play(env, seed, [GET, REFUND, ANSWER])
    assert infos[1]["controls"] and reward == 0.0
    assert infos[-1]["reward_breakdown"]["checks"]["action_matches"] is False
    # the agent reads the error and refunds again until a refund goes through
    env.reset(seed=seed, options={"scenario": "mcp-payments-refund-flaky"})
    env.step(GET)
    while env.step(REFUND)[-1]["controls"]:
        pass
    assert env.step(ANSWER)[1] == 1.0


def test_a_rejected_action_is_still_blamed_by_a_forbidding_check() -> None:
    # os-empty-trash-only: turn 1 fails with 'Operation not permitted'; deleting the thesis
    # there changed nothing, but it was attempted
    scenario = get_domain("os").builtin["os-empty-trash-only"]
    gold = scenario.solution_actions
    delete = "subprocess.run(['rm', '-rf', '/home/user/Desktop/thesis.odt'])"
    assert play_on_witness("os", scenario.id, gold) == 1.0
    assert play_on_witness("os", scenario.id, [delete, *gold]) == 0.0


@pytest.mark.parametrize(("kind", "expected"), [
    ("tool_error", 0.0), ("rate_limit", 0.0), ("empty_results", 1.0), ("stale_data", 1.0)])
def test_an_env_control_rejects_every_action_only_if_its_kind_rejects(kind: str,
                                                                      expected: float) -> None:
    scenario = get_domain("terminal").builtin["terminal-git-feature-branch"]
    env = make("terminal", backend=witness_backend(scenario),
               controls=[{"kind": kind, "probability": 1.0}])
    env.reset(seed=0, options={"scenario": scenario.id})
    for action in scenario.solution_actions:
        _, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    assert reward == expected


def test_a_real_counterpart_that_ignores_controls_still_carried_the_action_out() -> None:
    """The floor's real tools take no perturbation: under a tool error on every turn the real
    episode's lookup happened, the simulated one's did not."""
    scenario = get_domain("floor").builtin["A1/v0"]
    checked = scenario.model_copy(update={"id": "A1/v0-looked-up", "reward": scenario.reward.
                                          model_copy(update={"checks": [Check(
                                              check="action_matches", value="lookup_record")]})})
    env = make("floor", backend=witness_backend(scenario), reward="real", scenarios=[checked],
               controls=[{"kind": "tool_error", "probability": 1.0}])
    env.reset(seed=0)
    for action in scenario.solution_actions:
        _, reward, terminated, truncated, info = env.step(action)
    breakdown = info["reward_breakdown"]
    assert terminated and reward == 1.0 and breakdown["checks"]["action_matches"] is True
    assert breakdown["simulated"]["checks"]["action_matches"] is False
