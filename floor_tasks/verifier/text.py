"""Text matching helpers: the values, choices and labels an answer states."""

from __future__ import annotations

import itertools
import re
from typing import Any

from agentworld_envs.protocol.bounded_json import find_objects

_NUMBER = re.compile(r"(?<![\w.-])-?\d[\d,]*(?:\.\d+)?")
"""A number not inside an ID ("P104", "SUP-12", "v2.4"); a unit may follow it ("12x", "47min"),
as in the reference's extractor."""
_NEGATION = re.compile(r"\b(not|no|isn't|is not|never|un|non)\b[\s-]*$", re.IGNORECASE)
_BOOL_AFTER = re.compile(
    r"[\s\"'*]*(?:(?:[:=]|is\b|was\b)[\s\"'*]*)?(?P<question>\?\s*)?"
    r"(?:(?P<value>true|yes|false|no|not)\b)?")
"""What follows a boolean's key: its written value ("certified: false", "certified = yes",
"certified? No"), or a question mark alone."""


_NEGATED_VALUE = re.compile(
    r"(?:\b(?:not|never|no longer|rather than|instead of|other than)|n't)"
    r"(?:\s+(?:currently|presently|yet|really|actually))?[\s\"'*]*$", re.IGNORECASE)
"""What, just before a value, denies it: "not active", "isn't 96", "rather than 52"."""


def _negated(text: str, start: int) -> bool:
    """Whether the value written at ``text[start:]`` is denied ("not 96")."""
    return bool(_NEGATED_VALUE.search(text, max(0, start - 30), start))


def _numbers(text: str, start: int = 0, end: int | None = None, *,
             stated: bool = False) -> list[float]:
    """The numbers written in ``text[start:end]``; with ``stated``, only those not denied
    ("It is 20, not 96" states 20)."""
    found = []
    for match in _NUMBER.finditer(text, start, len(text) if end is None else end):
        if stated and _negated(text, match.start()):
            continue
        try:
            found.append(float(match.group(0).replace(",", "")))
        except ValueError:
            continue
    return found


def _states(text: str, pattern: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``text[start:end]`` holds a match of ``pattern`` that is not denied."""
    return any(not _negated(text, m.start()) for m in re.compile(pattern).finditer(
        text, start, len(text) if end is None else end))


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text`` (thousands separators allowed)."""
    return _numbers(text)


def _json_fields(text: str) -> dict[str, Any]:
    """Flattened key/values of the first JSON object in ``text`` (empty if none)."""
    for data in find_objects(text):
        flat: dict[str, Any] = {}
        stack = [data]
        while stack:
            for k, v in stack.pop().items():
                (stack.append(v) if isinstance(v, dict) else flat.setdefault(k.lower(), v))
        return flat
    return {}


def _value_pattern(value: Any) -> str:
    return r"(?<![\w-])" + re.escape(str(value)) + r"(?![\w-])"


def _same_value(got: Any, expected: Any) -> bool:
    if isinstance(expected, bool):
        return str(got).lower() in (("true", "yes") if expected else ("false", "no"))
    if isinstance(expected, int | float):  # the value's first number, as after a key in text
        return any(abs(n - expected) < 1e-6 for n in numbers_in(str(got))[:1])
    if isinstance(expected, list):
        return set(map(str.lower, map(str, got if isinstance(got, list) else [got]))) == set(
            map(str.lower, map(str, expected)))
    return str(got).strip().lower() == str(expected).strip().lower()


def field_matches(text: str, key: str, expected: Any) -> str | None:
    """How ``expected`` for ``key`` appears in an answer: "strict", "weak" or None.

    Strict: a JSON field, or the value within 60 characters after the key. Weak: the value
    anywhere, word-bounded. Numbers are compared numerically; a percentage also matches its
    fraction. A boolean is the value written after its key's word ("certified: false",
    "certified? No": true/yes or false/no/not); else the word without a negation before it states
    true ("is certified", "not certified"), and a bare question ("is it certified?") nothing.
    """
    fields = _json_fields(text)
    if key.lower() in fields:
        return "strict" if _same_value(fields[key.lower()], expected) else None
    lowered = text.lower()
    key_words = r"[\s_-]*".join(map(re.escape, key.lower().split("_")))
    if isinstance(expected, bool):
        word = key.lower().split("_")[0]
        for match in re.finditer(r"\b" + re.escape(word), lowered):
            after = _BOOL_AFTER.match(lowered, match.end(), match.end() + 40)
            if after["value"]:
                stated = after["value"] in ("true", "yes")
            elif after["question"]:
                continue  # "Is it certified?" asks; it states nothing
            else:
                stated = not _NEGATION.search(lowered[max(0, match.start() - 12):match.start()])
            if stated == expected:
                return "strict"
        return None
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        targets = {float(expected)} | ({expected / 100, expected * 100} if "%" in text else set())
        near_key = [_numbers(lowered, m.end(), m.end() + 60, stated=True)[:1]
                    for m in re.finditer(key_words, lowered)]
        if any(abs(n - t) < 1e-6 for found in near_key for n in found for t in targets):
            return "strict"
        if any(near_key):
            return None  # the key is stated with another value
        return "weak" if any(abs(n - t) < 1e-6 for n in _numbers(lowered, stated=True)
                             for t in targets) else None
    if isinstance(expected, list):
        found = all(_states(lowered, _value_pattern(v).lower()) for v in expected)
        return "weak" if found else None
    pattern = _value_pattern(str(expected).lower())
    for match in re.finditer(key_words, lowered):
        if _states(lowered, pattern, match.end(), match.end() + 60):
            return "strict"
    return "weak" if _states(lowered, pattern) else None


_CLAUSE_BREAK = re.compile(
    r"[.;!?](?=\s|$)|\n|\b(?:but|however|whereas|although|though|while|because|since|"
    r"given|which|unlike)\b", re.IGNORECASE)
_CUE = re.compile(
    r"(?P<choice>\bselect\w*|\bchoos\w*|\bchose\w*|\bpick\w*|\brecommend\w*|"
    r"\bgo(?:ing)? with|\bopt(?:ed|ing)? for|\banswer\b|\bdecision\b|\bfinal\b|\bwinner\b|"
    r"\b(?:best|top)\b(?: \w+){0,2} (?:is|are)\b|\b(?:best|top)\b(?: \w+){0,2}:)"
    r"|(?P<reject>\bnot\b|n't\b|\bnever\b|\bno\b|\bnor\b|\brather than\b|\binstead of\b|"
    r"\bover\b|\bexcept\b|\breject\w*|\brul\w* out\b|\bexclud\w*|\beliminat\w*|"
    r"\bdiscard\w*|\bdisqualif\w*|\bavoid\w*|\bskip\w*)", re.IGNORECASE)
_NEGATED_CUE = re.compile(r"(?:\b(?:not|never|no)\b|n't|\bcannot\b)\s+(?:\w+\s+){0,2}$",
                          re.IGNORECASE)
_REJECTED_AFTER = re.compile(
    r"^\s*(?:\([^)]{0,60}\)\s*)?,?\s*(?:(?:is|was|would be|has been|gets)\s+(?:not\b|"
    r"rejected|ruled out|excluded|eliminated|disqualified|out\b)|isn't|wasn't|fails|failed|"
    r"violates|violated|is out\b)", re.IGNORECASE)
_CHOSEN_AFTER = re.compile(
    r"^\s*(?:\([^)]{0,60}\)\s*)?,?\s*(?:is|was|has been|gets|would be)\s+(?:my |our |the )?"
    r"(?:selected|chosen|picked|recommended|choice|pick|winner|recommendation|answer|"
    r"best (?:choice|option|pick))\b", re.IGNORECASE)
_CLAUSE_WINDOW = 120


def _chosen_here(text: str, start: int, end: int) -> bool:
    """Whether the mention at ``text[start:end]`` is stated as the choice.

    The mention's clause is read around it: the last cue before the mention must be a choice
    word without a negation before it ("I would not select X" is a rejection), and nothing
    after it may reject it ("X is ruled out"); "X is the selected one" also chooses X. A
    mention inside an open parenthesis is an aside, not the object of the cue before it.
    """
    window = text[max(0, start - _CLAUSE_WINDOW):start]
    breaks = list(_CLAUSE_BREAK.finditer(window))
    prefix = window[breaks[-1].end():] if breaks else window
    prefix = prefix[prefix.rfind("(") + 1:] if prefix.rfind("(") > prefix.rfind(")") else prefix
    after = text[end:end + _CLAUSE_WINDOW]
    if _REJECTED_AFTER.match(after):
        return False
    cues = list(_CUE.finditer(prefix))
    if cues and cues[-1].group("choice"):
        return not _NEGATED_CUE.search(prefix[:cues[-1].start()])
    if cues and cues[-1].group("reject"):
        return False
    return bool(_CHOSEN_AFTER.match(after))


def selected(text: str, record_id: str) -> bool:
    """True when an answer names ``record_id`` as its choice (not merely as a rejected option).

    Example:
        >>> selected("I would not select SUP-11; the selected supplier is SUP-12.", "SUP-11")
        False
        >>> selected("Selected: SUP-11 and SUP-12.", "SUP-11")
        True
    """
    return any(_chosen_here(text, m.start(), m.end())
               for m in re.finditer(_value_pattern(record_id), text, re.IGNORECASE))


_LABEL_NEGATION = re.compile(
    r"(?:\b(?:not|never|no|nor|neither|rather than|instead of|other than|except)\b|n't)"
    r"\s+(?:\w+\s+){0,2}$", re.IGNORECASE)
_SPAN_END = re.compile(r"[.;:!?\n]|\s[-\u2013\u2014]\s")
"""Where a keyed or headline statement ends; commas and parentheses split it into parts."""
_PART = re.compile(r"[,(]")
_LIST_WORDS = frozenset("or either possibly maybe perhaps probably likely also even a an".split())
_MARK = "\0"  # stands for a label in _continues_list


def _normal(label: str) -> str:
    return label.lower().replace("_", " ").strip()


def _labels_in(span: str, valid_set: list[str]) -> list[str]:
    """Labels of ``valid_set`` that ``span`` asserts: mentioned and not negated, in order."""
    found: list[tuple[int, str]] = []
    lowered = span.lower().replace("_", " ")
    for label in valid_set:
        for m in re.finditer(_value_pattern(_normal(label)), lowered):
            clause = re.split(r"[.;!?\n]", lowered[max(0, m.start() - 40):m.start()])[-1]
            if not _LABEL_NEGATION.search(clause):
                found.append((m.start(), label))
                break
    return [label for _, label in sorted(found)]


def _continues_list(part: str, valid_set: list[str]) -> bool:
    """Whether a part after a comma or parenthesis goes on listing labels: it starts with a label
    (after "or", "possibly" and the like) and is an alternative ("or billing") or holds nothing
    but labels ("feature_request", "billing or access_issue")."""
    text = part.lower().replace("_", " ")
    for label in valid_set:
        text = re.sub(_value_pattern(_normal(label)), f" {_MARK} ", text)
    words = re.sub(r"[^\w\0]+", " ", text).split()
    lead = list(itertools.takewhile(_LIST_WORDS.__contains__, words))
    rest = words[len(lead):]
    return bool(rest) and rest[0] == _MARK and (
        "or" in lead or all(w == _MARK or w in _LIST_WORDS for w in rest))


def _stated_labels(span: str, valid_set: list[str]) -> list[str]:
    """The labels of a keyed or headline statement: those of its first part, then those of each
    following part that continues a list ("bug, feature_request or billing", "bug (or maybe
    billing)"). A part that says more ("mixed, positive about the hardware") ends the list."""
    first, *parts = _PART.split(span)
    labels = _labels_in(first, valid_set)
    for part in itertools.takewhile(lambda p: _continues_list(p, valid_set), parts):
        labels += [label for label in _labels_in(part, valid_set) if label not in labels]
    return labels


def asserted_labels(text: str, valid_set: list[str], keys: list[str]) -> list[str]:
    """The labels an answer asserts, in the order it states them.

    A JSON field or a keyed statement ("category: bug", "sentiment is mixed") decides, and so
    does a headline label ("Mixed: ..."); a statement that lists labels or offers another after
    "or" ("category: bug, feature_request or billing", "bug, or possibly billing") names them
    all. Otherwise every mentioned label counts except the negated ones ("a bug, not a
    feature_request"), so hedging between two labels names two.
    """
    fields = _json_fields(text)
    for key in keys:
        if key.lower() in fields:
            value = _normal(str(fields[key.lower()]))
            return [v for v in valid_set if _normal(v) == value]
    heads = [m.end() for key in keys for m in re.finditer(
        r"\b" + r"[\s_]+".join(map(re.escape, key.split("_"))) + r"\b\s*(?:is|:|=)\s*", text,
        re.IGNORECASE)]
    for head in sorted(heads) + [0]:
        span = text[head:head + _CLAUSE_WINDOW]
        cut = _SPAN_END.search(span)
        span = span[:cut.start()] if cut else span
        if head == 0 and len(_PART.split(span, maxsplit=1)[0].split()) > 3:
            continue  # no headline: the text opens with a sentence
        labels = _stated_labels(span, valid_set)
        if labels:
            return labels
    return _labels_in(text, valid_set)
