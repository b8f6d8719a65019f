"""Rule diagnostics of a world model's raw output, and the rules that cap judge scores.

The names follow the "World Model Output Diagnostics" that AgentWorld's GUI judge prompts
consume. "Raw" text is the output with its reasoning removed but before the observation is
extracted, so hedging inside ``<think>`` is not counted; the observation is what
:func:`~agentworld_envs.world.parsing.parse_world_model_output` extracts.

Example:
    >>> d = diagnose("<think>hmm</think><predicted_observation>It would probably fail")
    >>> d.response_end_tag_count, d.raw_would_word_count, d.raw_speculative_word_count
    (0, 1, 2)
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from agentworld_envs.protocol.thinking import strip_thinking
from agentworld_envs.world.parsing import OBSERVATION_TAG, parse_world_model_output

__all__ = ["Diagnostics", "RULE_CAPS", "apply_rules", "diagnose"]

_SPECULATIVE = re.compile(
    r"\b(might|may|maybe|perhaps|possibly|probably|presumably|could|would|likely|seems?|"
    r"appears? to|assuming|hypothetically|either)\b", re.IGNORECASE)
_WOULD = re.compile(r"\bwould\b", re.IGNORECASE)
_LIKELY = re.compile(r"\b(likely|probably)\b", re.IGNORECASE)

RULE_CAPS = {"no_output_max": 1.0, "unclosed_total_max": 2.0, "hedging_realism_max": 3.0,
             "hedging_words": 2}
"""The rule constants: scores forced down when output is missing, unclosed or hedged."""


@dataclass(frozen=True)
class Diagnostics:
    """Rule-computed facts about one output (see the module docstring)."""

    raw_speculative_word_count: int
    raw_would_word_count: int
    raw_likely_word_count: int
    raw_nonfinal_chars: int
    """Characters outside the extracted observation (reasoning, chatter, tags)."""
    response_start_tag_count: int
    response_end_tag_count: int
    extracted_no_output: bool
    extracted_output_chars: int
    observation_speculative_word_count: int

    def to_dict(self) -> dict[str, Any]:
        """Plain data for records and judge prompts."""
        return asdict(self)

    @property
    def tags_closed(self) -> bool:
        """At least one observation tag, and every opened tag closed."""
        return 0 < self.response_start_tag_count <= self.response_end_tag_count


def diagnose(text: str) -> Diagnostics:
    """Count tags, hedging words and missing output in one raw world-model output; the
    observation is read whole (never cut, as the env cuts what it shows)."""
    parsed = parse_world_model_output(text, max_chars=len(text))
    raw = strip_thinking(text, OBSERVATION_TAG)
    no_output = "no_output" in parsed.flags
    observation_chars = 0 if no_output else len(parsed.observation)
    return Diagnostics(
        raw_speculative_word_count=len(_SPECULATIVE.findall(raw)),
        raw_would_word_count=len(_WOULD.findall(raw)),
        raw_likely_word_count=len(_LIKELY.findall(raw)),
        raw_nonfinal_chars=max(0, len(text) - observation_chars),
        response_start_tag_count=parsed.diagnostics["start_tags"],
        response_end_tag_count=parsed.diagnostics["end_tags"],
        extracted_no_output=no_output,
        extracted_output_chars=observation_chars,
        observation_speculative_word_count=(
            0 if no_output else len(_SPECULATIVE.findall(parsed.observation))),
    )


def apply_rules(scores: dict[str, float], diagnostics: Diagnostics,
                require_tags: bool = True) -> tuple[dict[str, float], float | None, list[str]]:
    """Apply the rule caps to a judge's 1-5 dimension scores.

    * no extracted output: factuality, consistency and quality drop to the minimum;
    * no closing observation tag (when ``require_tags``): the sample total is capped at 2.0;
    * hedging (``hedging_words`` or more speculative words in the observation): realism is
      capped at 3.

    Returns:
        The capped scores, the cap on the sample total (None when uncapped), and the names of
        the rules that fired.
    """
    capped, fired, total_cap = dict(scores), [], None
    if diagnostics.extracted_no_output:
        for name in ("factuality", "consistency", "quality"):
            if name in capped:
                capped[name] = min(capped[name], RULE_CAPS["no_output_max"])
        fired.append("no_output")
    if require_tags and diagnostics.response_end_tag_count == 0:
        total_cap = RULE_CAPS["unclosed_total_max"]
        fired.append("no_end_tag")
    if diagnostics.observation_speculative_word_count >= RULE_CAPS["hedging_words"]:
        if "realism" in capped:
            capped["realism"] = min(capped["realism"], RULE_CAPS["hedging_realism_max"])
        fired.append("hedging")
    return capped, total_cap, fired
