"""Command-line flags from a settings dataclass: the one parser of every training command.

Each field becomes ``--field-name`` (a field without a default is a required flag); its help is
the docstring under the field (CleanRL's style) or, failing that, its entry in the class
docstring's ``Attributes:`` section, with the default. Booleans become ``--flag/--no-flag``,
``Literal`` fields take their choices, ``dict`` fields JSON, ``list`` fields comma-separated
items, and an optional field also ``none``.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Args:
    ...     steps: int = 3
    ...     '''updates to make'''
    ...     names: list[str] | None = None
    ...     '''who takes part'''
    >>> parse_args(Args, ["--steps", "5", "--names", "a,b"])
    Args(steps=5, names=['a', 'b'])
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import re
import textwrap
import typing
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

__all__ = ["add_dataclass_args", "dataclass_from_args", "field_docs", "parse_args"]

T = TypeVar("T")


def field_docs(cls: type) -> dict[str, str]:
    """The help of each field of dataclass ``cls`` (and its bases): the docstring under the
    field, else the field's entry in the class docstring's ``Attributes:`` section."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if dataclasses.is_dataclass(klass):
            docs.update(_attribute_docs(klass))
            docs.update(_field_docstrings(klass))
    return docs


def _field_docstrings(klass: type) -> dict[str, str]:
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
    except (OSError, TypeError):  # defined where its source cannot be read
        return {}
    return {statement.target.id: " ".join(following.value.value.split())
            for statement, following in zip(body, body[1:], strict=False)
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)}


def _attribute_docs(klass: type) -> dict[str, str]:
    """The ``name: text`` entries (with indented continuation lines) of ``Attributes:``."""
    doc = inspect.cleandoc(klass.__doc__ or "")
    section = doc.split("Attributes:", 1)[1] if "Attributes:" in doc else ""
    found: dict[str, str] = {}
    name = ""
    for line in section.splitlines():
        entry = re.match(r"^ {4}(\w+): ?(.*)$", line)
        if entry:
            name = entry.group(1)
            found[name] = entry.group(2).strip()
        elif name and line.startswith(" " * 8):
            found[name] += " " + line.strip()
        elif line.strip():
            name = ""
    return found


def _converter(hint: Any) -> tuple[Any, dict[str, Any]]:
    """An argparse ``type`` for a field, and extra ``add_argument`` keywords."""
    options = [h for h in typing.get_args(hint) if h is not type(None)]
    optional = type(None) in typing.get_args(hint)
    base = options[0] if optional and len(options) == 1 else hint
    if typing.get_origin(base) is Literal:
        return type(typing.get_args(base)[0]), {"choices": typing.get_args(base)}
    if typing.get_origin(base) is dict:
        return json.loads, {}
    if typing.get_origin(base) is list:
        item = typing.get_args(base)[0]
        return (lambda text: [item(part) for part in text.split(",")]), {}
    if optional:
        return (lambda text: None if text.lower() == "none" else base(text)), {}
    return base, {}


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one flag per field of dataclass ``cls`` to ``parser``."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    for item in dataclasses.fields(cls):
        flag = "--" + item.name.replace("_", "-")
        required = (item.default is dataclasses.MISSING
                    and item.default_factory is dataclasses.MISSING)
        default = None if required else (item.default if item.default is not dataclasses.MISSING
                                         else item.default_factory())
        text = docs.get(item.name, "") + ("" if required else f" (default: {default})")
        if hints[item.name] is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                                required=required, help=text)
            continue
        convert, extra = _converter(hints[item.name])
        parser.add_argument(flag, type=convert, default=default, required=required, help=text,
                            metavar=item.name.upper(), **extra)


def dataclass_from_args(cls: type[T], namespace: argparse.Namespace) -> T:
    """Build ``cls`` from flags parsed by a parser :func:`add_dataclass_args` filled."""
    return cls(**{item.name: getattr(namespace, item.name) for item in dataclasses.fields(cls)})


def parse_args(cls: type[T], argv: Sequence[str] | None = None, prog: str | None = None) -> T:
    """Build ``cls`` from command-line flags named after its fields (``--total-episodes``)."""
    parser = argparse.ArgumentParser(prog=prog, description=inspect.getdoc(cls))
    add_dataclass_args(parser, cls)
    return dataclass_from_args(cls, parser.parse_args(argv))
