"""Bad world-model output, backend faults, timeouts, hostile actions: never a crash or a hang."""

from __future__ import annotations

import builtins
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import Backend, ChatRequest, Completion
from agentworld_envs.backends.replay import RecordingBackend
from agentworld_envs.backends.scripted import ScriptedBackend
from agentworld_envs.registration import env_id, make
from agentworld_envs.sim.model_client import ModelClient
from agentworld_envs.world.parsing import NO_OUTPUT

SEARCH = '{"name": "web_search", "arguments": {"queries": ["x"]}}'
WAIT = '[{"keystrokes": "", "duration": 1}]'


def replying(text: str, **rule) -> dict:
    return {"name": "scripted", "rules": [{"match": ".", "reply": text, **rule}]}


@pytest.mark.parametrize(("reply", "observation", "flags"), [
    ("", NO_OUTPUT, {"empty", "no_output"}),
    ("<predicted_observation>half a result", "half a result", {"unclosed_tag"}),
    ("\x00\x7f garbage ☕ \ud800", "\x00\x7f garbage ☕ \ud800", set()),  # search asks no tag
    ("<think>I will think forever", NO_OUTPUT, {"broken_think", "no_output"}),
    ("<predicted_observation></predicted_observation>", "", set()),  # empty, as the release
])
def test_bad_output_in_a_tool_domain_yields_a_flagged_observation(reply, observation,
                                                                  flags) -> None:
    env = make("search", backend=replying(reply))
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(SEARCH)
    assert obs == observation and obs in env.observation_space
    assert set(info["world_model"]["flags"]) == flags
    assert info["world_model"]["ok"] is ("no_output" not in flags)
    assert (terminated, truncated) == (False, False)


def test_over_long_output_is_cut_to_the_observation_limit() -> None:
    env = make("search", backend=replying("<predicted_observation>" + "y" * 300_000),
               max_observation_chars=1000)
    env.reset(seed=0)
    obs, *_, info = env.step(SEARCH)
    assert len(obs) == 1000 and {"over_long", "unclosed_tag"} <= set(info["world_model"]["flags"])
    assert info["world_model"]["diagnostics"] == {"start_tags": 1, "end_tags": 0,
                                                  "raw_chars": 300_023,
                                                  "observation_chars": 1000}


def test_state_domains_keep_the_screen_when_the_model_gives_nothing() -> None:
    env = make("terminal", backend=replying("<think>..."))
    obs, _ = env.reset(seed=0, options={"scenario": "terminal-extract-archive"})
    state = env.unwrapped.episode.state
    obs, *_, info = env.step(WAIT)
    assert obs == state and "no_output" in info["world_model"]["flags"]


def test_a_backend_error_becomes_a_fallback_observation() -> None:
    env = make("mcp", backend={"name": "scripted",
                               "rules": [{"match": ".", "error": "GPU on fire"}]})
    env.reset(seed=0, options={"scenario": "mcp-kanban-doing-count"})
    obs, _, terminated, _, info = env.step(
        '{"name": "get_board", "arguments": {"board_key": "OPS"}}')
    model = info["world_model"]
    assert (model["fault"], model["ok"], model["flags"]) == ("backend_error", False, ("fault",))
    assert json.loads(obs)["error"]["type"] == "environment_unavailable"
    assert "GPU on fire" in obs and not terminated
    assert env.unwrapped.episode.transcript[-1]["flags"] == ("fault",)


class WrongCountBackend(Backend):
    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return [Completion(text="a"), Completion(text="b")]


class NotACompletionBackend(Backend):
    def complete(self, requests: Sequence[ChatRequest]) -> list:
        return [{"text": "a dict, not a Completion"} for _ in requests]


@pytest.mark.parametrize("backend", [WrongCountBackend(), NotACompletionBackend()])
def test_a_misbehaving_backend_is_a_fault(backend: Backend) -> None:
    env = make("android", backend=backend)
    env.reset(seed=0)
    obs, *_, info = env.step('{"action_type": "wait"}')
    assert info["world_model"]["fault"] == "backend_error"
    assert obs == env.unwrapped.episode.state


def test_a_hung_backend_times_out_and_the_env_moves_on() -> None:
    env = make("web", backend=replying("late", delay_s=5.0), timeout_s=0.3)
    env.reset(seed=0)
    start = time.monotonic()
    obs, *_, info = env.step("noop()")
    assert time.monotonic() - start < 2.0
    assert info["world_model"]["fault"] == "timeout"
    assert obs == env.unwrapped.episode.state


def test_closing_an_env_ends_its_model_thread() -> None:
    before = set(threading.enumerate())
    env = make("terminal", backend=replying("ls", delay_s=0.01))  # a delay makes it blocking
    env.reset(seed=0)
    env.step(WAIT)
    started = [t for t in threading.enumerate() if t not in before]
    assert [t.name for t in started] == ["agentworld-model-call"]
    env.close()
    started[0].join(timeout=600)
    assert not started[0].is_alive()


def test_faults_in_the_vector_env_affect_the_batch_not_the_process() -> None:
    envs = gym.make_vec(env_id("terminal"), num_envs=3,
                        backend={"name": "scripted", "rules": [{"match": ".", "error": "down"}]})
    envs.reset(seed=0)
    obs, rewards, terminated, truncated, infos = envs.step([WAIT, "[]", WAIT])
    faults, reported = infos["world_model"]["fault"], infos["world_model"]["_fault"]
    assert [faults[i] for i in (0, 2)] == ["backend_error"] * 2 and not reported[1]
    assert terminated.tolist() == [False, True, False]  # "[]" ends the episode all the same
    final = infos["final_info"]  # sub-env 1 was reset in the step; its step info is here
    assert final["world_model"]["fault"][1] == "backend_error"
    assert final["observation_source"][1] == "fallback"


@pytest.fixture
def sentinel(tmp_path: Path) -> Path:
    target = tmp_path / "sentinel_dir"
    target.mkdir()
    (target / "keep.txt").write_text("still here")
    return target


def forbid_host_execution(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every way of running code or commands on the host record itself and fail."""
    attempts: list[str] = []

    def forbid(name: str):
        def refuse(*args, **kwargs):
            attempts.append(name)
            raise AssertionError(f"{name} was called")
        return refuse

    for module, name in [(os, "system"), (os, "popen"), (os, "execv"), (os, "remove"),
                         (os, "unlink"), (shutil, "rmtree"), (subprocess, "Popen"),
                         (subprocess, "run"), (builtins, "exec"), (builtins, "eval")]:
        monkeypatch.setattr(module, name, forbid(f"{module.__name__}.{name}"))
    return attempts


def test_hostile_actions_are_only_ever_simulated(sentinel: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(sentinel)
    hostile = {
        "terminal": [json.dumps([{"keystrokes": f"rm -rf {path}\n", "duration": 1}]),
                     json.dumps([{"keystrokes": f"python3 -c \"import shutil; "
                                               f"shutil.rmtree('{path}')\"\n", "duration": 1}])],
        "os": [f"import os\nos.system('rm -rf {path}')",
               f"import subprocess, shutil\nsubprocess.run(['rm', '-rf', '{path}'])\n"
               f"shutil.rmtree('{path}')",
               f"__import__('os').remove('{path}/keep.txt')"],
        "swe": [json.dumps({"name": "bash", "arguments": {"command": f"rm -rf {path}"}})],
        "web": [f"__import__('shutil').rmtree('{path}')",
                f"goto(__import__('os').system('rm -rf {path}'))"],
        "android": [json.dumps({"action_type": "input_text", "text": f"$(rm -rf {path})"})],
    }
    envs = {domain: make(domain, backend="scripted") for domain in hostile}
    for env in envs.values():
        env.reset(seed=0)  # imports and package data load before the trap is set
    attempts = forbid_host_execution(monkeypatch)
    for domain, actions in hostile.items():
        for action in actions:
            obs, _, _, _, info = envs[domain].step(action)
            assert obs in envs[domain].observation_space
    monkeypatch.undo()
    assert attempts == []
    assert (sentinel / "keep.txt").read_text() == "still here"


_ACTIONS = st.one_of(
    st.text(max_size=300),
    st.sampled_from(["[]", "{}", "[{}]", "null", "DONE", '{"name": 1, "arguments": []}',
                     '[{"keystrokes": 5}]', "click(", "send_msg_to_user(1)", "\ud800",
                     '{"action_type": "status", "goal_status": "maybe"}', "```\n[]\n```",
                     "<tool_call>{", "(" * 500, "[" * 5000, "noop(wait_ms=[1]*10)"]),
)


@pytest.mark.parametrize("domain", ["mcp", "terminal", "android", "web", "os", "floor"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(actions=st.lists(_ACTIONS, min_size=1, max_size=4))
def test_step_never_raises_on_agent_text(domain: str, actions: list[str]) -> None:
    env = make(domain, backend="scripted")
    env.reset(seed=0)
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs in env.observation_space
        assert isinstance(reward, float) and not (terminated and truncated)
        if terminated or truncated:
            break


def test_one_failed_request_faults_only_its_sub_env() -> None:
    from tests.helpers.server import FakeOpenAIServer, Reply, chat_response

    def picky(hit: int, body: dict) -> Reply:
        if "FAILME" in json.dumps(body["messages"]):
            return Reply(400, {"error": "rejected"})
        return Reply(200, chat_response("<predicted_observation>found it"
                                           "</predicted_observation>"))

    with FakeOpenAIServer(picky) as server:
        envs = gym.make_vec(env_id("search"), num_envs=3, backend={
            "name": "openai", "model": "fake", "base_url": server.base_url,
            "api_key_env": None, "max_retries": 0})
        envs.reset(seed=0)
        failing = SEARCH.replace('"x"', '"FAILME"')
        obs, *_, infos = envs.step([SEARCH, failing, SEARCH])
        envs.close()
    faults = infos["world_model"]["fault"]
    assert [faults[0], faults[2]] == ["", ""] and faults[1] == "backend_error"
    assert obs[0] == obs[2] == "found it" and "rejected" in obs[1]


class SlowBackend(Backend):
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        time.sleep(self.delay_s)
        return [Completion(text="late") for _ in requests]


def test_timed_out_calls_leave_no_threads_behind() -> None:
    from agentworld_envs.protocol.chat import Fault

    before = set(threading.enumerate())
    client = ModelClient(SlowBackend(0.3), timeout_s=0.02)
    request = ChatRequest([{"role": "user", "content": "x"}])
    outcomes = [client.complete([request, request]) for _ in range(20)]
    grown = [t for t in threading.enumerate() if t not in before]
    client.close()
    for thread in grown:
        thread.join(timeout=600)
    assert all(o == [Fault("timeout", o[0].message)] * 2 for o in outcomes)
    assert len(grown) == 1  # the client's one worker, however many calls timed out
    assert set(threading.enumerate()) <= before


def test_only_blocking_backends_run_in_the_worker_thread(tmp_path: Path) -> None:
    """A backend that answers at once is called in the caller's thread (no hand-off per step);
    one that may block runs in the worker, under the timeout."""
    seen: list[str] = []

    class Local(ScriptedBackend):
        def complete(self, requests):
            seen.append(threading.current_thread().name)
            return super().complete(requests)

    class Remote(Local):
        blocking = True

    request = [ChatRequest([{"role": "user", "content": "x"}])]
    for backend in (Local(), Remote(), RecordingBackend(Local(), tmp_path / "calls.jsonl")):
        client = ModelClient(backend, timeout_s=600.0)
        client.complete(request)
        client.close()
    assert seen == [threading.current_thread().name, "agentworld-model-call",
                    threading.current_thread().name]
