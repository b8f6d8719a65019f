"""Parse time per input byte, 1 KB to 10 MB, on hostile shapes (pytest-benchmark; never asserted).

Each parser of agent or model text gets inputs of one shape at four sizes: actions through the
tool-call parser and through the built-in scenarios' action checks (their regular expressions),
world-model outputs, judge outputs and final answers through the verifier.
Linear time means a flat time per byte:
``benchmark.extra_info["per_byte_vs_smallest"]`` is the time per byte at that size divided by the
time per byte at 1 KB, measured earlier in the same run. Run with::

    python -m pytest tests/bench/test_bench_parsing.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" --benchmark-json=parsing.json
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from agentworld_envs.bench.judge import JudgeParseError, parse_judge_output
from agentworld_envs.domains import DOMAINS, get_domain
from agentworld_envs.protocol import parse_action
from agentworld_envs.world.parsing import parse_world_model_output
from floor_tasks.verifier import asserted_labels, field_matches
from tests.helpers.per_byte import PerByte

pytestmark = pytest.mark.benchmark

SIZES = {"1KB": 1 << 10, "100KB": 100 << 10, "1MB": 1 << 20, "10MB": 10 << 20}
ROUNDS = {"1KB": 200, "100KB": 20, "1MB": 5, "10MB": 1}


def _labels(text: str) -> Any:
    return asserted_labels(text, ["bug", "feature_request", "billing", "access_issue"],
                           ["label", "category"])


def _certified(text: str) -> Any:
    return field_matches(text, "certified", True)


def _judge(text: str) -> Any:
    try:
        return parse_judge_output(text)
    except JudgeParseError:
        return None


def _checks(scenario_id: str) -> Callable[[str], Any]:
    """Every action pattern of a built-in scenario, searched as its reward check searches."""
    scenario = next(scenarios[scenario_id] for key in DOMAINS
                    if scenario_id in (scenarios := get_domain(key).builtin))
    patterns = [re.compile(pattern, re.IGNORECASE) for c in scenario.reward.checks
                if c.check.endswith("action_matches") for pattern in (c.value, c.after) if pattern]
    return lambda text: [pattern.search(text) for pattern in patterns]


SHAPES: dict[str, tuple[Callable[[str], Any], str, str]] = {
    # name: (parser, head, unit repeated up to the size)
    "action_fence_spaces": (parse_action, "```", " "),
    "action_fenced_calls": (parse_action, "", '```json\n{"name": "t", "arguments": {}}\n```\n'),
    "action_bad_tags": (parse_action, "", "<tool_call>x</tool_call>"),
    "action_braces": (parse_action, '{"name": "t", "arguments": "', "x{"),
    "world_model_think": (parse_world_model_output, "", "<think>"),
    "world_model_fake_tags": (parse_world_model_output, "", "<think>a<predicted_observation>b"),
    "judge_braces": (_judge, "", "x{"),
    "judge_objects": (_judge, "", '{"scores": {"format": 9}} '),
    "judge_fence_spaces": (_judge, "```json", " "),
    "answer_hedged_labels": (_labels, "", "category: unclear, or maybe not a bug; "),
    "answer_boolean_questions": (_certified, "", "certified? certified = false, "),
    # each once a quadratic: 7 s (grep), 4.7 s (kill), 54 s (rm -rrr...) at 32 KB
    "check_grep": (_checks("terminal-count-log-errors"), "", "grep "),
    "check_kill": (_checks("terminal-stop-port-8080"), "", "kill "),
    "check_tar": (_checks("terminal-extract-archive"), "", "tar "),
    "check_rm_flags": (_checks("terminal-clean-tmp-safely"), "rm -", "r"),
    "check_rm": (_checks("terminal-clean-tmp-safely"), "", "rm "),
    "check_mkdir": (_checks("os-make-project-folder"), "", "mkdir "),
    "check_command": (_checks("swe-install-in-venv"), "", '"command": '),
    # the checks that must follow a change scan each command from its start: ``"``, ``;``, ...
    "check_port": (_checks("terminal-stop-port-8080"), '"', "ss -"),
    "check_listing": (_checks("terminal-extract-archive"), '"', "ls "),
    "check_run": (_checks("terminal-script-permission"), "", "; a/"),
    "check_import": (_checks("swe-install-in-venv"), '"command": ', "; python "),
    # the cron entry written again: one scan from the action's start
    "check_cron": (_checks("terminal-cron-backup"), "", "30 2 * * * crontab -l "),
}
PER_BYTE = PerByte()


def _text(head: str, unit: str, size: int) -> str:
    return head + unit * ((size - len(head)) // len(unit))


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_parse_time_per_byte(benchmark: Any, shape: str, size: str) -> None:
    parser, head, unit = SHAPES[shape]
    text = _text(head, unit, SIZES[size])
    benchmark.pedantic(parser, args=(text,), rounds=ROUNDS[size], iterations=1, warmup_rounds=0)
    PER_BYTE.record(benchmark, shape, len(text))
