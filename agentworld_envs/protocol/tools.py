"""Tools written once as typed Python callables.

A tool is a method decorated with :func:`tool`. Its OpenAI tool schema is generated from the
type hints and the Google-style docstring, and its arguments are validated against the same
types, so schema and implementation cannot drift apart.

Example:
    >>> class Calculator(Toolkit):
    ...     @tool
    ...     def add(self, a: int, b: int) -> int:
    ...         '''Add two integers.
    ...
    ...         Args:
    ...             a: First addend.
    ...             b: Second addend.
    ...         '''
    ...         return a + b
    >>> kit = Calculator()
    >>> Calculator.schemas()[0]["function"]["parameters"]["required"]
    ['a', 'b']
    >>> kit.call("add", {"a": 2, "b": 3})
    5
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any, Literal, get_type_hints

import pydantic

from agentworld_envs.errors import FieldedError

__all__ = ["tool", "Toolkit", "ToolArgumentError", "UnknownToolError", "function_schema"]

ToolKind = Literal["read", "write"]
_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^ {4}(\*{0,2}\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


class ToolArgumentError(ValueError):
    """The arguments of a call do not match the tool's signature."""


class UnknownToolError(FieldedError, KeyError):
    """No tool of that name exists in the toolkit."""


def tool(fn: Callable[..., Any] | None = None, *, kind: ToolKind = "read") -> Any:
    """Mark a method as a tool; ``kind`` tags it as reading or writing state."""

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        f.__tool_kind__ = kind  # type: ignore[attr-defined]
        return f

    return mark(fn) if fn is not None else mark


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its first paragraph and per-argument texts."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary = " ".join(inspect.cleandoc(doc or "").split("\n\n")[0].split())
    args: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        if _SECTION.match(line):
            in_args = line.strip().rstrip(":").lower() in ("args", "arguments")
            current = None
        elif in_args and (match := _ARG_LINE.match(line)):
            current = match.group(1).lstrip("*")
            args[current] = match.group(2).strip()
        elif in_args and current and line.startswith(" " * 8):
            args[current] = f"{args[current]} {line.strip()}"
    return summary, args


_NAMED = frozenset({"properties", "patternProperties", "$defs"})
"""Schema keywords whose keys are names (a parameter may be called ``title``)."""
_DATA = frozenset({"default", "const", "enum", "examples"})
"""Schema keywords whose values are data, not schemas."""


def _strip_titles(schema: Any, names: bool = False) -> Any:
    """``schema`` without pydantic's ``title`` keywords; ``names``: ``schema`` maps names to
    schemas, so its keys all stay."""
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: v if not names and k in _DATA else _strip_titles(v, not names and k in _NAMED)
            for k, v in schema.items() if names or k != "title"}


class _BoundTool:
    """A tool's generated argument model and schema (built once per function)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.kind: ToolKind = getattr(fn, "__tool_kind__", "read")
        description, arg_docs = _parse_docstring(fn.__doc__)
        hints = get_type_hints(fn)
        fields: dict[str, Any] = {}
        open_doc: str | None = None
        self.open_object = False
        for param in list(inspect.signature(fn).parameters.values())[1:]:
            if param.kind is param.VAR_KEYWORD:
                self.open_object, open_doc = True, arg_docs.get(param.name)
                continue
            annotation = hints.get(param.name, Any)
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (annotation, pydantic.Field(
                default, description=arg_docs.get(param.name)))
        config = pydantic.ConfigDict(extra="allow" if self.open_object else "forbid", strict=True)
        self.model = pydantic.create_model(f"{self.name}_args", __config__=config, **fields)
        parameters = _strip_titles(self.model.model_json_schema())
        parameters.setdefault("properties", {})
        parameters["additionalProperties"] = self.open_object
        if open_doc:
            parameters["description"] = open_doc
        self.schema = {"type": "function", "function": {
            "name": self.name, "description": description, "parameters": parameters}}

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            model = self.model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors(include_url=False))
            raise ToolArgumentError(f"invalid arguments for {self.name}: {problems}") from None
        return {**model.__dict__, **(model.__pydantic_extra__ or {})}


@functools.cache
def _bound(fn: Callable[..., Any]) -> _BoundTool:
    return _BoundTool(fn)


def function_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """Return the OpenAI tool schema of a tool method, generated from its signature."""
    return _bound(fn).schema


@functools.cache
def _tool_table(cls: type) -> dict[str, _BoundTool]:
    return {name: _bound(member) for name, member in inspect.getmembers(cls)
            if callable(member) and hasattr(member, "__tool_kind__")}


class Toolkit:
    """A set of tools: every method decorated with :func:`tool`."""

    @classmethod
    def tool_names(cls) -> list[str]:
        """Names of all tools, sorted."""
        return sorted(_tool_table(cls))

    @classmethod
    def schemas(cls, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI tool schemas of the named tools (all tools when ``names`` is None), in order."""
        table = _tool_table(cls)
        return [table[n].schema for n in (cls.tool_names() if names is None else names)]

    @classmethod
    def validate(cls, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """``arguments`` as the tool ``name`` takes them (validated against its signature).

        Raises:
            UnknownToolError: no tool has that name.
            ToolArgumentError: the arguments do not fit the signature.
        """
        bound = _tool_table(cls).get(name)
        if bound is None:
            raise UnknownToolError(name)
        return bound.validate(arguments)

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Validate ``arguments`` against the tool's signature and call it.

        Raises:
            UnknownToolError: no tool has that name.
            ToolArgumentError: the arguments do not fit the signature.
        """
        arguments = self.validate(name, arguments)
        return _tool_table(type(self))[name].fn(self, **arguments)
