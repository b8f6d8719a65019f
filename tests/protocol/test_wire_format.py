"""The release's wire format, byte for byte: the requests each domain's episode sends against a
hand-made prompt directory in the release's layout, and the output parser's tolerances
(``docs/agentworld_envs.md``; the facts are the release's ``eval.py`` and ``output_parser.py``).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import Backend, ChatRequest, Completion, SamplingParams
from agentworld_envs.backends.openai_compat import OpenAIBackend
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.domains import get_domain
from agentworld_envs.registration import make
from agentworld_envs.sim.model_client import WorldModelFault
from agentworld_envs.world.parsing import parse_model_output, parse_world_model_output

TEMPLATES = {  # our own stand-ins for the release's files: only the layout matters
    "mcp": 'MCP WM.\nTools:\n{tool_definitions}\nKeep {"json": 1} and {other}.\n{demonstrations}',
    "search": "SEARCH WM.\n{tool_definitions}\nEnd.",
    "terminal": "TERMINAL WM \x1b[0m with no placeholders.",
    "swe": "SWE WM.\n{tool_definitions}\n{demonstrations}",
    "android": "ANDROID WM: one <predicted_observation> block.",
    "web": "WEB WM: one <predicted_observation> block.",
    "os": "OS WM: one <predicted_observation> block.",
}
CARD = SamplingParams(temperature=0.6, top_p=0.95, top_k=20, max_tokens=32768)
TOOL = {"type": "function", "function": {
    "name": "get_board", "description": "Read a board.",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}}}}
TOOL_JSON = """[
  {
    "type": "function",
    "function": {
      "name": "get_board",
      "description": "Read a board.",
      "parameters": {
        "type": "object",
        "properties": {
          "key": {
            "type": "string"
          }
        }
      }
    }
  }
]"""
UNTAGGED = ["<think>plan</think>\n**Environment Observation:**\nOBS 1", "OBS 2"]
TAGGED = ["<think>a <predicted_observation>fake</predicted_observation></think>"
          "<predicted_observation>\nSCREEN 1\n</predicted_observation>",
          "<predicted_observation>SCREEN 2</predicted_observation>"]


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    for domain, text in TEMPLATES.items():
        (tmp_path / domain).mkdir()
        (tmp_path / domain / "system_prompt.txt").write_text(text, encoding="utf-8")
        (tmp_path / domain / "judge_system_prompt.txt").write_text("JUDGE", encoding="utf-8")
    return tmp_path


def scenario(domain: str, **fields) -> dict:
    return {"id": f"wire-{domain}", "instruction": "Do the task.", "candidate_actions": ["x"],
            "world": "The world holds X.", **fields}


def episode(domain: str, prompts: Path, spec: dict, actions: list[str],
            replies: list[str]) -> tuple[list[ChatRequest], list[tuple]]:
    backend = ScriptedBackend([{"match": rf"^### Turn {n}\n", "reply": reply}
                               for n, reply in enumerate(replies, start=1)], keep_requests=True)
    env = make(domain, backend=backend, prompts=str(prompts))
    env.reset(seed=0, options={"scenario": spec})
    steps = [env.step(action) for action in actions]
    requests = [request for batch in backend.batches for request in batch]
    assert all(replace(r.sampling, seed=None) == CARD for r in requests)
    assert all(r.tools is None for r in requests)
    return requests, steps


def chat(request: ChatRequest) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request.messages]


def demos(domain: str) -> str:
    """The catalog's demonstrations, laid out as turns of the chat."""
    return "\n\n".join(f"### Turn {n}\n**Action:**\n```json\n{d.action}\n```\n\n"
                       f"**Environment Observation:**\n{d.observation}"
                       for n, d in enumerate(get_domain(domain).catalog.demonstrations, 1))


def test_mcp_requests(prompts: Path) -> None:
    spec = scenario("mcp", tools=[TOOL])
    call = '{"name": "get_board", "arguments": {"key": "OPS"}}'
    requests, steps = episode("mcp", prompts, spec, [call, call], UNTAGGED)
    system = (f'MCP WM.\nTools:\n{TOOL_JSON}\nKeep {{"json": 1}} and {{other}}.\n'
              f"{demos('mcp')}")
    turn_1 = ("### Turn 1\n**Simulation Instruction:**\n"
              "Agent Task (context only; never solve it for the agent): Do the task.\n"
              "World Notes (ground truth for every observation):\nThe world holds X.\n\n"
              '**Action:**\n```json\n{\n  "name": "get_board",\n  "arguments": {\n'
              '    "key": "OPS"\n  }\n}\n```')
    turn_2 = ('### Turn 2\n**Action:**\n```json\n{\n  "name": "get_board",\n  "arguments": {\n'
              '    "key": "OPS"\n  }\n}\n```')
    assert chat(requests[1]) == [("system", system), ("user", turn_1),
                                 ("assistant", "**Environment Observation:**\nOBS 1"),
                                 ("user", turn_2)]
    assert [s[0] for s in steps] == ["OBS 1", "OBS 2"]


def test_search_requests_carry_the_simulation_instruction(prompts: Path) -> None:
    spec = scenario("search", reference_answer="1889", fictional=True)
    call = '{"name": "web_search", "arguments": {"queries": ["eiffel"]}}'
    requests, _ = episode("search", prompts, spec, [call, call], UNTAGGED)
    tools = json.dumps(get_domain("search").catalog.tools, indent=2, ensure_ascii=False)
    action = ('**Action:**\n```json\n{\n  "name": "web_search",\n  "arguments": {\n'
              '    "queries": [\n      "eiffel"\n    ]\n  }\n}\n```')
    turn_1 = ("### Turn 1\n**Simulation Instruction:**\nTarget Query: Do the task.\n"
              "Reference Answer: 1889\n"
              "World Notes (ground truth for every observation):\nThe world holds X.\n"
              "Fictional World: This world is fictional. Every person, organisation, place, "
              "product and event in it is invented. Never fall back on real-world facts: invent "
              "what the notes leave open, and keep every invention consistent with the notes and "
              f"with all earlier observations.\n\n{action}")
    assert chat(requests[1]) == [("system", f"SEARCH WM.\n{tools}\nEnd."), ("user", turn_1),
                                 ("assistant", "**Environment Observation:**\nOBS 1"),
                                 ("user", f"### Turn 2\n{action}")]


def test_terminal_requests_show_the_state_once_and_the_model_confirms_completion(
        prompts: Path) -> None:
    spec = scenario("terminal", initial_state="root@box:/app# ", world=None)
    requests, steps = episode("terminal", prompts, spec,
                              ['[{"keystrokes": "ls\\n", "duration": 1}]', "[]"], UNTAGGED)
    turn_1 = ("### Turn 1\n**Simulation Instruction:**\n"
              "Agent Task (context only; never solve it for the agent): Do the task.\n\n"
              "**Current State:**\nroot@box:/app# \n\n"
              '**Action:**\n```json\n[\n  {\n    "keystrokes": "ls\\n",\n    "duration": 1.0\n'
              "  }\n]\n```")
    assert chat(requests[1]) == [("system", "TERMINAL WM \x1b[0m with no placeholders."),
                                 ("user", turn_1),
                                 ("assistant", "**Environment Observation:**\nOBS 1"),
                                 ("user", "### Turn 2\n**Action:**\n```json\n[]\n```")]
    observation, _, terminated, _, info = steps[1]
    assert (observation, terminated, info["termination"]) == ("OBS 2", True, "task_complete")


def test_swe_requests(prompts: Path) -> None:
    spec = scenario("swe", world=None)
    call = '{"name": "bash", "arguments": {"command": "ls"}}'
    requests, _ = episode("swe", prompts, spec, [call], UNTAGGED)
    tools = json.dumps(get_domain("swe").catalog.tools, indent=2, ensure_ascii=False)
    turn_1 = ("### Turn 1\n**Simulation Instruction:**\n"
              "Agent Task (context only; never solve it for the agent): Do the task.\n\n"
              '**Action:**\n```json\n{\n  "name": "bash",\n  "arguments": {\n'
              '    "command": "ls"\n  }\n}\n```')
    assert chat(requests[0]) == [("system", f"SWE WM.\n{tools}\n{demos('swe')}"),
                                 ("user", turn_1)]


def test_android_requests_give_the_task_once_and_the_state_every_turn(prompts: Path) -> None:
    spec = scenario("android", initial_state="[0] | Button | Save", world=None)
    requests, steps = episode("android", prompts, spec,
                              ['{"action_type": "click", "index": 0}',
                               '{"action_type": "navigate_back"}'], TAGGED)
    turn_1 = ("### Turn 1\n**Task Instruction:**\nDo the task.\n\n"
              "**Current State:**\n[0] | Button | Save\n\n"
              '**Action:**\n```json\n{\n  "action_type": "click",\n  "index": 0\n}\n```')
    turn_2 = ("### Turn 2\n**Current State:**\nSCREEN 1\n\n"
              '**Action:**\n```json\n{\n  "action_type": "navigate_back"\n}\n```')
    assert chat(requests[1]) == [("system", TEMPLATES["android"]), ("user", turn_1),
                                 ("assistant", "**Environment Observation:**\nSCREEN 1"),
                                 ("user", turn_2)]
    assert steps[1][0] == "SCREEN 2"


def test_web_actions_go_verbatim(prompts: Path) -> None:
    spec = scenario("web", initial_state="[a51] link 'Home'", world=None)
    requests, _ = episode("web", prompts, spec, ["click('a51')", 'fill("b12",  "Velmora")'],
                          TAGGED)
    turn_1 = ("### Turn 1\n**Task Instruction:**\nDo the task.\n\n"
              "**Current State:**\n[a51] link 'Home'\n\n**Action:**\n```python\nclick('a51')\n```")
    turn_2 = ("### Turn 2\n**Current State:**\nSCREEN 1\n\n"
              '**Action:**\n```python\nfill("b12",  "Velmora")\n```')
    assert chat(requests[1]) == [("system", TEMPLATES["web"]), ("user", turn_1),
                                 ("assistant", "**Environment Observation:**\nSCREEN 1"),
                                 ("user", turn_2)]


def test_os_requests_repeat_the_task_instruction(prompts: Path) -> None:
    spec = scenario("os", initial_state="desktop-frame", world=None)
    code = "import pyautogui\npyautogui.click(10, 20)"
    requests, _ = episode("os", prompts, spec, [code, "pyautogui.press('enter')"], TAGGED)
    turn_2 = ("### Turn 2\n**Task Instruction:**\nDo the task.\n\n"
              "**Current State:**\nSCREEN 1\n\n"
              "**Action:**\n```python\npyautogui.press('enter')\n```")
    assert chat(requests[1])[1:] == [
        ("user", "### Turn 1\n**Task Instruction:**\nDo the task.\n\n**Current State:**\n"
                 f"desktop-frame\n\n**Action:**\n```python\n{code}\n```"),
        ("assistant", "**Environment Observation:**\nSCREEN 1"), ("user", turn_2)]


def test_controls_go_in_the_simulation_instruction_of_their_turn(prompts: Path) -> None:
    spec = scenario("mcp", tools=[TOOL], world=None,
                    controls=[{"kind": "custom", "turns": [2], "note": "Fail once."}])
    call = '{"name": "get_board", "arguments": {}}'
    requests, steps = episode("mcp", prompts, spec, [call, call], UNTAGGED)
    assert chat(requests[1])[-1][1] == (
        "### Turn 2\n**Simulation Instruction:**\n"
        "Control (this turn only; never mention it): Fail once.\n\n"
        '**Action:**\n```json\n{\n  "name": "get_board",\n  "arguments": {}\n}\n```')
    assert steps[1][4]["controls"] == ("Fail once.",)


# The release's output parser (section 4 of the wire reference), one case per rule.
@pytest.mark.parametrize(("raw", "expected"), [
    ("", "No output"),                                                  # empty raw output
    ("<think>only</think>", "No output"),                               # blank once cleaned
    ("<predicted_observation>\n</predicted_observation>", ""),          # empty block: ""
    ("<THINK>a</Think>obs", "obs"),                                     # any case
    ("<think>a<think>b</think>c</think>d", "d"),                        # pairs, merged
    ("reasoning</think> obs", "obs"),                                   # orphan close
    ("<think>x <predicted_observation>o</predicted_observation>", "o"),  # orphan open: to tag
    ("<think>never closed", "No output"),                               # orphan open: to end
    ("<think>a<predicted_observation>f<think>b</think>c", "No output"),  # first open, first close
    ("<predicted_observation>a</predicted_observation><predicted_observation>b", "b"),  # last
    ("<predicted_observation >a</predicted_observation>",                # not a tag there
     "<predicted_observation >a</predicted_observation>"),
    ("  no tag at all \n", "no tag at all"),                            # cleaned text
])
def test_the_release_parser(raw: str, expected: str) -> None:
    assert parse_model_output(raw) == expected


@pytest.mark.parametrize(("raw", "release", "ours", "flag"), [
    ("<predicted_observation >a</predicted_observation >", "<predicted_observation >a"
     "</predicted_observation >", "a", "lenient_tag"),
    ("ls output</predicted_observation>", "ls output</predicted_observation>", "ls output",
     "stray_close_tag"),
])
def test_our_robustness_is_flagged_when_it_changes_the_result(raw, release, ours, flag) -> None:
    out = parse_world_model_output(raw)
    assert (out.release_observation, out.observation) == (release, ours)
    assert flag in out.flags


@pytest.mark.parametrize(("raw", "expected"), [
    ("**Environment Observation:**\nls", "ls"),              # a leading marker is cut
    ("x **Environment Observation:** y", "x  y"),            # else every occurrence goes
])
def test_the_response_marker_is_cut_as_the_release_cuts_it(raw: str, expected: str) -> None:
    assert parse_world_model_output(raw).observation == expected


def test_a_length_cut_step_is_flagged_counted_and_never_an_observation() -> None:
    class Cut(Backend):
        def complete(self, requests):
            return [Completion(text="<think>still going", finish_reason="length")
                    for _ in requests]

    env = make("mcp", backend=Cut())
    env.reset(seed=0, options={"scenario": "mcp-kanban-doing-count"})
    call = '{"name": "get_board", "arguments": {"board_key": "OPS"}}'
    env.step(call)
    obs, _, terminated, _, info = env.step(call)
    assert "length_limit" in info["world_model"]["flags"] and not info["world_model"]["ok"]
    assert info["world_model"]["counts"]["length_limit"] == 2
    assert info["observation_source"] == "fallback" and not terminated
    assert json.loads(obs)["error"]["type"] == "environment_unavailable"


def test_info_names_the_model_and_placeholders_say_so(prompts: Path) -> None:
    env = make("search", backend="scripted", prompts=str(prompts))
    env.reset(seed=0)
    _, _, _, _, info = env.step('{"name": "web_search", "arguments": {"queries": ["x"]}}')
    assert info["observation_source"] == "placeholder"
    assert (info["world_model"]["backend"], info["world_model"]["model"],
            info["world_model"]["prompts"]) == ("scripted", "scripted", str(prompts.resolve()))


def test_naming_the_placeholder_warns_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentworld_envs.sim.simulator as simulator

    monkeypatch.setattr(simulator, "_warned_placeholder", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make("mcp", backend="scripted")
        make("web", backend="scripted")
    assert [str(w.message).count("placeholders") for w in caught] == [1]


def test_a_dead_server_is_reported_or_raised_on_request() -> None:
    dead = {"name": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
            "max_retries": 0}
    call = '{"name": "get_board", "arguments": {"board_key": "OPS"}}'
    env = make("mcp", backend=dead)
    env.reset(seed=0, options={"scenario": "mcp-kanban-doing-count"})
    with pytest.warns(RuntimeWarning, match="fallback observation"):
        _, _, _, _, info = env.step(call)
    assert info["observation_source"] == "fallback" and info["world_model"]["fault"]
    assert env.unwrapped.sim.world_model.backend.timeout_s == 3600.0  # sized for thinking
    strict = make("mcp", backend=dead, on_fault="raise")
    strict.reset(seed=0, options={"scenario": "mcp-kanban-doing-count"})
    with pytest.raises(WorldModelFault) as raised:
        strict.step(call)
    assert raised.value.faults == [0]


def test_the_openai_backend_sends_top_k_as_a_body_field() -> None:
    backend = OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1")
    payload = backend._payload(ChatRequest([{"role": "user", "content": "hi"}], sampling=CARD),
                               "m")
    assert (payload["top_k"], payload["top_p"], payload["max_tokens"]) == (20, 0.95, 32768)
    assert "top_k" not in backend._payload(ChatRequest([]), "m")
