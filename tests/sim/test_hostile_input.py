"""Hostile agent text: nothing raises, nothing leaves the observation space (issue 16).

The reproducers of the issue are pinned one by one, then a Hypothesis property plays any string
(the reproducers' shapes among them) on every registered env: each AgentFloor task, each
AgentWorld domain on the ``scripted`` backend, and each text team.
"""

from __future__ import annotations

import json
import math

import gymnasium as gym
import pettingzoo
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import floor_tasks
import team_envs
from agentworld_envs.backends import Completion
from agentworld_envs.bench.judge import JudgeParseError, parse_judge_output
from agentworld_envs.domains.android.domain import DOMAIN as ANDROID
from agentworld_envs.domains.terminal.domain import DOMAIN as TERMINAL
from agentworld_envs.domains.web.domain import DOMAIN as WEB
from agentworld_envs.protocol import bounded_json, parse_action
from agentworld_envs.protocol.tool_calls import MAX_ERRORS
from agentworld_envs.registration import ENV_IDS as WORLD_IDS
from agentworld_envs.world.fidelity import step_fidelity
from agentworld_envs.world.parsing import parse_world_model_output
from agentworld_envs.world.rewards import read_judge
from floor_tasks.env import FloorEnv
from floor_tasks.verifier import field_matches

DEEP = '{"":' + "[" * 986
HUGE_INT = "1" + "0" * 4300
REPRODUCERS = [
    DEEP,
    '{"answer": ' + HUGE_INT + "}",
    '[{"keystrokes": "x", "duration": 1' + "0" * 309 + "}]",
    '{"action_type": "click", "index": ' + HUGE_INT + "}",
    "click(0x" + "f" * 3572 + ")",
    "```" + " " * 2000,
    "x{" * 2000,
    "<think>" * 500,
    "<tool_call>x</tool_call>" * 4000,
    '{"score": 1e999, "scores": {"format": ' + HUGE_INT + "}}",
    "```json\n{}\n```\n" * 300,
]
FLOOR_IDS = [floor_tasks.env_id(task_id) for task_id in floor_tasks.TASK_IDS]
TEXT_TEAM_IDS = list(team_envs.ENV_IDS)
ACTIONS = st.one_of(
    st.text(max_size=200),
    st.sampled_from(REPRODUCERS),
    st.tuples(st.sampled_from(REPRODUCERS), st.text(max_size=50),
              st.sampled_from(REPRODUCERS)).map("".join),
)


def _world_env(env_id: str) -> gym.Env:
    return gym.make(env_id, backend="scripted")


# --- the bounded decoder ----------------------------------------------------------------

@pytest.mark.parametrize("text", [DEEP, "[" * 100_000, '{"a": ' + HUGE_INT + "}",
                                  '{"a": 1e999}', '{"a": NaN}', '{"a": -Infinity}'])
def test_loads_rejects_out_of_bounds_json_with_one_error_type(text: str) -> None:
    with pytest.raises(bounded_json.JSONError):
        bounded_json.loads(text)


@pytest.mark.parametrize(("text", "bounded"), [
    ("9" * 300, True), ("-" + "9" * 300, True), ("1" + "0" * 300, False),
    ("-1" + "0" * 300, False), ("1e308", True), ("-1e309", False), ("[Infinity]", False),
    ("[" * 200 + "1" + "]" * 200, True), ("[" * 201 + "1" + "]" * 201, False),
    ('{"a": ' * 200 + "1" + "}" * 200, True), ('{"a": ' * 201 + "1" + "}" * 201, False),
])
def test_loads_bounds_are_exact(text: str, bounded: bool) -> None:
    """The bounds hold at their edges, whichever check (number hooks, bracket count) sees them."""
    if bounded:
        assert bounded_json.loads(text) == json.loads(text)
    else:
        with pytest.raises(bounded_json.JSONError):
            bounded_json.loads(text)


def test_loads_keeps_ordinary_json() -> None:
    doc = {"a": [1, -2.5, "x" * 10_000, {"b": None}], "c": 10 ** 299}
    assert bounded_json.loads(json.dumps(doc)) == doc


def test_find_objects_reads_objects_in_broken_text() -> None:
    text = ('x{ {"answer": {"total": 5}, "oops" ' + " x{" * 1000 + ' {"deep": '
            + "[" * 1000 + "]" * 1000 + '} {"k": 2} {"unclosed": "{\\"no\\": 1}')
    assert list(bounded_json.find_objects(text)) == [{"total": 5}, {"k": 2}]


@pytest.mark.parametrize(("text", "expected"), [
    ("```bash\nls -la\n```", "ls -la"),
    ("  ```\n{}\n\n```  ", "{}\n"),
    ("```" + " " * 50_000, "```" + " " * 50_000),
    ("no fence", "no fence"),
])
def test_unfence(text: str, expected: str) -> None:
    assert bounded_json.unfence(text) == expected


def test_fenced_call_blocks_are_all_removed_from_the_answer() -> None:
    call = '```json\n{"name": "t", "arguments": {}}\n```'
    parsed = parse_action(f"a {call} b {call} c")
    assert len(parsed.calls) == 2 and parsed.text == "a  b  c"


def test_parse_errors_are_capped_with_a_count_of_the_rest() -> None:
    parsed = parse_action("<tool_call>x</tool_call>" * 4000)
    assert len(parsed.errors) == MAX_ERRORS + 1
    assert str(4000 - MAX_ERRORS) in parsed.errors[-1].message


# --- the reproducers, where they crashed ---------------------------------------------

@pytest.mark.parametrize("answer", [DEEP, '{"total": ' + HUGE_INT + "}"])
def test_fields_check_reads_hostile_answers(answer: str) -> None:
    assert field_matches(answer, "total", 5) is None


@pytest.mark.parametrize("action", [
    '[{"keystrokes": "x", "duration": 1' + "0" * 309 + "}]",
    '[{"keystrokes": "x", "duration": ' + HUGE_INT + "}]", DEEP])
def test_terminal_rejects_out_of_range_actions(action: str) -> None:
    assert TERMINAL.interpret(action, None, "$ ").kind == "invalid"


def test_android_rejects_huge_integers() -> None:
    action = '{"action_type": "click", "index": ' + HUGE_INT + "}"
    assert ANDROID.interpret(action, None, "screen").kind == "invalid"


def test_web_rejects_huge_literals() -> None:
    assert WEB.interpret("click(0x" + "f" * 3572 + ")", None, "page").kind == "invalid"


@pytest.mark.parametrize("reply", [
    '<final_evaluation>{"score": ' + HUGE_INT + "}</final_evaluation>",
    '<final_evaluation>{"score": 1e999}</final_evaluation>',
    "<final_evaluation>" + DEEP + "</final_evaluation>",
    "```" + " " * 20_000, "x{" * 20_000])
def test_episode_judge_replies_never_raise(reply: str) -> None:
    score, error = read_judge(Completion(text=reply))
    assert math.isnan(score) and error


@pytest.mark.parametrize("reply", [
    '{"scores": {"format": ' + HUGE_INT + "}}", DEEP, '{"format": 1e999}', "x{" * 20_000])
def test_bench_judge_replies_raise_only_its_parse_error(reply: str) -> None:
    with pytest.raises(JudgeParseError):
        parse_judge_output(reply)


@pytest.mark.parametrize("text", ["1" * 5000, "[" * 5000, "1e999", '{"a": ' + "9" * 4400 + "}"])
def test_fidelity_reads_hostile_observations_as_not_json(text: str) -> None:
    score = step_fidelity(text, '{"a": 1}')
    assert not score.predicted_json and score.real_json


def test_world_model_output_with_many_think_tags() -> None:
    out = parse_world_model_output("<think>" * 32768)
    assert out.observation == "no output".capitalize() and "broken_think" in out.flags


def test_many_parse_errors_stay_in_the_observation_space() -> None:
    env = FloorEnv("C3")
    env.reset(seed=0)
    obs, *_ = env.step("<tool_call>x</tool_call>" * 4000)
    assert obs in env.observation_space and len(obs.splitlines()) == MAX_ERRORS + 1


# --- a 10 MB action ----------------------------------------------------------------------

TEN_MB = 10 * 1024 * 1024


@pytest.mark.parametrize("env_id", ["AgentFloor/C3-v0", "AgentWorld/Terminal-v0",
                                    "AgentWorld/MCP-v0"])
def test_ten_megabyte_action_gives_an_observation_in_space(env_id: str) -> None:
    env = gym.make(env_id) if env_id.startswith("AgentFloor") else _world_env(env_id)
    env.reset(seed=0)
    action = ('{"name": "lookup_record", "arguments": {"record_id": "'
              + "x{" * (TEN_MB // 2) + '"}}')
    obs, *_ = env.step(action)
    assert obs in env.observation_space


# --- the whole registry -----------------------------------------------------------------------

def _property(make_env, examples: int):
    """A Hypothesis test: any string, stepped on a fresh env, gives an in-space observation."""
    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(action=ACTIONS)
    def run(action: str) -> None:
        env = make_env()
        env.reset(seed=0)
        obs, *_ = env.step(action)
        assert obs in env.observation_space
    return run


@pytest.mark.parametrize("env_id", FLOOR_IDS)
def test_floor_envs_take_any_text(env_id: str) -> None:
    _property(lambda: gym.make(env_id), examples=8)()


@pytest.mark.parametrize("env_id", WORLD_IDS)
def test_world_envs_take_any_text(env_id: str) -> None:
    _property(lambda: _world_env(env_id), examples=12)()


@pytest.mark.parametrize("env_id", TEXT_TEAM_IDS)
def test_text_teams_take_any_text(env_id: str) -> None:
    @settings(max_examples=10, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(actions=st.lists(ACTIONS, min_size=1, max_size=3))
    def run(actions: list[str]) -> None:
        env = pettingzoo.make("aec", env_id)
        env.reset(seed=0)
        for action in actions:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                break
            env.step(action)
            for name in env.agents:
                assert env.observe(name) in env.observation_space(name)
    run()

