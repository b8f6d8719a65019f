"""YAML read with limits, for files that may be mistaken or hostile.

:func:`load_yaml` reads a UTF-8 file of at most ``MAX_BYTES`` and, in one pass over the parser's
events before any object is built, refuses nesting deeper than ``MAX_DEPTH``, a document that
aliases expand past ``MAX_NODES`` values (a few hundred bytes of "billion laughs" once ran for
minutes in whatever walked the result) and numbers longer than ``MAX_DIGITS``. Every refusal is
a :class:`YAMLLimitError` that names the file, the line and the field path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_DIGITS", "MAX_NODES", "YAMLLimitError", "line_of",
           "load_yaml"]

MAX_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_DIGITS = 300
_NUMBERS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
_RESOLVER = yaml.resolver.Resolver()
_PATH_SHOWN = 8


class YAMLLimitError(ValueError):
    """A YAML file that cannot be read within the limits, or at all; ``str()`` names where."""


@dataclass
class _Open:
    """A mapping or sequence being read: where its next value goes, and its expanded size."""

    anchor: str | None
    start: int
    mapping: bool
    key: object = None
    index: int = 0
    at_key: bool = True


class _Limits:
    """Follows the event stream: the field path, the nesting and the expanded size."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.open: list[_Open] = []
        self.sizes: dict[str, int] = {}
        self.values = 0

    def fail(self, event: yaml.Event, problem: str) -> YAMLLimitError:
        names = [str(o.key)[:40] if o.mapping else str(o.index) for o in self.open[:_PATH_SHOWN]]
        path = ".".join(names) + ("..." if len(self.open) > _PATH_SHOWN else "")
        return YAMLLimitError(f"{self.source}:{event.start_mark.line + 1}: "
                              f"{path + ': ' if path else ''}{problem}")

    def read(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.CollectionStartEvent):
            if len(self.open) >= MAX_DEPTH:
                raise self.fail(event, f"nested deeper than {MAX_DEPTH} levels")
            self.open.append(_Open(event.anchor, self.values,
                                   isinstance(event, yaml.MappingStartEvent)))
            self._count(event, 1)
        elif isinstance(event, yaml.CollectionEndEvent):
            closed = self.open.pop()
            if closed.anchor:
                self.sizes[closed.anchor] = self.values - closed.start
            self._done(None)
        elif isinstance(event, yaml.AliasEvent):
            self._count(event, self.sizes.get(event.anchor, 1))
            self._done(None)
        elif isinstance(event, yaml.ScalarEvent):
            if (event.implicit[0] and len(event.value) > MAX_DIGITS
                    and _RESOLVER.resolve(yaml.ScalarNode, event.value, (True, False)) in _NUMBERS):
                raise self.fail(event, f"a number of {len(event.value)} characters "
                                       f"(at most {MAX_DIGITS})")
            if event.anchor:
                self.sizes[event.anchor] = 1
            self._count(event, 1)
            self._done(event.value)

    def _count(self, event: yaml.Event, values: int) -> None:
        self.values += values
        if self.values > MAX_NODES:
            raise self.fail(event, f"more than {MAX_NODES} values, aliases expanded")

    def _done(self, scalar: object) -> None:
        """A whole value was read: move its parent on to the next key or index."""
        if not self.open:
            return
        parent = self.open[-1]
        if not parent.mapping:
            parent.index += 1
        elif parent.at_key:
            parent.key, parent.at_key = scalar, False
        else:
            parent.at_key = True


def load_yaml(path: str | Path) -> Any:
    """The one YAML document in ``path``, read within the module's limits.

    Raises:
        YAMLLimitError: the file is too large, not UTF-8, not valid YAML or past a limit; the
            message is ``file:line: field.path: problem`` where there is a line.
        OSError: the file cannot be opened.
    """
    source = Path(path)
    with source.open("rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YAMLLimitError(f"{source}: larger than {MAX_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise YAMLLimitError(f"{source}:{line}: not UTF-8 text (byte {exc.start})") from None
    limits = _Limits(source)
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            limits.read(event)
        return yaml.safe_load(text)
    except YAMLLimitError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark else str(source)
        raise YAMLLimitError(f"{where}: invalid YAML: {exc.problem or exc.context}") from None
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: a date such as 2026-13-45
        raise YAMLLimitError(f"{source}: invalid YAML: {' '.join(str(exc).split())}") from None


def line_of(path: str | Path, where: Sequence[str | int]) -> int:
    """The line of the value at ``where`` (keys and list positions) in the YAML file at
    ``path``, already read by :func:`load_yaml`: of the deepest part of it the file holds (a
    missing field's mapping), counted from 1."""
    node = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    line = node.start_mark.line if node is not None else 0
    for part in where:
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == str(part)), None)
            if found is None:
                break
            line, node = found[0].start_mark.line, found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) \
                and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line
        else:
            break
    return line + 1
