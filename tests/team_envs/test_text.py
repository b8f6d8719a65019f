"""Text teams: generated problems and their verifiers, handoff, and AgentFloor teams."""

from __future__ import annotations

import json

import numpy as np
import pettingzoo
import pytest

import floor_tasks
import team_envs  # noqa: F401
from agentworld_envs.protocol.tool_calls import parse_action
from team_envs.text import default_roles, final_answer
from team_envs.text.arithmetic import ArithmeticChainTask
from team_envs.text.countdown import CountdownTask, evaluate_expression
from team_envs.text.logic_grid import LogicGridTask, _all_grids, _solutions


def play(env_id: str, messages, seed: int = 0, **kwargs) -> tuple[float, dict, object]:
    """Play an AEC episode; ``messages(agent_index, observation, env) -> str``."""
    env = pettingzoo.make("aec", env_id, render_mode="ansi", **kwargs)
    env.reset(seed=seed)
    info = {}
    for name in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        env.step(messages(int(name.split("_")[1]), observation, env))
    return reward, info, env


@pytest.mark.parametrize("answer", ["ANSWER: {v}", "The result is {v}.", "answer:{v}\n"])
def test_arithmetic_chain_checks_the_final_value(answer: str) -> None:
    def team(agent: int, obs: dict, env) -> str:
        value = env.unwrapped.episode.problem.answer
        return answer.format(v=value) if agent == env.num_agents - 1 else "working"

    reward, info, _ = play("team_envs/arithmetic_chain-v0", team, n_agents=3)
    assert reward == 1.0 and info["verdict"]["passed"]
    wrong, info, _ = play("team_envs/arithmetic_chain-v0",
                          lambda a, o, e: "ANSWER: 100001", n_agents=3)
    assert wrong == 0.0 and info["verdict"]["given"] == 100001


def test_arithmetic_steps_are_split_among_agents_and_recomputable() -> None:
    task = ArithmeticChainTask(n_agents=4, steps=6)
    for seed in range(20):
        problem = task.generate(np.random.default_rng(seed))
        value = problem.details["start"]
        for step in problem.details["steps"]:
            op, operand = step.rsplit(" ", 1)
            value = {"add": value + int(operand), "subtract": value - int(operand),
                     "multiply by": value * int(operand)}[op]
        assert value == problem.answer
        assert "step 5" in problem.briefs[0] and "step 1" not in problem.briefs[1]


def test_arithmetic_agents_apply_their_own_steps_to_reach_the_answer() -> None:
    def team(agent: int, obs: dict, env) -> str:
        episode = env.unwrapped.episode
        value = episode.problem.details["start"] if agent == 0 else int(
            episode.transcript[-1]["content"].split()[-1])
        op, operand = episode.problem.briefs[agent].split(": ")[1].rsplit(" ", 1)
        value = {"add": value + int(operand), "subtract": value - int(operand),
                 "multiply by": value * int(operand)}[op]
        return f"ANSWER: {value}" if agent == env.num_agents - 1 else f"total {value}"

    for seed in range(5):
        assert play("team_envs/arithmetic_chain-v0", team, seed=seed, n_agents=4)[0] == 1.0


def test_logic_grid_puzzles_have_one_solution_and_name_checks() -> None:
    task = LogicGridTask(people=4, attributes=3, n_agents=3)
    grids = _all_grids(4, 3)
    for seed in range(8):
        problem = task.generate(np.random.default_rng(seed))
        clues = [c for c in task._candidate_clues(np.array(problem.details["solution"]))]
        chosen = [c for c in clues if c.text(task.names, task.attributes) in
                  problem.details["clues"]]
        assert _solutions(chosen, grids) == 1
        assert sum(bool(b) for b in problem.briefs) == min(3, len(chosen))
        assert task.check(problem, problem.answer)[0] == 1.0
        others = [n for n in task.names if n != problem.answer]
        assert task.check(problem, f"{problem.answer} or {others[0]}")[0] == 0.0
        assert task.check(problem, others[0].lower())[0] == 0.0


def test_countdown_verifier_checks_numbers_and_value() -> None:
    task = CountdownTask(numbers=4)
    for seed in range(30):
        problem = task.generate(np.random.default_rng(seed))
        assert task.check(problem, problem.details["solution"])[0] == 1.0
        assert task.check(problem, problem.details["solution"] + f" = {problem.answer}")[0] == 1.0
    problem = task.generate(np.random.default_rng(0))
    numbers = problem.details["numbers"]
    reward, details = task.check(problem, f"{numbers[0]} * {numbers[0]} * {numbers[0]}")
    assert reward == 0.0 and ("not given" in details["error"] or details["value"])


@pytest.mark.parametrize(("expression", "value", "error"), [
    ("(3 + 5) * 2", 16, ""), ("7 / 2", 3.5, ""), ("1 / (2 - 2)", None, "division by zero"),
    ("2 ** 3", None, "unsupported"), ("__import__('os')", None, "unsupported"),
    ("-3 + 5", None, "unsupported"), ("3.5 + 1", None, "unsupported"),
    ("(" * 300, None, "too long"), ("1 +", None, "not an arithmetic expression"),
])
def test_evaluate_expression(expression: str, value: float | None, error: str) -> None:
    got, _, message = evaluate_expression(expression)
    assert (got is None if value is None else float(got) == value) and error in message


def test_final_answer_reads_the_last_marker_or_the_last_line() -> None:
    assert final_answer("Answer: 3\nthen ANSWER: 5") == "5"
    assert final_answer("I think\n\n 42 \n") == "42"
    assert final_answer("") == ""


def test_final_answer_reads_all_text_after_the_last_upper_case_marker() -> None:
    assert final_answer("ANSWER: 5. Wait, ANSWER: 6") == "6"
    assert final_answer("ANSWER:\n1 2\n3 4\n") == "1 2\n3 4"  # multi-line answers
    assert final_answer("Final ANSWER: 42\nI re-checked the answer: it holds.") == (
        "42\nI re-checked the answer: it holds.")  # a lower-case "answer:" is prose
    assert final_answer("so the answer: 7") == "so the answer: 7"  # no marker: the last line


@pytest.mark.parametrize("message", ["**ANSWER:** 3*8", "**ANSWER**: 3*8", "ANSWER: **3*8**",
                                     "**ANSWER: 3*8**", "Working.\n**ANSWER:**\n3*8"])
def test_final_answer_leaves_out_markdown_bold_around_the_marker_or_the_answer(
        message: str) -> None:
    """Instruct models write the marker in bold; the bold was read as part of the answer, so
    countdown refused "** 3*8" as an expression and a reasoning-gym scorer got "**24**"."""
    assert final_answer(message) == "3*8"
    task = CountdownTask()
    problem = task.generate(np.random.default_rng(0))
    expression = problem.details["solution"]
    assert task.check(problem, final_answer(message.replace("3*8", expression)))[0] == 1.0


def test_final_answer_keeps_asterisks_that_are_the_answer() -> None:
    assert final_answer("ANSWER: 2**3") == "2**3"
    assert final_answer("ANSWER: **") == "**"


def test_arithmetic_reads_an_over_long_number_as_wrong_without_raising() -> None:
    def team(digits: str):
        return lambda agent, obs, env: f"ANSWER: {digits}" if agent == 1 else "working"

    reward, info, _ = play("team_envs/arithmetic_chain-v0", team("9" * 5000), n_agents=2,
                           max_message_chars=10_000)
    assert reward == 0.0 and info["verdict"]["given"] is None
    env = pettingzoo.make("aec", "team_envs/arithmetic_chain-v0", n_agents=2)
    env.reset(seed=0)
    value = env.unwrapped.episode.problem.answer
    padded = ("-" if value < 0 else "") + "0" * 5000 + str(abs(value))
    reward, info, _ = play("team_envs/arithmetic_chain-v0", team(padded), n_agents=2,
                           max_message_chars=10_000)
    assert reward == 1.0 and info["verdict"]["given"] == value


def test_default_roles_cover_every_team_size() -> None:
    assert default_roles(2) == ("solver", "answerer")
    assert default_roles(8) == ("planner",) + ("solver",) * 5 + ("critic", "answerer")


def test_router_handoff_follows_next_lines_and_ends_with_the_answerer() -> None:
    order = []

    def team(agent: int, obs: dict, env) -> str:
        order.append(agent)
        return {0: "plan\nNEXT: critic", 2: "checked\nNEXT: agent_1", 1: "NEXT: solver"}.get(
            agent, "ANSWER: 1")

    play("team_envs/countdown-v0", team, n_agents=4, handoff="router")
    assert order == [0, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2]  # "NEXT: solver" from the solver: rotation


def test_router_handoff_is_truncated_at_the_message_cap() -> None:
    reward, info, env = play("team_envs/countdown-v0", lambda a, o, e: "NEXT: agent_0",
                             n_agents=3, handoff="router", max_cycles=2)
    assert reward == 0.0 and env.unwrapped.episode.truncated
    assert info["verdict"]["reason"] == "message cap reached"


def test_router_reaches_the_answerer() -> None:
    reward, info, env = play("team_envs/countdown-v0",
                             lambda a, o, e: "NEXT: answerer" if a == 0 else "ANSWER: 1",
                             n_agents=4, handoff="router")
    assert [e["agent"] for e in env.unwrapped.episode.transcript] == [0, 3]


def test_text_observations_carry_role_brief_and_transcript() -> None:
    env = pettingzoo.make("aec", "team_envs/logic_grid-v0", n_agents=3)
    env.reset(seed=2)
    env.step("Ada has the cat, I think.")
    obs = env.observe("agent_1")
    assert obs["system"].startswith("You are a solver")
    assert "[agent_0 · planner] Ada has the cat, I think." in obs["text"]
    assert "Only you can see this:" in obs["text"] and obs["turn"] == 1
    assert "ANSWER: <name>" in env.observe("agent_2")["system"]


def _oracle_floor_team(agent: int, obs: dict, env) -> str:
    """Plays the reference solution of whichever task and variant the episode drew."""
    episode = env.unwrapped.episode
    steps = floor_tasks.solution(episode.problem.details["task_id"],
                                 episode.problem.details["variant"])
    calls = [s for s in steps if not parse_action(s).is_final_answer]
    answer = next((s for s in steps if parse_action(s).is_final_answer), "submitted")
    played = sum(entry["agent"] == 1 for entry in episode.transcript)
    if agent == 0:
        return "1. look up what is needed\n2. answer"
    if agent == 1:
        return calls[played] if played < len(calls) else f"done: {answer}"
    return answer


@pytest.mark.parametrize("task_id", floor_tasks.TASK_IDS)
def test_floor_team_oracle_passes_every_task(task_id: str) -> None:
    for seed in range(2):
        reward, info, env = play("team_envs/floor_team-v0", _oracle_floor_team, seed=seed,
                                 tasks=[task_id])
        assert reward == 1.0, info["verdict"]
        assert info["verdict"]["task_id"] == task_id
    tools = env.observe("agent_1")["tools"]
    names = sorted(t["function"]["name"] for t in json.loads(tools)) if tools else []
    assert names == sorted(floor_tasks.load_task(task_id).tools)


def test_floor_team_tools_go_to_the_executor_only_and_results_join_the_context() -> None:
    env = pettingzoo.make("aec", "team_envs/floor_team-v0", tasks=["B3"])
    env.reset(seed=0, options={"task_id": "B3", "variant": "v0"})
    assert env.observe("agent_0")["tools"] == "" and env.observe("agent_2")["tools"] == ""
    env.step("plan")
    env.step(floor_tasks.solution("B3", "v0")[0])
    assert env.agent_selection == "agent_1"
    assert '"status": "ok"' in env.observe("agent_2")["text"]


def test_floor_team_executor_budget_hands_over_to_the_verifier() -> None:
    env = pettingzoo.make("aec", "team_envs/floor_team-v0", tasks=["E1"], executor_turns=1)
    env.reset(seed=0, options={"variant": "v0"})
    first, second = floor_tasks.solution("E1", "v0")[:2]
    env.step("plan")
    env.step(first)
    env.step(second)  # over budget: not played, it is the executor's report
    assert env.agent_selection == "agent_2"
    assert sum(entry["name"] == "tool" for entry in env.unwrapped.episode.transcript) == 1
    env.step("I give up.")
    assert env.rewards["agent_0"] == 0.0 and all(env.terminations.values())


def test_floor_team_rejects_unknown_tasks() -> None:
    with pytest.raises(ValueError, match="unknown AgentFloor task"):
        pettingzoo.make("aec", "team_envs/floor_team-v0", tasks=["Z9"])


def test_floor_team_reset_refuses_a_task_outside_its_tasks() -> None:
    """The message cap and turn space are sized for ``tasks``: E4 (12 floor turns) would be
    truncated after A1's 4 messages."""
    env = pettingzoo.make("aec", "team_envs/floor_team-v0", tasks=["A1"])
    with pytest.raises(ValueError, match=r"one of this env's tasks \['A1'\], got 'E4'"):
        env.reset(seed=0, options={"task_id": "E4"})
    env.reset(seed=0, options={"task_id": "A1"})
    assert env.unwrapped.episode.problem.details["task_id"] == "A1"


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"handoff": "chain"}, "handoff"), ({"roles": ["boss", "answerer"]}, "no prompt"),
    ({"rounds": 0}, "rounds"), ({"steps": 0}, "steps"), ({"max_operand": 1}, "max_operand"),
])
def test_invalid_text_settings_are_rejected(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ArithmeticChainTask(**kwargs)


def test_custom_roles_and_prompts() -> None:
    task = ArithmeticChainTask(roles=["boss", "solver", "answerer"],
                               role_prompts={"boss": "You are the boss."})
    assert task.n_agents == 3 and task.system_prompt(0) == "You are the boss."
