"""``agentworld serve``: real servers on loopback, played through OpenEnv's own client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import httpx
import pytest

pytest.importorskip("openenv")

import uvicorn  # noqa: E402
from gymnasium.utils import seeding  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import floor_tasks  # noqa: E402
from agentworld_envs.cli import main  # noqa: E402
from agentworld_envs.serve.app import _Server, build_app  # noqa: E402
from agentworld_envs.serve.schema import TurnAction  # noqa: E402
from agentworld_envs.serve.served_env import ServedEnv, resolve_env_ids  # noqa: E402
from agentworld_envs.serve.session import GymSession  # noqa: E402
from agentworld_envs.serve.settings import ServeSettings  # noqa: E402
from floor_tasks.env import FloorEnv  # noqa: E402
from tests.helpers.examples import HANG_GUARD_S  # noqa: E402
from tests.helpers.openenv_server import serve, stats  # noqa: E402
from tests.helpers.server import free_port  # noqa: E402

SLOW_RULES = json.dumps({"name": "scripted", "rules": [
    {"match": "slow_call", "delay_s": 3.0, "reply": "<predicted_observation>late"
                                                    "</predicted_observation>"},
    {"match": "poison", "error": "the model choked on this request"}]})


def _wait(predicate, what: str, limit_s: float = 600.0) -> None:
    """Poll until ``predicate()`` holds (a generous bound, not a speed assertion)."""
    deadline = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.1)


def _ws(url: str):
    """A websocket to the server, without keepalive pings: on a loaded machine a pong can come
    later than the client's 20 s default, and the test must not depend on the machine's speed."""
    return connect(url.replace("http", "ws", 1) + "/ws", open_timeout=600, ping_interval=None)


def _ask(ws, message: dict) -> dict:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=600))


@contextlib.contextmanager
def _in_process(env_id: str, **settings):
    """``build_app`` served by uvicorn in a thread of this process on a free loopback port: a
    real server whose internals a test can patch. Yields its base URL."""
    port = free_port()
    app = build_app(ServeSettings(env_id=env_id, port=port, **settings))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        _wait(lambda: server.started or not thread.is_alive(), "the in-process server started")
        assert server.started, "the in-process server did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(HANG_GUARD_S)


LOOKUP = json.dumps({"name": "lookup_record", "arguments": {"record_id": "PKG-88"}})
"""A B3 tool call that keeps the episode going."""


@pytest.fixture(scope="module")
def floor_all():
    with serve("AgentFloor/all", "--max-sessions", "8") as (url, _):
        yield url


@pytest.fixture(scope="module")
def slow_search():
    with serve("AgentWorld/Search-v0", "--backend", SLOW_RULES, "--kw",
               "reveal_reference=true") as (url, process):
        yield url, process


def _tier_tasks() -> list[str]:
    firsts: dict[str, str] = {}
    for task in floor_tasks.load_tasks():
        firsts.setdefault(task.tier, task.id)
    return list(firsts.values())


def test_a_whole_episode_per_tier_through_the_sync_client(floor_all):
    with GenericEnvClient(base_url=floor_all).sync() as env:
        for task in _tier_tasks():
            first = env.reset(seed=1, options={"task": task, "variant": "v0"})
            assert first.observation["metadata"]["env_id"] == f"AgentFloor/{task}-v0"
            tools = first.observation["metadata"]["info"]["tools"]
            assert len(first.observation["tools"]) == len(tools) and not first.done
            for action in floor_tasks.solution(task, "v0"):
                result = env.step({"message": action})
            meta = result.observation["metadata"]
            assert (result.reward, result.done, meta["terminated"]) == (1.0, True, True), task
            assert meta["info"]["verdict"]["passed"] is True

            env.reset(seed=1, options={"task": task, "variant": "v0"})
            wrong = env.step({"message": "I cannot do this task."})
            meta = wrong.observation["metadata"]
            assert (wrong.reward, wrong.done) == (0.0, True), task
            assert meta["info"]["verdict"]["failure_labels"], task


def test_the_seed_picks_the_task_and_the_async_client_plays(floor_all):
    ids = resolve_env_ids("AgentFloor/all")
    rng, _ = seeding.np_random(7)
    expected = ids[int(rng.integers(len(ids)))]
    lone = gym.make(expected)
    prompt, _ = lone.reset(seed=7)

    async def play() -> tuple[dict, dict]:
        async with GenericEnvClient(base_url=floor_all) as env:
            first = await env.reset(seed=7)
            again = await env.reset(seed=7)
            return first.observation, again.observation

    first, again = asyncio.run(play())
    assert first["metadata"]["env_id"] == again["metadata"]["env_id"] == expected
    assert first["text"] == again["text"] == prompt


def test_step_is_truncated_at_the_budget_and_keeps_gymnasiums_split(floor_all):
    with GenericEnvClient(base_url=floor_all).sync() as env:
        env.reset(options={"task": "A1"})
        budget = gym.spec("AgentFloor/A1-v0").max_episode_steps
        for _ in range(budget):
            result = env.step({"message": '{"name": "lookup_record", "arguments": '
                                          '{"record_id": "NOPE-1"}}'})
        meta = result.observation["metadata"]
        assert result.done and meta["truncated"] and not meta["terminated"]
        assert meta["info"]["termination"] == "step_budget_exhausted"


def test_tool_actions_list_and_call_like_a_message(floor_all):
    call = {"name": "lookup_record", "arguments": {"record_id": "PKG-88"}}
    with GenericEnvClient(base_url=floor_all).sync() as a, \
            GenericEnvClient(base_url=floor_all).sync() as b:
        a.reset(options={"task": "B3", "variant": "v0"})
        b.reset(options={"task": "B3", "variant": "v0"})
        listed = a.step({"type": "list_tools"}).observation["tools"]
        assert "lookup_record" in {tool["name"] for tool in listed}
        assert all({"name", "description", "input_schema"} <= set(tool) for tool in listed)
        by_tool = a.step({"type": "call_tool", "tool_name": call["name"],
                          "arguments": call["arguments"]})
        by_message = b.step({"message": json.dumps(call)})
        assert by_tool.observation["text"] == by_message.observation["text"]
        assert by_tool.observation["metadata"]["info"]["turn"] == 1  # list_tools took no step


def test_bad_input_gets_an_error_and_the_session_goes_on(floor_all):
    with _ws(floor_all) as ws:
        assert _ask(ws, {"type": "step", "data": {"message": "hi"}})["type"] == "error"
        ws.send("{not json")
        assert "Invalid JSON" in json.loads(ws.recv(timeout=600))["data"]["message"]
        for bad in ({"type": "step", "data": {}},                     # no message
                    {"type": "step", "data": {"message": 3}},         # not text
                    {"type": "step", "data": {"message": "x", "extra": 1}},
                    {"type": "reset", "data": {"seed": "abc"}},
                    {"type": "reset", "data": {"seed": -1}},
                    {"type": "reset", "data": {"options": {"colour": "red"}}},
                    {"type": "reset", "data": {"options": {"task": "Z9"}}},
                    {"type": "reset", "data": {"bogus": True}},
                    {"type": "reset", "data": {"options": {"variant": "v99"}}},
                    # the first reset of the session's B3 env fails (its env must still step)
                    {"type": "reset", "data": {"options": {"task": "B3", "variant": "v99"}}},
                    {"type": "reset", "data": {"options": {"task": "B3", "variant": [1]}}},
                    {"type": "step", "data": {"type": "call_tool"}},
                    {"type": "teleport"}):
            reply = _ask(ws, bad)
            assert reply["type"] == "error", bad
            assert reply["data"]["message"], bad
        assert _ask(ws, {"type": "reset", "data": {"options": {"task": "B3", "variant": "v0"}}}
                    )["type"] == "observation"
        first = _ask(ws, {"type": "step", "data": {"message": LOOKUP}})
        assert first["type"] == "observation", first["data"]
        assert first["data"]["observation"]["metadata"]["info"]["turn"] == 1
        for frame in ("[1, 2]", "3", '"x"', "null",
                      '{"type": "reset", "data": {"seed": ' + "1" * 5000 + "}}",  # too long
                      "[" * 100_000 + "]" * 100_000,  # too deep
                      b'{"type": "state"}'):  # a binary frame
            ws.send(frame)
            reply = json.loads(ws.recv(timeout=600))
            assert (reply["type"], reply["data"]["code"]) == ("error", "INVALID_JSON"), frame[:40]
        mcp = _ask(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list",
                                                "id": 1}})
        assert mcp["type"] == "error" and "list_tools" in mcp["data"]["message"]
        second = _ask(ws, {"type": "step", "data": {"message": LOOKUP}})
        assert second["type"] == "observation", second["data"]
        assert second["data"]["observation"]["metadata"]["info"]["turn"] == 2  # same episode
        huge = _ask(ws, {"type": "step", "data": {"message": "{" * 3_000_000}})
        assert huge["type"] == "observation", huge["data"]  # read as a (wrong) final answer
        assert (huge["data"]["reward"], huge["data"]["done"]) == (0.0, True)
        _ask(ws, {"type": "reset", "data": {"options": {"task": "B3", "variant": "v0"}}})
        for action in floor_tasks.solution("B3", "v0"):
            reply = _ask(ws, {"type": "step", "data": {"message": action}})
        assert reply["data"]["reward"] == 1.0
    assert httpx.get(f"{floor_all}/health", timeout=600).status_code == 200


def test_a_disconnect_ends_the_session(floor_all):
    before = stats(floor_all)["sessions_closed"]
    ws = _ws(floor_all)
    assert _ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
    ws.socket.close()  # the client vanishes without a close frame
    _wait(lambda: stats(floor_all)["sessions_closed"] > before, "the dropped session closed")
    assert stats(floor_all)["capacity"]["active_sessions"] == 0


def test_over_the_cap_the_capacity_error_comes_at_once():
    with serve("AgentFloor/A1-v0", "--max-sessions", "2") as (url, _):
        first, second = _ws(url), _ws(url)
        for ws in (first, second):
            assert _ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
        with _ws(url) as third:
            reply = json.loads(third.recv(timeout=600))
        assert reply["data"]["code"] == "CAPACITY_REACHED"
        first.close()
        _wait(lambda: stats(url)["capacity"]["active_sessions"] == 1, "a slot freed")
        with GenericEnvClient(base_url=url).sync() as env:
            assert env.reset().observation["metadata"]["env_id"] == "AgentFloor/A1-v0"
        second.close()


def _reset_within_the_idle_timeout(url: str):
    """A websocket whose session was reset. On a loaded machine the reset may come after a
    short idle timeout closed the session the socket opened: then a new socket tries again."""
    for _ in range(100):
        ws = _ws(url)
        if _ask(ws, {"type": "reset", "data": {}})["type"] == "observation":
            return ws
        ws.close()
    raise AssertionError("no reset came within the idle timeout in 100 sessions")


def test_idle_sessions_are_closed_and_say_so():
    with serve("AgentFloor/A1-v0", "--idle-timeout", "0.5") as (url, _):
        with _reset_within_the_idle_timeout(url) as ws:
            closed = stats(url)["sessions_closed"]  # the sessions of sockets that came late
            _wait(lambda: stats(url)["sessions_closed"] > closed, "the idle session closed")
            reply = _ask(ws, {"type": "step", "data": {"message": "done"}})
            assert reply["type"] == "error" and "idle" in reply["data"]["message"]
        assert stats(url)["sessions_open"] == 0


def test_a_long_step_keeps_its_socket_health_answers_and_faults_stay_in_their_session(
        slow_search):
    url, _ = slow_search

    async def run() -> tuple[object, list[int], object]:
        # pings go on through the step; their timeout is a hang guard, as a loaded machine's
        # server may answer one late
        async with GenericEnvClient(base_url=url, websocket_ping_interval_s=0.2,
                                    websocket_ping_timeout_s=HANG_GUARD_S) as slow, \
                GenericEnvClient(base_url=url) as poisoned:
            await slow.reset(seed=0)
            await poisoned.reset(seed=0)
            step = asyncio.ensure_future(slow.step({"message": json.dumps(
                {"name": "web_search", "arguments": {"queries": ["slow_call"]}})}))
            health = []
            async with httpx.AsyncClient() as http:
                while not step.done():
                    if stats(url)["running"]:
                        health.append((await http.get(f"{url}/health")).status_code)
                    await asyncio.sleep(0.2)
            bad = await poisoned.step({"message": json.dumps(
                {"name": "web_search", "arguments": {"queries": ["poison"]}})})
            return step.result(), health, bad

    slow, health, bad = asyncio.run(run())
    assert slow.observation["text"] == "late"
    assert health and set(health) == {200}
    model = bad.observation["metadata"]["info"]["world_model"]
    assert model["fault"] == "backend_error" and "choked" in model["fault_message"]
    assert bad.observation["metadata"]["info"]["observation_source"] == "fallback"


def test_reveal_reference_is_the_servers_choice(slow_search, floor_all):
    url, _ = slow_search
    with GenericEnvClient(base_url=url).sync() as env:
        assert "reference" in env.reset(seed=0).observation["metadata"]["info"]
    with GenericEnvClient(base_url=floor_all).sync() as env:
        info = env.reset(options={"task": "C1", "variant": "v0"}).observation["metadata"]["info"]
        assert "reference" not in info and "solution" not in json.dumps(info)


def test_sigterm_shuts_down_and_reports_the_running_step():
    with serve("AgentWorld/Search-v0", "--backend", SLOW_RULES) as (url, process):
        outcome: dict = {}

        def play() -> None:
            with GenericEnvClient(base_url=url).sync() as env:
                env.reset(seed=0)
                try:
                    outcome["result"] = env.step({"message": json.dumps(
                        {"name": "web_search", "arguments": {"queries": ["slow_call"]}})})
                except Exception as exc:  # noqa: BLE001 - a closed socket is reported
                    outcome["error"] = exc

        player = threading.Thread(target=play)
        player.start()
        _wait(lambda: stats(url)["running"] >= 1, "the slow step started")
        process.send_signal(signal.SIGTERM)
        player.join(timeout=HANG_GUARD_S)
        assert process.wait(timeout=HANG_GUARD_S) in (0, -signal.SIGTERM)  # uvicorn re-raises it
        assert not player.is_alive()
        if "result" in outcome:  # the step finished before the socket closed
            assert outcome["result"].observation["text"] == "late"
        else:  # the socket was closed with "service restart", not left hanging
            assert "1012" in str(outcome["error"])


def test_the_cli_says_what_it_cannot_serve(capsys):
    assert main(["serve", "AgentFloor/Z9-v0"]) == 2
    assert "not an env this server can serve" in capsys.readouterr().err
    assert main(["serve", "AgentFloor/tier:Q"]) == 2
    assert main(["serve", "AgentFloor/A1-v0", "--backend", "scripted"]) == 2
    assert "AgentWorld envs only" in capsys.readouterr().err
    assert main(["serve", "AgentFloor/A1-v0", "--kw", "nonsense"]) == 2
    assert main(["serve", "AgentFloor/A1-v0", "--kw", "colour=red"]) == 2
    assert main(["serve", "AgentWorld/MCP-v0", "--backend", "scripted", "--kw",
                 "scenaros=generated"]) == 2
    assert "scenaros" in capsys.readouterr().err
    assert main(["serve", "AgentFloor/A1-v0", "--kw", 'max_episode_steps="abc"']) == 2
    assert "max_episode_steps" in capsys.readouterr().err
    assert main(["serve", "AgentFloor/A1-v0", "--kw", "variant=[1]"]) == 2


def test_the_settings_refuse_a_nan_idle_timeout_and_a_negative_grace(capsys):
    with pytest.raises(ValueError, match="idle_timeout_s"):
        ServeSettings(env_id="AgentFloor/A1-v0", idle_timeout_s=float("nan"))
    with pytest.raises(ValueError, match="shutdown_grace_s"):
        ServeSettings(env_id="AgentFloor/A1-v0", shutdown_grace_s=-5)
    assert main(["serve", "AgentFloor/A1-v0", "--idle-timeout", "nan"]) == 2
    assert "idle_timeout_s" in capsys.readouterr().err
    assert main(["serve", "AgentFloor/A1-v0", "--shutdown-grace", "-5"]) == 2


@pytest.mark.slow
def test_the_trl_example_trains_on_a_served_env(tmp_path):
    from tests.examples.test_examples import quick_check, run_example

    output = run_example("openenv_trl.py", *quick_check("openenv_trl.py"), cwd=tmp_path)
    step = re.search(r"step 1: reward [01]\.\d+ \(std (?P<std>\S+)\), loss \S+, grad_norm "
                     r"(?P<grad_norm>\S+) from the env served at http://127\.0\.0\.1:", output)
    assert step and float(step["grad_norm"]) > 0 and float(step["std"]) > 0, output


@pytest.mark.slow
def test_openenv_validate_accepts_the_server(floor_all):
    exe = [sys.executable, "-m", "openenv.cli", "validate", "--url", floor_all]
    done = subprocess.run(exe, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Verdict: PASS" in done.stdout


def test_32_sessions_share_one_model_in_batches_and_play_what_a_lone_env_plays(tiny_lm_dir):
    backend = {"name": "hf", "model": str(tiny_lm_dir), "batch_size": 32}
    settings = {"scenarios": "generated", "sampling": {"max_tokens": 16}}
    sessions = 32
    with serve("AgentWorld/MCP-v0", "--backend", json.dumps(backend),
               "--kw", json.dumps(settings)) as (url, _):

        async def play(seed: int) -> list[str]:
            async with GenericEnvClient(base_url=url) as env:
                first = await env.reset(seed=seed)
                seen = [first.observation["text"]]
                for action in first.observation["metadata"]["info"]["candidate_actions"][:3]:
                    result = await env.step({"message": action})
                    seen.append(result.observation["text"])
                    if result.done:
                        break
                return seen

        async def play_all() -> list[list[str]]:
            return await asyncio.gather(*(play(seed) for seed in range(sessions)))

        served = asyncio.run(play_all())
        counted = stats(url)
    model = counted["world_model"]
    assert counted["sessions_opened"] == sessions
    assert model["requests"] > model["batches"] and model["largest"] > 1
    lone = gym.make("AgentWorld/MCP-v0", backend=backend, **settings)
    for seed, seen in enumerate(served):
        prompt, info = lone.reset(seed=seed)
        alone = [prompt]
        for action in info["candidate_actions"][:3]:
            observation, _, terminated, truncated, _ = lone.step(action)
            alone.append(observation)
            if terminated or truncated:
                break
        assert seen == alone, seed


def test_remote_env_is_a_gymnasium_env_on_the_server(floor_all):
    from agentworld_envs.serve.client import RemoteEnv

    env = RemoteEnv(floor_all)
    prompt, info = env.reset(seed=3, options={"task": "C1", "variant": "i1"})
    lone = gym.make("AgentFloor/C1-v0")
    assert prompt == lone.reset(seed=3, options={"variant": "i1"})[0]
    assert info["task_id"] == "C1" and info["tools"]
    for action in floor_tasks.solution("C1", "i1"):
        observation, reward, terminated, truncated, info = env.step(action)
        assert observation == lone.step(action)[0]
    assert (reward, terminated, truncated) == (1.0, True, False)
    env.close()
    _wait(lambda: stats(floor_all)["capacity"]["active_sessions"] == 0, "the session ended")


def test_the_stateless_http_routes_answer_and_refuse_with_400(floor_all):
    reset = httpx.post(f"{floor_all}/reset", json={"seed": 1, "options": {"task": "B3"}},
                       timeout=600)
    assert reset.status_code == 200
    assert reset.json()["observation"]["metadata"]["env_id"] == "AgentFloor/B3-v0"
    step = httpx.post(f"{floor_all}/step", json={"action": {"message": "hi"}}, timeout=600)
    assert step.status_code == 400 and "reset()" in step.json()["detail"]
    bad = httpx.post(f"{floor_all}/reset", json={"options": {"colour": 1}}, timeout=600)
    assert bad.status_code == 400 and "colour" in bad.json()["detail"]
    for body, named in (({"options": {"task": "B3", "variant": [1]}}, "variant"),
                        ({"self": 1}, "self")):
        bad = httpx.post(f"{floor_all}/reset", json=body, timeout=600)
        assert bad.status_code == 400 and named in bad.json()["detail"], body
    malformed = httpx.post(f"{floor_all}/step", json={"action": {"message": 3}}, timeout=600)
    assert malformed.status_code == 422


def test_stateless_http_requests_are_not_counted_as_sessions(floor_all):
    _wait(lambda: stats(floor_all)["sessions_open"] == 0, "earlier sessions closed")
    before = stats(floor_all)["sessions_opened"]
    assert httpx.post(f"{floor_all}/reset", json={}, timeout=600).status_code == 200
    assert httpx.get(f"{floor_all}/state", timeout=600).status_code == 200
    assert httpx.get(f"{floor_all}/metadata", timeout=600).status_code == 200
    with _ws(floor_all) as ws:
        assert _ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
    after = stats(floor_all)
    assert after["sessions_opened"] == before + 1  # the WebSocket session alone


def test_a_bad_reset_leaves_the_episode_as_it_was(floor_all):
    with _ws(floor_all) as ws:
        _ask(ws, {"type": "reset", "data": {"options": {"task": "B3", "variant": "v0"}}})
        _ask(ws, {"type": "step", "data": {"message": LOOKUP}})
        before = _ask(ws, {"type": "state"})["data"]
        bad = _ask(ws, {"type": "reset", "data": {"episode_id": 123,
                                                  "options": {"task": "C1", "variant": "v0"}}})
        assert bad["type"] == "error" and "episode_id" in bad["data"]["message"]
        assert _ask(ws, {"type": "state"})["data"] == before
        meta = _ask(ws, {"type": "step", "data": {"message": LOOKUP}}
                    )["data"]["observation"]["metadata"]
        assert (meta["env_id"], meta["episode_id"], meta["info"]["turn"]) == (
            "AgentFloor/B3-v0", before["episode_id"], 2)


def test_a_seed_makes_every_later_draw_of_the_session_repeat(floor_all):
    def play(options: dict | None) -> list[tuple]:
        with _ws(floor_all) as ws:
            replies = [_ask(ws, {"type": "reset", "data": {"seed": 7, "options": options}})]
            replies += [_ask(ws, {"type": "reset", "data": {}}) for _ in range(6)]
        observations = [reply["data"]["observation"] for reply in replies]
        return [(o["metadata"]["env_id"], o["text"], o["metadata"]["info"])
                for o in observations]

    for options in (None, {"task": "B3"}):
        played = play(options)
        assert len({env_id for env_id, _, _ in played}) > 1, options  # several tasks drawn
        assert play(options) == played, options


def test_a_step_after_the_end_leaves_the_episode_as_it_ended(floor_all):
    with _ws(floor_all) as ws:
        _ask(ws, {"type": "reset", "data": {"options": {"task": "B3", "variant": "v0"}}})
        for action in floor_tasks.solution("B3", "v0"):
            _ask(ws, {"type": "step", "data": {"message": action}})
        ended = _ask(ws, {"type": "state"})["data"]
        assert (ended["done"], ended["terminated"], ended["truncated"]) == (True, True, False)
        again = _ask(ws, {"type": "step", "data": {"message": action}})
        assert again["type"] == "observation" and again["data"]["done"] is True
        assert "ended" in again["data"]["observation"]["text"]  # the env's answer
        assert _ask(ws, {"type": "state"})["data"] == ended


def test_a_large_call_tool_step_runs_in_the_sessions_thread(monkeypatch):
    where: list[str] = []
    step = GymSession._step

    def recorded(self, action, /, *args, **kwargs):
        try:
            asyncio.get_running_loop()
            where.append("event loop")
        except RuntimeError:
            where.append("thread")
        return step(self, action, *args, **kwargs)

    monkeypatch.setattr(GymSession, "_step", recorded)
    with _in_process("AgentFloor/B3-v0") as url, _ws(url) as ws:
        _ask(ws, {"type": "reset", "data": {"options": {"variant": "v0"}}})
        reply = _ask(ws, {"type": "step", "data": {"message": LOOKUP}})
        assert reply["type"] == "observation" and where == ["event loop"]  # a short message
        reply = _ask(ws, {"type": "step", "data": {
            "type": "call_tool", "tool_name": "lookup_record",
            "arguments": {"record_id": "PKG-88", "pad": [[1] * 10] * 20_000}}})
        assert reply["type"] == "observation" and where == ["event loop", "thread"]


def test_a_step_waiting_for_the_sessions_thread_is_busy_and_no_sweep_closes_it():
    server = _Server(ServedEnv(ServeSettings(env_id="AgentFloor/B3-v0", idle_timeout_s=1e-6)))
    release = threading.Event()

    async def play() -> tuple[bool, list[str], object]:
        _, session = await server._create_session()
        session.reset(options={"variant": "v0"})
        session._thread = ThreadPoolExecutor(1)
        session._thread.submit(release.wait, 600)  # the thread is taken
        call = TurnAction(type="call_tool", tool_name="lookup_record",
                          arguments={"record_id": "PKG-88"})
        step = asyncio.ensure_future(session.step_async(call))
        await asyncio.sleep(0.05)  # the step now waits for the thread
        waiting, idle = session.busy, server.idle_sessions()
        release.set()
        return waiting, idle, await step

    waiting, idle, observation = asyncio.run(play())
    assert waiting is True and idle == []
    assert observation.metadata["info"]["turn"] == 1


def test_the_idle_sweep_spares_a_session_active_since_it_looked(monkeypatch):
    passes: list[int] = []

    def stale(self) -> list[str]:  # a pass that took every session for idle
        passes.append(len(self._sessions))
        return list(self._sessions)

    monkeypatch.setattr(_Server, "idle_sessions", stale)
    with _in_process("AgentFloor/B3-v0", idle_timeout_s=600) as url, _ws(url) as ws:
        _ask(ws, {"type": "reset", "data": {"options": {"variant": "v0"}}})
        _wait(lambda: 1 in passes[:-1], "a whole sweep pass over the session")
        reply = _ask(ws, {"type": "step", "data": {"message": LOOKUP}})
        assert reply["type"] == "observation", reply["data"]
        assert stats(url)["sessions_closed"] == 0


def test_the_idle_sweep_goes_on_after_a_close_that_fails(monkeypatch):
    close_for = GymSession.close_for
    calls: list[str] = []

    def fails_once(self, reason: str) -> None:
        calls.append(reason)
        if len(calls) == 1:
            raise RuntimeError("this close fails")
        close_for(self, reason)

    monkeypatch.setattr(GymSession, "close_for", fails_once)
    with _in_process("AgentFloor/B3-v0", idle_timeout_s=0.2) as url, \
            _ws(url) as first, _ws(url) as second:
        _wait(lambda: stats(url)["capacity"]["active_sessions"] == 0,
              "both idle sessions closed")
        replies = [_ask(ws, {"type": "reset", "data": {}}) for ws in (first, second)]
        assert [reply["type"] for reply in replies] == ["error", "error"]
        assert any("idle" in reply["data"]["message"] for reply in replies)


def test_a_session_closes_all_its_envs_when_one_fails_to(monkeypatch):
    closed: list[str] = []

    def close(self) -> None:
        closed.append(self.task.id)
        if len(closed) == 1:
            raise RuntimeError("this env fails to close")

    with _in_process("AgentFloor/tier:A") as url:
        monkeypatch.setattr(FloorEnv, "close", close)
        with _ws(url) as ws:
            for task in ("A1", "A2"):
                _ask(ws, {"type": "reset", "data": {"options": {"task": task}}})
        _wait(lambda: len(closed) == 2, "both envs closed")
    assert sorted(closed) == ["A1", "A2"]


def test_a_lone_surrogate_the_env_returns_reaches_the_client_as_it_is(floor_all):
    call = '{"name": "lookup_\\ud800", "arguments": {}}'  # Unicode text: an agent's JSON escape
    lone = gym.make("AgentFloor/B3-v0")
    lone.reset(seed=0, options={"variant": "v0"})
    expected = lone.step(call)[0]
    assert "\ud800" in expected  # the env read the escape: its answer holds a lone surrogate
    with _ws(floor_all) as ws:
        first = _ask(ws, {"type": "reset", "data": {
            "seed": 0, "episode_id": "run-\udc00", "options": {"task": "B3", "variant": "v0"}}})
        assert first["data"]["observation"]["metadata"]["episode_id"] == "run-\udc00"
        reply = _ask(ws, {"type": "step", "data": {"message": call}})
        assert reply["type"] == "observation", reply["data"]
        assert reply["data"]["observation"]["text"] == expected
        state = _ask(ws, {"type": "state"})["data"]
        assert (state["episode_id"], state["step_count"]) == ("run-\udc00", 1)


def test_a_refused_reset_leaves_the_sessions_draws_as_they_were(floor_all):
    def play(refused: dict | None) -> list[tuple[str, str]]:
        with _ws(floor_all) as ws:
            _ask(ws, {"type": "reset", "data": {"seed": 7}})
            if refused is not None:
                assert _ask(ws, {"type": "reset", "data": refused})["type"] == "error"
            observations = [_ask(ws, {"type": "reset", "data": {}})["data"]["observation"]
                            for _ in range(4)]
        return [(o["metadata"]["env_id"], o["text"]) for o in observations]

    played = play(None)
    for refused in ({"seed": 99, "options": {"task": "Z9"}},  # a new seed, then a bad task
                    {"options": {"task": "B3", "variant": "v99"}}):  # B3's first seed drawn
        assert play(refused) == played, refused


def test_a_malformed_scenario_object_is_the_clients_error(slow_search):
    url, _ = slow_search
    bad = {"options": {"scenario": {"id": 3}}}
    http = httpx.post(f"{url}/reset", json=bad, timeout=600)
    assert http.status_code == 400 and "Scenario" in http.json()["detail"]
    with _ws(url) as ws:
        reply = _ask(ws, {"type": "reset", "data": bad})
        assert reply["data"]["code"] == "VALIDATION_ERROR", reply["data"]
        assert {("id",), ("instruction",)} <= {tuple(e["loc"]) for e in reply["data"]["errors"]}
        assert "sub-env" not in json.dumps(reply)
        assert _ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


def test_an_action_with_fields_of_another_type_is_refused(floor_all):
    with _ws(floor_all) as ws:
        _ask(ws, {"type": "reset", "data": {"options": {"task": "B3", "variant": "v0"}}})
        for action in ({"message": "I cannot do this task.", "tool_name": "lookup_record",
                        "arguments": {"record_id": "PKG-88"}},
                       {"type": "list_tools", "message": LOOKUP},
                       {"type": "call_tool", "tool_name": "lookup_record", "message": LOOKUP}):
            reply = _ask(ws, {"type": "step", "data": action})
            assert reply["data"]["code"] == "VALIDATION_ERROR", action
            assert '"message"' in reply["data"]["errors"][0]["msg"], reply["data"]
        # a full dump of the action model is fine: another type's field at its default is none
        reply = _ask(ws, {"type": "step", "data": TurnAction(message=LOOKUP).model_dump()})
        assert reply["data"]["observation"]["metadata"]["info"]["turn"] == 1  # none played
