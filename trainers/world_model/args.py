"""Dataclass arguments as argparse flags: one documented dataclass per trainer, no twins.

Each field becomes ``--field-name``; its help is the field's entry in the class docstring's
``Attributes:`` section. Booleans become
``--flag/--no-flag``.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import typing
from typing import Any, TypeVar

__all__ = ["add_dataclass_args", "dataclass_from_args"]

T = TypeVar("T")


def _field_help(cls: type) -> dict[str, str]:
    """Parse the ``name: text`` entries (with indented continuation lines) of the class
    docstring's ``Attributes:`` section."""
    doc = inspect.cleandoc(cls.__doc__ or "")
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


def _base_type(annotation: Any) -> Any:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Literal:
        return str
    return _base_type(args[0]) if args else annotation


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one flag per field of dataclass ``cls`` (fields without defaults are required)."""
    helps = _field_help(cls)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        default = None if required else (
            f.default if f.default is not dataclasses.MISSING else f.default_factory())
        help_text = helps.get(f.name, "")
        kind = _base_type(hints[f.name])
        choices = typing.get_args(hints[f.name]) if typing.get_origin(
            hints[f.name]) is typing.Literal else None
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                                help=help_text)
        else:
            parser.add_argument(flag, type=kind, default=default, required=required,
                                choices=choices, help=f"{help_text} (default: {default})")


def dataclass_from_args(cls: type[T], args: argparse.Namespace) -> T:
    """Build ``cls`` from the parsed flags added by :func:`add_dataclass_args`."""
    return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)})
