"""The sim-to-real experiment on generated MCP servers: the split, the twin as the real env, and
tasks that a policy blind to observations cannot solve."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from agentworld_envs.domains.mcp.servers import mcp_server_scenario
from agentworld_envs.domains.mcp.twin import McpTwin
from agentworld_envs.world.controls import control_text
from trainers.experiments import sim_to_real


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
    with pytest.raises(SystemExit, match="no generated MCP family"):
        _task(s2r, tmp_path, task="mcp:bakery")


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
    value = {s2r.zlib.crc32(b"value:observed") % policy.size}
    assert value <= observed and {s2r.zlib.crc32(b"value:unseen") % policy.size} <= unseen
    # the floor candidates hold no such values: their features are unchanged
    submit = '{"name": "submit_decision", "arguments": {"record_id": "CMP-31"}}'
    assert not [w for w in s2r.words(submit) if re.search(r"\d", w) and not s2r._is_id(w)]


def test_real_training_beats_the_blind_bound_on_held_out_servers(s2r, tmp_path: Path) -> None:
    args, task = _task(s2r, tmp_path, mcp_train=4, mcp_eval=8, batch=32, updates=6)
    agent = s2r.LinearAgent(args, task, "real", seed=0, world_model=None)
    assert s2r.balanced(task, s2r.evaluate(task, agent)) == 0.0  # it answers at once
    for _ in range(args.updates):
        agent.update(real=True)
    assert s2r.balanced(task, s2r.evaluate(task, agent)) > 1 / 3  # one of three, drawn blind
    agent.close()
