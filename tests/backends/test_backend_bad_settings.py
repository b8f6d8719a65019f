"""Bad backend configs: one line naming the key and what it takes, checked before anything is
built (a truthy string was read as on, a rule's error was pydantic's multi-line report)."""

from __future__ import annotations

from typing import Any

import pytest

from agentworld_envs.backends import make_backend
from agentworld_envs.backends.registry import BackendConfigError, check_backend_config

OPENAI = {"name": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}


@pytest.mark.parametrize(("config", "message"), [
    ({**OPENAI, "native_tools": "no"}, "native_tools must be true or false, not 'no'"),
    ({**OPENAI, "model": 3}, r"model must be a model name \(a string\), not 3"),
    ({**OPENAI, "api_key_env": 3}, "api_key_env must be the name of an environment variable"),
    ({"name": "scripted", "rules": "abc"}, "rules must be a list of rules, got 'abc'"),
    ({"name": "scripted", "rules": [{"reply": "x"}]}, r"rules\[0\]: match: field required"),
    ({"name": "scripted", "rules": [{"match": "(", "reply": "x"}]},
     r"rules\[0\]: match is no regular expression: missing \)"),
    ({"name": "scripted", "rules": [{"match": "a", "reply": "b", "error": "c"}]},
     r"rules\[0\]: a scripted rule needs exactly one of reply or error"),
    ({"name": "replay", "path": 3}, "path must name a file of recorded completions, got 3"),
])
def test_a_bad_backend_value_is_refused_in_one_line_naming_its_key(
        config: dict[str, Any], message: str) -> None:
    name = config["name"]
    with pytest.raises(BackendConfigError, match=f"^backend '{name}': {message}") as refused:
        check_backend_config(config)
    assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match=message):
        make_backend(config)


def test_a_config_without_a_name_says_it_needs_one() -> None:
    """It was "unknown backend None"."""
    with pytest.raises(BackendConfigError, match='^a backend config needs a "name": one of '):
        make_backend({"model": "m"})
