"""Flags from a settings dataclass: an optional field of any type also takes ``none``, an
optional bool reads ``false`` as False, a dict flag takes a JSON object only, an unreadable
value's error names the type expected, and a help text with ``%`` is shown as written."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from agentworld_envs.cli_errors import UsageError
from trainers.common.flags import parse_args


@dataclass
class Settings:
    fused: bool | None = None
    """use the fused kernel (unset: when the device has one)"""
    names: list[str] | None = None
    """who takes part"""
    mode: Literal["fast", "exact"] | None = None
    """how to run"""
    options: dict[str, Any] = field(default_factory=dict)
    """keyword arguments, as JSON"""
    threads: int | None = 2
    """CPU threads"""
    share: float = 0.3
    """30% of the items go to validation"""


@pytest.mark.parametrize(("argv", "expected"), [
    (["--fused", "false"], {"fused": False}),
    (["--names", "none"], {"names": None}),
    (["--mode", "none"], {"mode": None}),
])
def test_flags_read_their_values(argv: list[str], expected: dict[str, Any]) -> None:
    parsed = parse_args(Settings, argv)
    assert {name: getattr(parsed, name) for name in expected} == expected


@pytest.mark.parametrize(("argv", "message"), [
    (["--options", "[1, 2]"], r"argument --options: expected a JSON object, got '\[1, 2\]'"),
    (["--options", "null"], r"argument --options: expected a JSON object, got 'null'"),
    (["--options", "{bad"], r"argument --options: not JSON \(Expecting property name"),
    (["--threads", "two"], r"argument --threads: invalid int or none value: 'two'"),
    (["--fused", "maybe"], r"argument --fused: expected true or false, got 'maybe'"),
])
def test_an_unreadable_value_is_one_line_naming_the_flag_and_what_it_takes(
        argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        parse_args(Settings, argv)
    assert "\n" not in str(caught.value) and "<lambda>" not in str(caught.value)


def test_help_shows_a_percent_sign_as_written() -> None:
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), pytest.raises(SystemExit) as done:
        parse_args(Settings, ["--help"], prog="settings")
    assert done.value.code == 0
    assert "30% of the items go to validation (default: 0.3)" in " ".join(shown.getvalue().split())
