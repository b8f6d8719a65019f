"""Python methods generated from OpenAI tool schemas, as TRL's ``environment_factory`` wants them.

TRL renders an environment's tools with ``transformers.utils.get_json_schema``, which reads a
method's signature, type hints and Google-style docstring. :func:`tool_method` builds a method
whose signature and docstring say what the schema says, so the schema the model sees is the
tool's own. The method accepts any keyword arguments and hands them to the env unchecked: the
env validates them, so a malformed call is labelled as in the harness. ``get_json_schema`` reads
``Args:``, ``Returns:`` and ``Raises:`` anywhere in a description as a section heading, and
``(choices: ...)`` closing an argument's description as a JSON enum, so these are written with
a space before the colon (``Returns :``).

What ``get_json_schema`` cannot say: ``additionalProperties`` (an open object such as
``submit_decision``'s fields shows as no declared arguments, its description says what to pass)
and defaults other than "optional".
"""

from __future__ import annotations

import inspect
import keyword
import re
from collections.abc import Callable
from typing import Any, Literal, Union

__all__ = ["tool_method", "act_method", "RESERVED_NAMES"]

RESERVED_NAMES = frozenset({"reset", "get_reward"})
"""Method names TRL gives a meaning of its own; no tool may take them."""

_DOCSTRING_MARKER = re.compile(r"(Args|Returns|Raises|\((?i:choices)):")
"""What ``get_json_schema``'s Google-docstring parser reads as structure, not text."""

_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool,
                               "null": type(None)}


def _annotation(schema: dict[str, Any]) -> Any:
    """The Python type hint that ``get_json_schema`` turns back into ``schema`` (or close)."""
    if not isinstance(schema, dict):  # a boolean schema: true (anything) or false (nothing)
        return Any
    if schema.get("enum") and all(isinstance(v, str | int | float | bool | None)
                                  for v in schema["enum"]):
        return Literal[tuple(schema["enum"])]
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return Union[tuple(_annotation(option) for option in options)]  # noqa: UP007
    kind = schema.get("type")
    if isinstance(kind, list):
        return Union[tuple(_annotation({**schema, "type": k}) for k in kind)]  # noqa: UP007
    if kind == "array":
        items = schema.get("items")
        return list[_annotation(items)] if isinstance(items, dict) and items else list
    if kind == "object":
        return dict
    return _JSON_TYPES.get(kind, Any)


def _one_line(text: str | None) -> str:
    """``text`` on one line, as ``get_json_schema`` reads it back (see the module docstring)."""
    return _DOCSTRING_MARKER.sub(r"\1 :", " ".join((text or "").split()))


def _docstring(description: str | None, arguments: dict[str, str]) -> str:
    lines = [_one_line(description) or "A tool of this environment."]
    if arguments:
        lines += ["", "Args:", *(f"    {name}: {text}" for name, text in arguments.items())]
    return "\n".join(lines)


def _check_name(name: str, what: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{what} {name!r} is not a Python identifier, so TRL cannot expose it")


def tool_method(schema: dict[str, Any], call: Callable[[Any, str, dict[str, Any]], str]
                ) -> Callable[..., str]:
    """A method for one OpenAI tool schema; calling it runs ``call(self, name, arguments)``.

    Args:
        schema: ``{"type": "function", "function": {"name", "description", "parameters"}}``.
        call: Plays the call in the env and returns the observation text.
    """
    function = schema.get("function", schema)
    name = function["name"]
    _check_name(name, "tool name")
    if name in RESERVED_NAMES or name.startswith("_"):
        raise ValueError(f"tool name {name!r} clashes with TRL's environment protocol")
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required") or ())
    properties = parameters.get("properties") or {}
    # get_json_schema skips a first, unannotated "self" or "cls": the one no argument takes
    receiver = "cls" if "self" in properties else "self"
    if receiver in properties:
        raise ValueError(f"tool {name!r} has arguments named both self and cls, so TRL cannot "
                         f"expose it")
    params = [inspect.Parameter(receiver, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    arg_docs: dict[str, str] = {}
    for arg, arg_schema in properties.items():
        _check_name(arg, f"argument of {name}:")
        annotations[arg] = _annotation(arg_schema)
        default = inspect.Parameter.empty if arg in required else None
        params.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=annotations[arg]))
        described = arg_schema.get("description") if isinstance(arg_schema, dict) else None
        arg_docs[arg] = _one_line(described) or f"The {arg} argument."
    description = function.get("description")
    if parameters.get("additionalProperties") is True and parameters.get("description"):
        description = (f"{_one_line(description)} Pass the fields as the call's arguments: "
                       f"{_one_line(parameters['description'])}")

    def method(self: Any, /, **arguments: Any) -> str:  # "self" is an argument name too
        return call(self, name, arguments)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = _docstring(description, arg_docs)
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = {**annotations, "return": str}
    return method


def act_method(description: str, call: Callable[[Any, str], str]) -> Callable[..., str]:
    """The single ``act(action)`` method of an env whose actions are not tool calls."""

    def act(self: Any, action: str) -> str:
        return call(self, action)

    act.__doc__ = _docstring(description, {
        "action": "One action in the format the task describes, exactly as it would be typed."})
    act.__annotations__ = {"action": str, "return": str}
    return act
