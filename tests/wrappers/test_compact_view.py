"""The compact view keeps an action's escaped lone surrogate an escape, and shows a record
whole only when the action names its id whole."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentworld_envs.domains.floor.domain import DOMAIN as FLOOR
from agentworld_envs.models.compact_view import compact_messages


def _floor_view(task: str, action: str) -> list[dict[str, str]]:
    scenario = FLOOR.resolve(task)
    return compact_messages([
        {"role": "system", "content": FLOOR.system_prompt(scenario, False)},
        {"role": "user", "content": FLOOR.user_message(scenario, 1, action, "json", None, False)}])


def test_an_escaped_lone_surrogate_stays_an_escape_the_tokenizer_can_read() -> None:
    """Before, one-lining the action's JSON decoded ``\\ud800`` into a bare surrogate, and the
    embedded world model's tokenizer raised on every such (ASCII) action."""
    action = '{"name": "lookup_record", "arguments": {"record_id": "\\ud800APP-55"}}'
    user = _floor_view("C3/v0", action)[-1]["content"]
    user.encode("utf-8")  # raised UnicodeEncodeError
    one_line = re.search(r"```json\n(.*)\n```", user)[1]
    assert one_line == action and json.loads(one_line) == json.loads(action)


def test_an_id_that_extends_another_does_not_show_it() -> None:
    """Before, naming CI-10 also showed CI-1 whole (a substring match)."""
    lookup = '{{"name": "lookup_record", "arguments": {{"record_id": "{}"}}}}'
    records = {line.split(":")[0] for line in _floor_view("E3/v0", lookup.format("CI-10"))[0][
        "content"].splitlines() if line.startswith("CI-")}
    assert records == {"CI-10"}
    records = {line.split(":")[0] for line in _floor_view("E3/v0", lookup.format("CI-1"))[0][
        "content"].splitlines() if line.startswith("CI-")}
    assert records == {"CI-1"}


def test_the_hf_backend_through_the_view_answers_an_escaped_lone_surrogate(
        tiny_lm_dir: Path) -> None:
    """Before, the prompt of this ASCII action could not be tokenized: TypeError."""
    from agentworld_envs.backends import ChatRequest, SamplingParams
    from agentworld_envs.backends.hf import HFBackend

    scenario = FLOOR.resolve("C3/v0")
    action = '{"name": "lookup_record", "arguments": {"record_id": "\\ud800APP-55"}}'
    chat = [{"role": "system", "content": FLOOR.system_prompt(scenario, False)},
            {"role": "user", "content": FLOOR.user_message(scenario, 1, action, "json", None,
                                                           False)}]
    backend = HFBackend(str(tiny_lm_dir), view="compact")
    reply = backend.complete_each([ChatRequest(chat, sampling=SamplingParams(max_tokens=2,
                                                                             seed=0))])[0]
    assert reply.usage.output_tokens == 2
