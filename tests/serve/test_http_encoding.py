"""The stateless HTTP routes answer every request with JSON: a 422 quoting a client's NaN,
infinity or lone surrogate names the field (it was a misleading 400 saying the reply could not
be encoded), and a reset that succeeded sends its reply, a lone surrogate as its JSON escape (it
was a 400 although the reset had succeeded)."""

from __future__ import annotations

import json

import gymnasium as gym
import httpx
import pytest

pytest.importorskip("openenv")

from tests.serve.test_serve import _in_process  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")


@pytest.fixture(scope="module")
def floor_b3():
    with _in_process("AgentFloor/B3-v0") as url:
        yield url


def _post(url: str, route: str, body: str) -> httpx.Response:
    return httpx.post(url + route, content=body, headers={"content-type": "application/json"},
                      timeout=600)


@pytest.mark.parametrize(("route", "body", "loc", "kind"), [
    ("/reset", '{"seed": NaN}', ["body", "seed"], "finite_number"),
    ("/reset", '{"seed": 1e400}', ["body", "seed"], "finite_number"),
    ("/reset", '{"seed": -Infinity}', ["body", "seed"], "finite_number"),
    ("/reset", '{"episode_id": "\\ud800"}', ["body", "episode_id"], "string_unicode"),
    ("/step", '{"action": {"message": NaN}}', ["message"], "string_type"),
    ("/step", '{"action": {"type": "list_tools"}, "timeout_s": NaN}', ["body", "timeout_s"],
     "greater_than")])
def test_an_invalid_number_or_string_gets_a_422_naming_the_field(floor_b3, route, body, loc,
                                                                  kind):
    reply = _post(floor_b3, route, body)
    assert reply.status_code == 422, reply.text
    (error,) = json.loads(reply.content)["detail"]
    assert (error["loc"], error["type"]) == (loc, kind)


def test_a_reset_whose_reply_holds_a_lone_surrogate_sends_it_escaped():
    env = gym.make("AgentWorld/Search-v0", backend="scripted")
    env.reset(seed=0)
    scenario = {**env.unwrapped.scenario.model_dump(mode="json"), "id": "custom", "tools": [
        {"name": "extra_tool", "description": "reads \ud800 aloud",
         "parameters": {"type": "object", "properties": {}}}]}
    body = json.dumps({"seed": 0, "options": {"scenario": scenario}})
    with _in_process("AgentWorld/Search-v0", backend="scripted") as url:
        reply = _post(url, "/reset", body)
    assert reply.status_code == 200, reply.text
    assert b"\\ud800" in reply.content
    tools = {tool["name"]: tool for tool in reply.json()["observation"]["tools"]}
    assert tools["extra_tool"]["description"] == "reads \ud800 aloud"
