"""AgentWorldBench items: load and validate the JSONL format, write it, build the chat.

One item is one evaluated turn of one real trajectory. Its fields (as in ``Qwen/AgentWorldBench``):
``task`` (domain key), ``id``, ``prompt`` (every turn's user text), ``response`` (every turn's
ground-truth observation, ``**Environment Observation:**\\n...``), ``current_prompt`` (the
evaluated turn's user text), ``system_str`` (the world model's system prompt), ``turn_idx``
(the 1-indexed evaluated turn) and ``total_turns``. Any other top-level field is kept in
:attr:`BenchItem.meta` (this package puts a transition's origin under ``meta["source"]``).

Example:
    >>> item = item_from_dict({"task": "floor", "id": 0, "prompt": ["### Turn 1 ..."],
    ...     "response": ["**Environment Observation:**\\n{}"], "current_prompt": "### Turn 1 ...",
    ...     "system_str": "You simulate ...", "turn_idx": 1, "total_turns": 1})
    >>> [m["role"] for m in item.messages()], item.ground_truth
    (['system', 'user'], '{}')
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_envs.atomic_write import write_text_atomic
from agentworld_envs.protocol import bounded_json
from agentworld_envs.world.parsing import clean_response_marker

__all__ = ["BenchFormatError", "BenchItem", "item_from_dict", "load_items", "read_jsonl",
           "write_items"]

FIELDS = ("task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx",
          "total_turns")


class BenchFormatError(ValueError):
    """A line of a bench file is not a valid AgentWorldBench item."""


@dataclass(frozen=True)
class BenchItem:
    """One evaluated turn (see the module docstring for the fields)."""

    task: str
    id: int
    prompt: list[str]
    response: list[str]
    current_prompt: str
    system_str: str
    turn_idx: int
    total_turns: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``<task>/<id>``: unique within a bench."""
        return f"{self.task}/{self.id}"

    @property
    def domain(self) -> str:
        """The domain: ``task`` after its last ``/``, as the release reads it."""
        return self.task.rsplit("/", 1)[-1]

    @property
    def ground_truth(self) -> str:
        """The evaluated turn's real observation, without the response marker."""
        return clean_response_marker(self.response[self.turn_idx - 1]).strip("\n")

    @property
    def current(self) -> str:
        """The evaluated turn's user text: ``current_prompt``, or ``prompt[turn_idx - 1]`` when
        that is empty, as ``eval.py`` reads it for the world model and the judge."""
        return self.current_prompt or self.prompt[self.turn_idx - 1]

    @property
    def source(self) -> dict[str, Any]:
        """Where the transition came from (``meta["source"]``; empty for foreign items)."""
        return self.meta.get("source") or {}

    def history(self) -> list[tuple[str, str]]:
        """The earlier turns as ``(user text, observation text)`` pairs."""
        k = self.turn_idx - 1
        return list(zip(self.prompt[:k], self.response[:k], strict=True))

    def messages(self) -> list[dict[str, str]]:
        """The world model's chat: system (left out when empty), each earlier turn as user +
        assistant, the current user turn (AgentWorld's multi-turn layout)."""
        chat = [{"role": "system", "content": self.system_str}] if self.system_str else []
        for user, observation in self.history():
            chat += [{"role": "user", "content": user},
                     {"role": "assistant", "content": observation}]
        chat.append({"role": "user", "content": self.current})
        return chat

    def to_dict(self) -> dict[str, Any]:
        """The JSONL form (``meta`` fields back at the top level)."""
        data = {name: getattr(self, name) for name in FIELDS}
        return {**data, **self.meta}


def _expect(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise BenchFormatError(f"{where}: {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def item_from_dict(data: Any, where: str = "item") -> BenchItem:
    """Validate one decoded JSON line.

    Raises:
        BenchFormatError: naming ``where`` and the first problem found.
    """
    _expect(isinstance(data, dict), where, "an item must be a JSON object")
    missing = [name for name in FIELDS if name not in data]
    _expect(not missing, where, f"missing field(s) {missing}")
    _expect(isinstance(data["task"], str) and bool(data["task"]), where,
            "task must be a non-empty string")
    _expect(_is_int(data["id"]), where, "id must be an integer")
    for name in ("prompt", "response"):
        _expect(_is_texts(data[name]), where, f"{name} must be a list of strings")
    for name in ("current_prompt", "system_str"):
        _expect(isinstance(data[name], str), where, f"{name} must be a string")
    turn = data["turn_idx"]
    _expect(_is_int(turn) and 1 <= turn <= len(data["prompt"]), where,
            f"turn_idx must be an integer in 1..{len(data['prompt'])} (len(prompt))")
    _expect(len(data["response"]) >= turn, where,
            f"response has {len(data['response'])} observation(s); turn_idx {turn} needs its "
            "ground truth")
    _expect(_is_int(data["total_turns"]) and data["total_turns"] >= 1, where,
            "total_turns must be a positive integer")
    meta = {k: v for k, v in data.items() if k not in FIELDS}
    return BenchItem(**{name: data[name] for name in FIELDS}, meta=meta)


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(f for f in path.glob("*.jsonl") if f.is_file())
        if not found:
            raise BenchFormatError(f"{path}: no *.jsonl files in this folder")
        return found
    return [path]


def load_items(*paths: str | Path, domains: Sequence[str] | None = None) -> list[BenchItem]:
    """Read bench items from JSONL files or directories of them (e.g. ``{domain}_test.jsonl``).

    Args:
        paths: Files, or directories whose ``*.jsonl`` files are read in name order.
        domains: Keep only items of these domains (:attr:`BenchItem.domain`; all when
            None).

    Raises:
        BenchFormatError: on an invalid line or a repeated ``<task>/<id>`` key.
    """
    items: list[BenchItem] = []
    seen: set[str] = set()
    for file in (f for p in paths for f in _files(Path(p))):
        for where, data in read_jsonl(file):
            item = item_from_dict(data, where)
            _expect(item.key not in seen, where, f"duplicate item {item.key}")
            seen.add(item.key)
            if domains is None or item.domain in domains:
                items.append(item)
    return items


def read_jsonl(file: Path) -> Iterator[tuple[str, Any]]:
    """Each non-blank line's ``file:line`` and value, decoded within :mod:`bounded_json`'s
    limits.

    Raises:
        BenchFormatError: naming ``file:line`` of a line that is not UTF-8, not JSON, or holds
            a lone surrogate.
    """
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{file}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BenchFormatError(f"{where}: not UTF-8 text (byte {exc.start} of the line)"
                                       ) from None
            if not line.strip():
                continue
            try:
                value = bounded_json.loads(line)
            except bounded_json.JSONError as exc:
                raise BenchFormatError(f"{where}: invalid JSON: {exc}") from None
            try:  # an escaped lone surrogate decodes, but is no text and cannot be written
                json.dumps(value, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise BenchFormatError(f"{where}: a lone surrogate escape (such as \\ud800) is "
                                       "not text") from None
            yield where, value


def write_items(items: Iterable[BenchItem], path: str | Path) -> Path:
    """Write items as JSONL (parent folders created, the file whole or not at all); returns
    the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(item.to_dict(), ensure_ascii=False) + "\n" for item in items]
    return write_text_atomic(path, "".join(lines))
