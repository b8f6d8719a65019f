"""Bad AgentFloor env settings say what is allowed."""

from __future__ import annotations

import pytest

from floor_tasks.env import FloorEnv


@pytest.mark.parametrize("render_mode", ["human", "rgb_array", 3])
def test_an_unsupported_render_mode_says_which_are_supported(render_mode: object) -> None:
    with pytest.raises(ValueError, match="^unsupported render_mode .*; use 'ansi' or None$"):
        FloorEnv("A1", render_mode=render_mode)
