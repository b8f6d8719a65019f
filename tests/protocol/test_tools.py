"""Tool schemas: pydantic's ``title`` keywords go, a parameter named ``title`` stays."""

from __future__ import annotations

from typing import Any

import pydantic

from agentworld_envs.protocol.tools import Toolkit, tool


class _Meta(pydantic.BaseModel):
    title: str
    default: int = 0


class _Pages(Toolkit):
    @tool(kind="write")
    def create_page(self, title: str, meta: _Meta | None = None,
                    layout: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create a page.

        Args:
            title: The page's title.
            meta: Its metadata.
            layout: How it is laid out.
        """
        return {"title": title}


def test_a_parameter_named_title_is_in_the_schema() -> None:
    parameters = _Pages.schemas()[0]["function"]["parameters"]
    assert parameters["properties"]["title"] == {"description": "The page's title.",
                                                 "type": "string"}
    assert set(parameters["required"]) <= set(parameters["properties"])
    assert list(parameters["$defs"]["_Meta"]["properties"]) == ["title", "default"]
    assert "title" not in parameters and "title" not in parameters["$defs"]["_Meta"]
    assert "title" not in parameters["properties"]["meta"]
    assert _Pages().call("create_page", {"title": "Home"}) == {"title": "Home"}

