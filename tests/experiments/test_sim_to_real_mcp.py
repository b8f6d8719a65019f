"""The sim-to-real experiment on generated MCP servers: the split, the twin as the real env, and
tasks that a policy blind to observations cannot solve."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from agentworld_envs.cli_errors import UsageError
from agentworld_envs.domains.mcp.servers import mcp_server_scenario
from agentworld_envs.domains.mcp.twin import McpTwin
from agentworld_envs.world.controls import control_text
from agentworld_envs.world.scenario import Control
from trainers.experiments import sim_to_real
from trainers.experiments.sim_to_real.mcp_record_controls import (
    ASKED_FIELDS,
    MCP_CONTROLS,
    McpRecordSimulator,
    shown_records,
)
from trainers.experiments.sim_to_real.tasks import answer_values


@pytest.fixture(scope="module")
def s2r():
    return sim_to_real


def _task(s2r, tmp_path: Path, **settings):
    args = s2r.Args(**{"task": "mcp:inventory", "out": tmp_path, "world_model": "scripted",
                       **settings})
    return args, s2r.make_task(args)


def test_the_split_is_one_family_with_disjoint_servers(s2r, tmp_path: Path) -> None:
    _, task = _task(s2r, tmp_path, mcp_train=4, mcp_eval=6)
    assert len(task.train) == 4 and len(task.eval) == 6 and not set(task.train) & set(task.eval)
    servers = [task.scenario(v) for v in task.train + task.eval]
    assert {s.mcp.family for s in servers} == {"inventory"}  # held out: no id or name seen
    seen = set().union(*(s2r.identities(task.scenario(v)) for v in task.train))
    assert {r["sku"] for v in task.train for r in task.scenario(v).mcp.records} <= seen
    assert all(not s2r.identities(task.scenario(v)) & seen for v in task.eval)
    offered = set().union(*(answer_values(task.scenario(v)) for v in task.train))
    assert all(not answer_values(task.scenario(v)) & offered for v in task.eval)
    with pytest.raises(UsageError, match="no generated MCP family"):
        _task(s2r, tmp_path, task="mcp:bakery")


@pytest.mark.parametrize("family", ["inventory", "calendar", "tickets", "crm", "fleet"])
def test_no_held_out_server_offers_an_answer_value_a_training_server_offered(
        s2r, tmp_path: Path, family: str) -> None:
    """The committed split (8 training, 24 held-out servers): before answer values were
    filtered, 4 of calendar's 24 held-out answers were a training server's answer, and 19 of
    the others offered a training server's value (docs/sim_to_real.md)."""
    _, task = _task(s2r, tmp_path, task=f"mcp:{family}")
    assert len(task.eval) == 24
    offered = set().union(*(answer_values(task.scenario(v)) for v in task.train))
    assert len(offered) >= 8 * 3 - 4  # the answer and its two wrong candidates, of 8 servers
    for variant in task.eval:
        scenario = task.scenario(variant)
        assert len(answer_values(scenario)) == 3 and not answer_values(scenario) & offered
        checked = next(c for c in scenario.reward.checks if c.check == "answer_matches")
        assert scenario.reference_answer not in checked.excludes


def test_the_real_env_is_the_twin_and_the_prompt_is_the_instruction(s2r, tmp_path: Path) -> None:
    _, task = _task(s2r, tmp_path, mcp_train=1, mcp_eval=1)
    variant = task.eval[0]
    env, prompt = task.play(variant, None, seed=0)
    scenario = task.scenario(variant)
    assert prompt == scenario.instruction and env.unwrapped.config.mode == "real"
    call = next(c for c in env.candidate_actions() if c.startswith("{"))
    observation, *_, info = env.step(call)
    fired = [c for c in scenario.controls if control_text(c) in info["controls"]]
    assert observation == McpTwin(scenario).step(call, fired).observation
    assert info["world_model"]["called"] is False


@pytest.mark.parametrize("seed", range(40))
def test_the_answer_lives_only_in_the_records(seed: int) -> None:
    """Each server's answer is in no prompt or call a blind policy reads, and one right answer
    stands among wrong ones that the records also make plausible."""
    scenario = mcp_server_scenario(seed)
    answers = [c for c in scenario.candidate_actions if not c.startswith("{")]
    right = scenario.candidate_actions[scenario.solution[-1]]
    assert right in answers and len(answers) >= 3 and len(set(answers)) == len(answers)
    value = right.removeprefix("The answer is ").rstrip(".")
    calls = [c for c in scenario.candidate_actions if c.startswith("{")]
    assert value not in scenario.instruction and not any(value in c for c in calls)
    twin = McpTwin(scenario)
    seen = [twin.step(scenario.candidate_actions[i]).observation
            for i in scenario.solution[:-1]]
    assert any(value in observation for observation in seen)  # reading the records finds it


def test_the_value_features_mark_the_observed_answer(s2r) -> None:
    policy = s2r.LinearPolicy(np.random.default_rng(0), 0.1, 0.0)
    observation = '{"sku": "SKU-5106", "name": "Tirkrux pump", "in_stock": 618}'

    def keys(candidate: str) -> set[int]:
        return set(policy.features("How many Tirkrux pumps?", observation, 1, candidate)[0])

    observed = keys("The answer is 618.") - keys("The answer is 593.")
    unseen = keys("The answer is 593.") - keys("The answer is 618.")
    value = {zlib.crc32(b"value:observed") % policy.size}
    assert value <= observed and {zlib.crc32(b"value:unseen") % policy.size} <= unseen
    # the floor candidates hold no such values: their features are unchanged
    submit = '{"name": "submit_decision", "arguments": {"record_id": "CMP-31"}}'
    assert not [w for w in s2r.words(submit) if re.search(r"\d", w) and not s2r.is_id(w)]


def test_a_name_the_tools_returned_is_an_observed_value(s2r) -> None:
    """A candidate answer's value without digits (tickets' assignee) is marked observed when
    the observation shows it, not otherwise; the answers' shared opening (``the answer is``)
    never is, and answers that share no opening (the floor's "The task is complete.") hold no
    value, so their features are as they were."""
    from trainers.experiments.sim_to_real.linear import answer_templates

    policy = s2r.LinearPolicy(np.random.default_rng(0), 0.1, 0.0)
    shown = '{"ticket_id": "TCK-4266", "assignee": "Suvqueith Quaexquuv", "note": "the answer is"}'
    answers = ["The answer is Suvqueith Quaexquuv.", "The answer is Condtoush Vamgind."]
    call = '{"name": "get_ticket", "arguments": {"ticket_id": "TCK-4266"}}'
    template = frozenset({"the", "answer", "is"})
    assert answer_templates([call, *answers]) == [None, template, template]
    value = zlib.crc32(b"value:observed") % policy.size

    def keys(candidate: str, opening: frozenset[str] | None) -> set[int]:
        return set(policy.features("Who is assigned to TCK-4266?", shown, 1, candidate,
                                   opening)[0])

    assert value in keys(answers[0], template)
    assert value not in keys(answers[1], template)  # neither name shown, nor the opening
    floor = ["The task is complete.", "I could not determine the answer."]
    assert answer_templates(floor) == [None, None]
    assert value not in keys(floor[1], None)


def test_real_training_beats_the_blind_bound_on_held_out_servers(s2r, tmp_path: Path) -> None:
    args, task = _task(s2r, tmp_path, mcp_train=4, mcp_eval=8, batch=32, updates=6)
    agent = s2r.LinearAgent(args, task, "real", seed=0, world_model=None)
    calls: dict[str, list[str]] = {}
    assert s2r.balanced(task, s2r.evaluate(task, agent, calls)) == 0.0
    assert set(calls) == set(task.eval)
    for _ in range(args.updates):
        agent.update(real=True)
    outcomes = s2r.evaluate(task, agent, calls)
    assert s2r.balanced(task, outcomes) > 1 / 3  # one of three, drawn blind
    tools = {tool["function"]["name"] for tool in task.scenario(task.eval[0]).tools}
    named = tools | {f"{tool} (other)" for tool in tools} | {"answer"}
    for variant, won in outcomes.items():  # what it called, then its answer if it gave one
        assert set(calls[variant]) <= named
        assert not won or (calls[variant][-1] == "answer" and len(calls[variant]) > 1)
    solution = task.solution(task.eval[0])
    other = next(c for c in task.scenario(task.eval[0]).candidate_actions
                 if c.startswith("{") and c not in solution)
    assert s2r.call_names([other, other, *solution], solution) == [
        *[f"{json.loads(other)['name']} (other)"] * 2, *s2r.call_names(solution, solution)]
    assert s2r.call_names(solution, solution)[-1] == "answer"
    run = {"calls": {"a": ["get_item (other)", "get_item (other)", "get_item", "answer"],
                     "b": ["answer"], "c": ["answer"]}}
    assert s2r.final_calls([run, run]) == {"answer": 4,
                                           "get_item (other) x2 > get_item > answer": 2}
    agent.close()


def _play(backend, scenario, actions: list[str], twin: bool = False) -> list[dict]:
    """Each step's info (and ``observation``) of ``actions`` in the simulated env on
    ``backend``; ``twin``: with the twin played alongside, its observation in the info."""
    env = gym.make("AgentWorld/MCP-v0", backend=backend, real_counterpart=twin,
                   reveal_reference=twin, scenarios=[scenario], max_steps=len(actions) + 1)
    env.reset(seed=0)
    infos = []
    for action in actions:
        observation, *_, info = env.step(action)
        assert info["observation_source"] == "world_model"
        infos.append({**info, "observation": observation})
    env.close()
    return infos


@pytest.mark.parametrize("seed", [0, 1, 2, 5, 14])  # inventory, fleet, tickets, crm, calendar
def test_the_fixture_control_answers_as_the_twin(seed: int) -> None:
    """Every call, a write and a refused one included, gets the twin's observation for the
    same actions under the same fired controls, stateful across the episode."""
    scenario = mcp_server_scenario(seed)
    scenario = scenario.model_copy(update={"controls": [  # its own, and some that surely fire
        *scenario.controls, Control(kind="tool_error", turns=[2]),
        Control(kind="stale_data", turns=[4, 5, 6]), Control(kind="empty_results", turns=[5])]})
    calls = [c for c in scenario.candidate_actions if c.startswith("{")]
    skus = [r.get("sku") for r in scenario.mcp.records]
    extra = [{"name": "update_stock", "arguments": {"sku": skus[0], "delta": 7}},
             {"name": "update_stock", "arguments": {"sku": skus[1], "delta": -10_000}},
             {"name": "get_item", "arguments": {"sku": "SKU-1"}}
             ] if scenario.mcp.family == "inventory" else []
    actions = [*calls, *map(json.dumps, extra), *calls, calls[0], calls[-1]]
    backend = McpRecordSimulator([mcp_server_scenario(12), scenario], "sim-fixture")
    steps = _play(backend, scenario, actions, twin=True)
    assert [s["observation"] for s in steps] == [s["real_observation"] for s in steps]
    assert all(steps[turn - 1]["controls"] for turn in (2, 4, 5, 6))  # the replay read them
    assert len({s["observation"] for s in steps}) > len(set(actions))  # state and controls


@pytest.mark.parametrize("family_seed", [0, 1, 2, 5, 14])
def test_wrong_controls_show_every_field_true_but_the_asked_one(family_seed: int) -> None:
    scenario = mcp_server_scenario(family_seed)
    field = ASKED_FIELDS[scenario.mcp.family]
    right = scenario.reference_answer
    assert any(str(r.get(field)) == right for r in scenario.mcp.records)  # the asked field
    true = scenario.mcp.records
    for control in ("sim-constant", "sim-shuffled"):
        shown = shown_records(scenario, control, seed=0)
        assert shown == shown_records(scenario, control, seed=0)  # deterministic
        assert [{k: v for k, v in r.items() if k != field} for r in shown] == [
            {k: v for k, v in r.items() if k != field} for r in true]
        pairs = [(s[field], t[field]) for s, t in zip(shown, true, strict=True) if field in t]
        if control == "sim-constant":  # a value a record holds, but not the answer
            (value,) = {s for s, _ in pairs}
            assert str(value) != right and value in {t for _, t in pairs}
        else:
            assert all(s != t for s, t in pairs)
            assert sorted(str(s) for s, _ in pairs) == sorted(str(t) for _, t in pairs)
    assert shown_records(scenario, "sim-fixture") == true


def test_a_wrong_control_is_the_twin_on_wrong_records_in_the_twins_format() -> None:
    scenario = mcp_server_scenario(0)  # inventory
    target = next(r for r in scenario.mcp.records
                  if str(r["in_stock"]) == scenario.reference_answer)
    lookup = json.dumps({"name": "get_item", "arguments": {"sku": target["sku"]}})
    for control in ("sim-constant", "sim-shuffled"):
        step, = _play(McpRecordSimulator([scenario], control), scenario, [lookup])
        observation = step["observation"]
        assert not step["controls"]
        shown = next(r for r in shown_records(scenario, control) if r["sku"] == target["sku"])
        assert observation == json.dumps(shown, ensure_ascii=False)
        assert json.loads(observation) == {**target, "in_stock": shown["in_stock"]}
    assert shown["in_stock"] != target["in_stock"]  # shuffled: never its own count


def test_the_mcp_controls_are_arms_of_an_mcp_task_and_are_not_recorded(s2r, tmp_path: Path
                                                                       ) -> None:
    args, task = _task(s2r, tmp_path, mcp_train=2, mcp_eval=2)
    arms = s2r.task_arms(task)
    assert set(MCP_CONTROLS) <= set(arms) and "sim-inverted" not in arms
    assert "sim-shuffled" not in s2r.task_arms(s2r.make_task(s2r.Args(out=tmp_path)))
    backend = s2r.sim_backend("sim-shuffled", "scripted", task)
    assert isinstance(backend, McpRecordSimulator) and backend.control == "sim-shuffled"
    assert s2r.record_path(args, backend) is None


@pytest.mark.parametrize("family", ["calendar", "inventory", "tickets"])
def test_readable_but_wrong_simulators_do_not_pass_the_held_out_servers(s2r, tmp_path: Path,
                                                                        family: str) -> None:
    """A short run: the true records teach reading (above the blind 1/3 on held-out servers);
    one wrong value for every record never shows the answer, so it teaches nothing; shuffled
    values show the answer only on another record's call (calendar: another event's listing;
    inventory and tickets: another record's lookup, the question naming the asked record's
    id), so they teach making that call; both stay at or below 1/3, as does the unreadable
    placeholder. On tickets the answer is a name, which the agent reads as a shown value."""
    args, task = _task(s2r, tmp_path, task=f"mcp:{family}", mcp_train=4, mcp_eval=8, batch=32,
                       updates=6)
    scores = {}
    for arm in (*MCP_CONTROLS, "sim-garbage"):
        agent = s2r.LinearAgent(args, task, arm, seed=0, world_model="scripted")
        for _ in range(args.updates):
            agent.update(real=False)
        scores[arm] = s2r.balanced(task, s2r.evaluate(task, agent))
        agent.close()
    assert scores["sim-fixture"] > 1 / 3
    assert max(scores["sim-constant"], scores["sim-shuffled"], scores["sim-garbage"]) <= 1 / 3


@pytest.mark.parametrize("family", ["inventory", "calendar", "tickets", "crm", "fleet"])
def test_what_each_simulator_shows_on_each_call(s2r, tmp_path: Path, family: str) -> None:
    """The true records show on every call what the twin shows; one wrong value for every
    record shows the true answer on no call; shuffled values never show it on the lookup of
    the record asked about (the solution's last call, where it is one record's); the
    placeholder shows no candidate and no error; a simulator that refuses every call shows
    errors only."""
    _, task = _task(s2r, tmp_path, task=f"mcp:{family}", mcp_train=6, mcp_eval=1)
    real = s2r.shown_answers(task, task.train, seeds=2)
    shown = {arm: s2r.shown_answers(task, task.train, s2r.sim_backend(arm, "scripted", task),
                                    seeds=2)
             for arm in (*MCP_CONTROLS, "sim-garbage")}
    lookup = max(name for name in real if name.startswith("solution call"))  # the last
    assert all(sum(row.values()) == pytest.approx(1) for row in real.values())
    assert real[lookup]["true alone"] >= 0.5  # reading the asked record pays, perturbed or not
    assert shown["sim-fixture"] == real
    assert all(row["true alone"] == row["true and a wrong one"] == 0
               for row in shown["sim-constant"].values())
    if ": get_" in lookup:  # one record's lookup (crm's is a listing of the client's deals)
        assert shown["sim-shuffled"][lookup]["true alone"] == 0
        assert shown["sim-shuffled"][lookup]["true and a wrong one"] == 0
    assert all(row["none"] == 1 for row in shown["sim-garbage"].values())
    error = {"error": {"code": "invalid_arguments", "message": "argument 'id' must be of type "
                                                            "string, got integer"}}
    refusing = {"name": "scripted", "rules": [{"match": "(?s).*", "reply": (
        f"<predicted_observation>\n{json.dumps(error)}\n</predicted_observation>")}]}
    assert all(row["an error"] == 1 for row in s2r.shown_answers(task, task.train, refusing,
                                                                 seeds=1).values())
