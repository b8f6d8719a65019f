"""Scenario models, the hand-written catalogues, the generators and the system prompts."""

from __future__ import annotations

import re

import gymnasium as gym
import pydantic
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.domains import DOMAINS, generate_scenario, get_domain
from agentworld_envs.registration import env_id, make
from agentworld_envs.world.prompt_sets import PromptSet
from agentworld_envs.world.scenario import DOMAIN_KEYS, Control, Scenario
from tests.helpers.witness import witness_backend

HANDWRITTEN = ["mcp", "search", "terminal", "swe", "android", "web", "os"]
NO_OP = {"mcp": "I don't know.", "search": "I don't know.", "swe": "Done.", "floor": "Done.",
         "terminal": "[]", "android": '{"action_type": "status", "goal_status": "complete"}',
         "web": "send_msg_to_user('Done.')", "os": "DONE"}
"""An action that ends the episode at once, claiming success without doing anything."""


def test_the_domain_table_has_one_entry_per_domain_key() -> None:
    """The keys are written once (``DomainKey``); the table that finds each domain's folder
    must follow them."""
    assert tuple(DOMAINS) == DOMAIN_KEYS and {get_domain(k).key for k in DOMAINS} == set(DOMAINS)


def play(env: gym.Env, scenario: Scenario, actions: list[str]) -> tuple[float, dict]:
    env.reset(seed=0, options={"scenario": scenario})
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward, info
    raise AssertionError(f"{scenario.id}: the episode did not end")


@pytest.mark.parametrize("domain", HANDWRITTEN)
def test_each_domain_ships_ten_distinct_hand_written_scenarios(domain: str) -> None:
    scenarios = get_domain(domain).builtin
    assert len(scenarios) >= 10
    assert all(sid.startswith(f"{domain}-") for sid in scenarios)
    assert len({s.instruction for s in scenarios.values()}) == len(scenarios)
    assert all(s.solution and len(s.candidate_actions) >= 2 for s in scenarios.values())


@pytest.mark.parametrize("domain", [*HANDWRITTEN, "floor"])
def test_gold_solutions_score_one_and_a_no_op_scores_zero(domain: str) -> None:
    """The world shows what an answer rests on (:func:`witness_backend`); floor's gold is scored
    against the real tools (``reward="real"``): its simulated reward reads observations."""
    kwargs = {"reward": "real"} if domain == "floor" else {}
    for scenario in get_domain(domain).builtin.values():
        env = make(domain, backend=witness_backend(scenario), **kwargs)
        reward, info = play(env, scenario, scenario.solution_actions)
        assert reward == 1.0, (scenario.id, info["reward_breakdown"])
        reward, info = play(env, scenario, [NO_OP[domain]])
        assert reward == 0.0, (scenario.id, info["reward_breakdown"])


@pytest.mark.parametrize("domain", ["search", "mcp"])
def test_generators_give_thousands_of_distinct_seeded_scenarios(domain: str) -> None:
    scenarios = [generate_scenario(domain, seed) for seed in range(2000)]
    assert len({(s.instruction, s.reference_answer, s.world) for s in scenarios}) == 2000
    assert generate_scenario(domain, 17) == scenarios[17]
    assert all(s.fictional and s.reference_answer for s in scenarios)
    assert all(s.candidate_actions[s.solution[-1]].endswith(f"{s.reference_answer}.")
               for s in scenarios)


def test_generated_mcp_servers_carry_targeted_perturbations() -> None:
    scenarios = [generate_scenario("mcp", seed) for seed in range(300)]
    kinds = {c.kind for s in scenarios for c in s.controls}
    assert kinds == {"tool_error", "rate_limit", "empty_results", "stale_data"}
    for scenario in scenarios:
        assert all(set(c.tools or []) <= set(scenario.tool_names) for c in scenario.controls)


@pytest.mark.parametrize("domain", ["search", "mcp"])
def test_generated_scenarios_are_drawn_from_the_seed_and_their_gold_passes(domain: str) -> None:
    """The gold answer matches; the placeholder never shows it, so the check that the answer
    was observed fails in the simulation and, for MCP, passes on the twin (no perturbation)."""
    env = make(domain, backend="scripted", scenarios="generated", controls=[])
    ids = [env.reset(seed=s)[1]["scenario_id"] for s in (5, 6, 5)]
    assert ids[0] == ids[2] != ids[1]
    assert re.fullmatch(rf"{domain}-gen-\d+", ids[0])
    for seed in range(5):
        scenario = generate_scenario(domain, seed).model_copy(update={"controls": []})
        reward, info = play(env, scenario, scenario.solution_actions)
        breakdown = info["reward_breakdown"]
        assert breakdown["checks"] == {"answer_matches": True, "answer_observed": False}
        assert reward == 0.0
        if domain == "mcp":
            assert breakdown["real"]["reward"] == 1.0 and not breakdown["agree"]


def test_domains_without_a_generator_refuse_generated_scenarios() -> None:
    with pytest.raises(ValueError, match="no scenario generator"):
        gym.make(env_id("web"), backend="scripted", scenarios="generated")


@pytest.mark.parametrize(("fields", "message"), [
    ({"reward": {"checks": [{"check": "answer_matches"}]}}, "needs a reference answer"),
    ({"candidate_actions": ["a", "a"]}, "repeat"),
    ({"solution": [3]}, "index"),
    ({"controls": [{"kind": "custom"}]}, "needs a note"),
    ({"reward": {"checks": [{"check": "called_tool"}]}}, "needs a value"),
    ({"domain": "chess"}, "domain"),
])
def test_invalid_scenarios_are_rejected(fields: dict, message: str) -> None:
    data = {"id": "x", "domain": "mcp", "instruction": "do it", "candidate_actions": ["a"],
            "tools": [{"name": "t"}], **fields}
    with pytest.raises(pydantic.ValidationError, match=message):
        Scenario.model_validate(data)


def test_domains_check_what_their_scenarios_need() -> None:
    with pytest.raises(ValueError, match="no initial_state"):
        get_domain("terminal").resolve({"id": "t", "instruction": "x", "candidate_actions": ["[]"]})
    with pytest.raises(ValueError, match="offers no tools"):
        get_domain("mcp").resolve({"id": "m", "instruction": "x", "candidate_actions": ["a"]})
    with pytest.raises(ValueError, match="is for search"):
        get_domain("mcp").resolve(get_domain("search").builtin["search-eiffel-opening-year"])
    with pytest.raises(ValueError, match="unknown mcp scenario"):
        get_domain("mcp").resolve("mcp-missing")
    assert get_domain("floor").resolve("C3").id == "C3/v0"


def test_tools_given_in_short_form_are_normalised_and_scenario_tools_override_defaults() -> None:
    scenario = get_domain("search").resolve({
        "id": "s", "instruction": "x", "candidate_actions": ["a"],
        "tools": [{"name": "web_search", "description": "custom"}]})
    tools = {t["function"]["name"]: t for t in get_domain("search").tools(scenario)}
    assert set(tools) == {"web_search", "web_extractor", "dict_memory"}
    assert tools["web_search"]["function"]["description"] == "custom"
    assert tools["web_search"]["function"]["parameters"] == {"type": "object", "properties": {}}


@pytest.mark.parametrize("domain", list(DOMAINS))
def test_builtin_system_prompts_fill_every_slot_and_hold_nothing_of_the_episode(
        domain: str) -> None:
    handler = get_domain(domain)
    scenario = handler.resolve("C3") if domain == "floor" else next(iter(handler.builtin.values()))
    assert PromptSet.builtin().system_prompt(domain) is None
    template = handler.prompt_template
    slots = ("{tool_definitions}", "{demonstrations}") + (
        ("{environment}",) if domain == "floor" else ())
    assert all(slot in template for slot in slots)
    prompt = handler.system_prompt(scenario, fictional=True)
    assert not re.search(r"\{(tool_definitions|demonstrations|environment)\}", prompt)
    assert ("<predicted_observation>" in prompt) is handler.uses_tags
    assert handler.catalog.demonstrations[0].observation in prompt
    if handler.tools(scenario):
        assert all(t["function"]["name"] in prompt for t in handler.tools(scenario))
    else:
        assert handler.catalog.action_space.splitlines()[0] in prompt
    if domain == "floor":  # its trained layout: the task and world notes in the system prompt
        assert scenario.instruction in prompt and "This world is fictional" in prompt
    else:
        assert scenario.instruction not in prompt and "This world is fictional" not in prompt
        assert "Simulation Instruction" in prompt


def test_world_notes_and_reference_answer_reach_the_world_model_not_the_agent() -> None:
    backend = ScriptedBackend(keep_requests=True)
    env = make("search", backend=backend)
    obs, info = env.reset(seed=0, options={"scenario": "search-lighthouse-keeper"})
    env.step('{"name": "web_search", "arguments": {"queries": ["Corran Point"]}}')
    [[request]] = backend.batches
    system, first_turn = request.messages[0]["content"], request.messages[1]["content"]
    instruction = first_turn.split("**Simulation Instruction:**\n", 1)[1].split("\n\n**")[0]
    assert "Maren Holt" in instruction and "Abel Ruske" in instruction
    assert "Maren Holt" not in system and "Maren Holt" not in obs
    assert info["candidate_actions"] == env.unwrapped.candidate_actions()
    assert [t["function"]["name"] for t in info["tools"]] == [
        "web_search", "web_extractor", "dict_memory"]


def test_control_validation() -> None:
    assert Control(kind="rate_limit").probability == 1.0
    with pytest.raises(pydantic.ValidationError):
        Control(kind="tool_error", probability=1.5)
