"""indented_json writes exactly what json.dumps(indent=2, ensure_ascii=False) writes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentworld_envs.world.prompting import indented_json

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_KEYS = st.text() | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    _KEYS, inner, max_size=4) | st.tuples(inner, inner), max_leaves=20)


@given(_VALUES)
def test_matches_the_standard_library(value: Any) -> None:
    assert indented_json(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_tool_call_layout() -> None:
    call = {"name": "web_search", "arguments": {"queries": ["é \"x\"\n"], "k": [], "o": {}}}
    assert indented_json(call) == (
        '{\n  "name": "web_search",\n  "arguments": {\n    "queries": [\n'
        '      "é \\"x\\"\\n"\n    ],\n    "k": [],\n    "o": {}\n  }\n}')
