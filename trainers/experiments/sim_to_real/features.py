"""What the linear policy reads of text: its words, the values a tool result holds, record ids."""

from __future__ import annotations

import re
from typing import Any

from agentworld_envs.protocol.bounded_json import find_objects

_WORD = re.compile(r"[a-z0-9_\-]+")


def words(text: str) -> list[str]:
    """Lower-cased words (record ids such as ``cmp-31`` stay whole)."""
    return _WORD.findall(text.lower())


def result_values(observation: str) -> list[str]:
    """The string leaves of the results in a tool observation (what the tools returned)."""
    leaves: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            leaves.append(value)

    for envelope in find_objects(observation):
        walk(envelope.get("result"))
    return leaves


def is_id(word: str) -> bool:
    """Whether a word is a record id (a digit and a hyphen, such as ``cmp-31``)."""
    return any(ch.isdigit() for ch in word) and "-" in word
