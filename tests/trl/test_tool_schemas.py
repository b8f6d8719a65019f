"""Tool schemas as TRL renders them (``transformers.utils.get_json_schema`` on the generated
methods): text that reads like docstring structure, a declared ``self`` argument, boolean and
nullable-enum argument schemas."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("transformers", reason="TRL renders tools with transformers")

from agentworld_envs.trl.tool_methods import tool_method  # noqa: E402


def _session_with(schema: dict[str, Any]) -> Any:
    """An instance whose one tool method records the arguments it plays."""
    played: list[tuple[str, dict[str, Any]]] = []
    method = tool_method(schema, lambda session, name, arguments: played.append(
        (name, arguments)) or "ok")
    session = type("Session", (), {schema["function"]["name"]: method, "played": played})()
    return session


def _rendered(session: Any, name: str) -> dict[str, Any]:
    from transformers.utils import get_json_schema

    return get_json_schema(getattr(session, name))["function"]  # TRL passes bound methods


def _tool(name: str, description: str, properties: dict[str, Any],
          required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object",
                                                            "properties": properties,
                                                            "required": list(required)}}}


def test_docstring_words_in_descriptions_reach_the_model_as_text() -> None:
    """Before, a description holding ``Returns:`` (as FastMCP tools' docstrings do) was cut
    there, and an argument's ``Raises:`` or closing ``(choices: ...)`` made
    ``get_json_schema`` raise (no description for the next argument; a JSONDecodeError), so
    GRPOTrainer could not render the env's tools."""
    session = _session_with(_tool(
        "get_forecast", "Fetch the forecast.\n\nArgs:\n    city: the city\n\nReturns:\n    days",
        {"city": {"type": "string", "description": "The city. Raises: if unknown."},
         "unit": {"type": "string", "description": "The unit (choices: metric or imperial)"},
         "days": {"type": "integer", "description": "How many days."}}, ("city",)))
    rendered = _rendered(session, "get_forecast")
    assert rendered["description"] == ("Fetch the forecast. Args : city: the city "
                                       "Returns : days")
    properties = rendered["parameters"]["properties"]
    assert properties == {
        "city": {"type": "string", "description": "The city. Raises : if unknown."},
        "unit": {"type": "string", "description": "The unit (choices : metric or imperial)"},
        "days": {"type": "integer", "description": "How many days."}}
    assert rendered["parameters"]["required"] == ["city"]


def test_a_declared_self_argument_is_shown_and_played() -> None:
    """Before, a tool declaring an argument ``self`` raised ``duplicate parameter name:
    'self'`` when its method was built, so ``environment_class`` refused the env."""
    session = _session_with(_tool("find", "Find a node.", {
        "self": {"type": "string", "description": "The node's own id."},
        "depth": {"type": "integer", "description": "How deep."}}, ("self",)))
    parameters = _rendered(session, "find")["parameters"]
    assert parameters["properties"]["self"] == {"type": "string",
                                                "description": "The node's own id."}
    assert parameters["required"] == ["self"]
    assert session.find(self="n1", depth=2) == "ok"
    assert session.played == [("find", {"self": "n1", "depth": 2})]


def test_boolean_schemas_and_nullable_enums_render() -> None:
    """Before, a boolean argument schema (``true``: anything) raised ``TypeError: argument of
    type 'bool' is not iterable``, and an enum holding ``null`` lost its values."""
    session = _session_with(_tool("sort", "Sort the rows.", {
        "key": True, "order": {"enum": ["asc", "desc", None], "description": "The order."}}))
    properties = _rendered(session, "sort")["parameters"]["properties"]
    assert properties["key"] == {"description": "The key argument."}
    assert properties["order"] == {"type": ["string", "null"], "enum": ["asc", "desc", None],
                                   "description": "The order."}
