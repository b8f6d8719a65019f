"""A hostile client of ``agentworld serve`` gets a clear 4xx or error reply on every route, and
the server (and, over the WebSocket, the client's own session) goes on serving.

Pinned reproducers first: a WebSocket frame whose validation error quoted a lone surrogate, or a
value nested past pydantic's 255 levels, ended its session; an action ``type`` that is not a
string was a 500 on ``/step`` (over the WebSocket, "unhashable type: 'list'"); a ``session_id``
that is not a string was a 500 on ``POST /mcp``, and a JSON-RPC id (or a 422's input) holding a
lone surrogate a 400 saying that the reply could not be encoded; a body nested near the
interpreter's recursion limit was a 500; an HTTP body was read whole whatever its size. Then a
Hypothesis property sends any JSON at every field of every message, over both transports.
"""

from __future__ import annotations

import json
import sys

import httpx
import pytest

pytest.importorskip("openenv")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402

from agentworld_envs.protocol.bounded_json import MAX_DEPTH  # noqa: E402
from agentworld_envs.serve.app import MAX_BODY_BYTES  # noqa: E402
from tests.serve.test_serve import _ask, _in_process, _ws  # noqa: E402

ERROR_CODES = {"INVALID_JSON", "UNKNOWN_TYPE", "VALIDATION_ERROR", "EXECUTION_ERROR"}


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def _post(url: str, route: str, body: str | bytes) -> httpx.Response:
    return httpx.post(url + route, content=body, headers={"content-type": "application/json"},
                      timeout=600)


def _serves_a_normal_client(url: str) -> None:
    with GenericEnvClient(base_url=url).sync() as env:
        assert env.reset(seed=0).observation["text"]
    assert httpx.get(f"{url}/health", timeout=600).status_code == 200


@pytest.fixture(scope="module")
def floor_b3():
    with _in_process("AgentFloor/B3-v0") as url:
        yield url


@pytest.fixture
def socket(floor_b3):
    with _ws(floor_b3) as ws:
        yield ws


# the server's recursion limit is this process's: the depths just under it parse, and their
# error replies once could not be encoded
NEAR_THE_PARSERS_LIMIT = range(sys.getrecursionlimit() - 100, sys.getrecursionlimit() + 1, 5)


@pytest.mark.parametrize(("frame", "code", "words"), [
    ('{"type": "reset", "data": "\\ud800"}', "VALIDATION_ERROR", "Invalid message"),
    ('{"type": "step", "data": {"message": "x", "\\ud800": 1}}', "VALIDATION_ERROR",
     "Invalid message"),
    ('{"type": "step", "data": {"type": []}}', "VALIDATION_ERROR", "Invalid message"),
    ('{"type": "step", "data": {"type": {"a": 1}}}', "VALIDATION_ERROR", "Invalid message"),
    *(pytest.param('{"type": "reset", "data": ' + _deep(levels) + "}", "INVALID_JSON",
                   f"nested more than {MAX_DEPTH} levels deep", id=f"nested {levels} levels")
      for levels in (MAX_DEPTH + 1, 300, *NEAR_THE_PARSERS_LIMIT, 100_000)),
    pytest.param('{"type": "state", "extra": ' + _deep(300) + "}", "INVALID_JSON",
                 "levels deep", id="state nested 300 levels")])
def test_a_frame_whose_error_once_could_not_be_sent_is_answered_and_the_session_goes_on(
        socket, frame, code, words):
    socket.send(frame)
    reply = json.loads(socket.recv(timeout=600))
    assert (reply["type"], reply["data"]["code"]) == ("error", code), reply
    assert words in reply["data"]["message"]
    assert _ask(socket, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"


def test_a_validation_error_quotes_a_lone_surrogate_as_the_client_sent_it(socket):
    socket.send('{"type": "reset", "data": "run-\\udc00"}')
    (error,) = json.loads(socket.recv(timeout=600))["data"]["errors"]
    assert (error["loc"], error["input"]) == (["data"], "run-\udc00")
    socket.send('{"type": "step", "data": {"type": ["call_tool"]}}')
    (error,) = json.loads(socket.recv(timeout=600))["data"]["errors"]
    assert error["loc"] == ["type"] and "'call_tool'" in error["msg"]


@pytest.mark.parametrize(("route", "body", "status", "words"), [
    ("/step", '{"action": {"type": []}}', 422, "'list_tools'"),
    ("/step", '{"action": {"type": {"a": 1}}}', 422, "'list_tools'"),
    ("/reset", '{"seed": {"\\ud800": 1}}', 422, '["body", "seed"]'),
    pytest.param("/reset", '{"seed": ' + _deep(300) + "}", 400,
                 f"nested more than {MAX_DEPTH} levels", id="seed nested 300 levels"),
    pytest.param("/reset", '{"seed": ' + _deep(300) + ', "episode_id": NaN}', 400,
                 "levels deep", id="seed nested 300 levels and NaN"),
    pytest.param("/step", '{"action": ' + _deep(sys.getrecursionlimit() - 40) + "}", 400,
                 "levels deep", id="action nested near the parser's limit"),
    ("/reset", b'{"episode_id": "\xff"}', 400, "Invalid JSON body: 'utf-8' codec"),
    pytest.param("/reset", '{"seed": ' + "1" * 5000 + "}", 400, "4300 digits",
                 id="seed of 5000 digits")])
def test_an_http_body_the_routes_cannot_read_gets_a_4xx_saying_why(floor_b3, route, body,
                                                                    status, words):
    reply = _post(floor_b3, route, body)
    assert reply.status_code == status, reply.text[:300]
    assert words in json.dumps(reply.json()["detail"]), reply.text[:300]


@pytest.mark.parametrize(("request_", "words"), [
    ({"method": "tools/list", "params": {"session_id": ["x"]}}, "'session_id' must be a string"),
    ({"method": "openenv/session/close", "params": {"session_id": {"a": 1}}},
     "'session_id' must be a string")])
def test_an_mcp_session_id_that_is_not_a_string_gets_a_json_rpc_error(floor_b3, request_,
                                                                      words):
    reply = _post(floor_b3, "/mcp", json.dumps({"jsonrpc": "2.0", "id": 3, **request_}))
    assert reply.status_code == 200, reply.text[:300]
    answer = reply.json()
    assert answer["id"] == 3 and answer["error"]["code"] == -32602
    assert words in answer["error"]["message"]


def test_an_mcp_reply_quoting_a_lone_surrogate_is_sent(floor_b3):
    reply = _post(floor_b3, "/mcp", '{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/list"}')
    assert reply.status_code == 200, reply.text[:300]
    assert reply.json()["id"] == "\ud800" and reply.json()["error"]["code"] == -32603


def test_an_http_body_over_the_limit_gets_a_413(floor_b3):
    def chunks():  # no content-length: the body's size shows as it is read
        for _ in range(4 * MAX_BODY_BYTES >> 20):
            yield b" " * (1 << 20)

    over = b'{"seed": 0, "episode_id": "' + b"x" * MAX_BODY_BYTES + b'"}'
    for route in ("/reset", "/step", "/mcp"):
        for body in (over, chunks()):
            reply = _post(floor_b3, route, body)
            assert reply.status_code == 413, (route, reply.text[:300])
            assert f"over {MAX_BODY_BYTES} bytes" in reply.json()["detail"]
    _serves_a_normal_client(floor_b3)


# -- any JSON at any field ---------------------------------------------------------------------

TEXT = st.one_of(st.text(max_size=12), st.sampled_from(["\ud800", "x\udfff", "", "B3", "v0"]))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT,
                    st.integers(min_value=10 ** 300, max_value=10 ** 4000))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)
ANY = st.one_of(VALUES, st.integers(min_value=MAX_DEPTH - 5, max_value=MAX_DEPTH + 60).map(
    lambda levels: json.loads(_deep(levels))))
DATA = st.one_of(
    ANY,
    st.fixed_dictionaries({}, optional={"seed": ANY, "episode_id": ANY, "options": ANY}),
    st.builds(lambda task, variant, other: {"options": {"task": task, "variant": variant,
                                                        **other}},
              ANY, ANY, st.dictionaries(TEXT, ANY, max_size=2)),
    st.fixed_dictionaries({}, optional={"type": ANY, "message": ANY, "tool_name": ANY,
                                        "arguments": ANY, "metadata": ANY}),
    st.dictionaries(TEXT, ANY, max_size=3))
MESSAGES = st.one_of(
    st.builds(lambda kind, data: {"type": kind, "data": data},
              st.one_of(st.sampled_from(["reset", "step", "state", "mcp"]), ANY), DATA),
    st.dictionaries(TEXT, ANY, max_size=3).filter(lambda message: message.get("type") != "close"),
    ANY)


def _frame(message) -> str:
    return json.dumps(message)  # lone surrogates as escapes, NaN and infinities as Python writes


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(message=MESSAGES, route=st.sampled_from(["/reset", "/step", "/mcp"]))
def test_any_json_at_any_field_gets_a_clear_answer_and_the_server_goes_on(floor_b3, socket,
                                                                         message, route):
    socket.send(_frame(message))
    reply = json.loads(socket.recv(timeout=600))
    assert reply["type"] in {"observation", "state", "error"}, reply
    if reply["type"] == "error":
        assert reply["data"]["code"] in ERROR_CODES, reply
        assert reply["data"]["message"] and "\n" not in reply["data"]["message"], reply
    assert _ask(socket, {"type": "state"})["type"] == "state"  # the session goes on

    body = message.get("data", message) if isinstance(message, dict) else message
    answer = _post(floor_b3, route, _frame({"action": body} if route == "/step" else body))
    assert answer.status_code < 500, answer.text[:300]
    assert isinstance(answer.json(), dict)  # JSON whatever the input
