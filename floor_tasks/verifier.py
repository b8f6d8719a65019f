"""Scripted verifiers: a run passes only if every check passes (no partial credit).

The verdict has four sections: the final answer, the submission, the trajectory and the
forbidden behaviours. Each check is a function registered by name; tasks name checks in their
YAML files and an unknown name fails when the task loads, never silently at scoring time.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentworld_envs.protocol.bounded_json import find_objects
from agentworld_envs.protocol.endings import FINAL_ANSWER, STEP_BUDGET_EXHAUSTED
from floor_tasks.database import FixtureDB
from floor_tasks.task import Check, SubmissionSpec, Task, Variant

__all__ = ["Trace", "verify", "judge_submission", "check_names", "ANSWER_CHECKS", "CHECKS",
           "FAILURE_CLASSES"]

FAILURE_CLASSES = {
    "F1": "hallucinated tool",
    "F2": "malformed call",
    "F3": "context amnesia",
    "F4": "step budget exhausted",
    "F5": "early resignation",
    "F6": "wrong tool use",
    "F7": "partial completion",
}


FIELD_READS = ("lookup_record", "get_attribute")
"""The calls whose results show a record's field, as the reference's constraint predicates
read them (a list_options or compare_records row does not count)."""


@dataclass
class Trace:
    """What happened in one episode, as the env recorded it."""

    variant: Variant
    db: FixtureDB
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Call log: turn, tool_name, arguments, status, result, error, hallucinated, malformed."""
    final_answer: str | None = None
    termination: str | None = None

    def log_call(self, turn: int, tool_name: str | None, arguments: dict[str, Any],
                 call_id: str | None, status: str, result: Any, error: dict[str, Any] | None,
                 *, malformed: bool = False) -> dict[str, Any]:
        """Append one call to :attr:`calls` and return it. ``hallucinated`` and ``malformed``
        follow from the error's type (``malformed`` also when the call could not be read)."""
        kind = (error or {}).get("type")
        entry = {"turn": turn, "tool_name": tool_name, "arguments": arguments,
                 "call_id": call_id, "status": status, "result": result, "error": error,
                 "hallucinated": kind == "tool_not_available",
                 "malformed": malformed or kind == "schema_validation_error"}
        self.calls.append(entry)
        return entry

    @property
    def ok_calls(self) -> list[dict[str, Any]]:
        """Calls whose envelope status is ok."""
        return [c for c in self.calls if c["status"] == "ok"]

    @property
    def submissions(self) -> list[dict[str, Any]]:
        """Every ``submit_decision`` call that was dispatched."""
        return [c for c in self.calls if c["tool_name"] == "submit_decision"
                and not c["malformed"] and not c["hallucinated"]]

    @property
    def accepted_submission(self) -> dict[str, Any] | None:
        """The last submission, if it was accepted."""
        subs = self.submissions
        return subs[-1]["arguments"] if subs and subs[-1]["status"] == "ok" else None

    def first_submission_index(self) -> int:
        """Index in the call log of the first submission (the log's length if none)."""
        return next((i for i, c in enumerate(self.calls) if c["tool_name"] == "submit_decision"),
                    len(self.calls))

    def observed(self, until: int | None = None,
                 tools: tuple[str, ...] | None = None) -> set[tuple[str, str]]:
        """(record id, field) pairs that ok results revealed, in calls before ``until``, from
        the given ``tools`` only (every tool when ``None``)."""
        seen: set[tuple[str, str]] = set()
        for call in self.calls[:until]:
            result, name = call["result"], call["tool_name"]
            if call["status"] != "ok" or not isinstance(result, dict) or (
                    tools is not None and name not in tools):
                continue
            if name == "lookup_record":
                seen.update((result["record_id"], f) for f in result["fields"])
            elif name == "get_attribute":
                seen.add((result["record_id"], result["attribute"]))
            elif name == "compare_records":
                seen.update((row["id"], result["criterion"]) for row in result["comparison"])
            elif name == "check_constraint":
                spec = self.db.constraints.get(result["constraint_name"], {})
                seen.add((result["record_id"], spec.get("field", result["constraint_name"])))
            elif name == "list_options":
                seen.update((o["id"], k) for o in result["options"] for k in o if k != "id")
        return seen

    def constraint_checked(self, record_id: str, name: str,
                           reads: tuple[str, ...] = FIELD_READS) -> bool:
        """True if ``name`` was checked on the record, or a call to one of ``reads`` showed the
        constraint's field for the record."""
        spec = self.db.constraints.get(name, {})
        checked = any(c["tool_name"] == "check_constraint" and c["status"] == "ok"
                      and c["arguments"].get("record_id") == record_id
                      and c["arguments"].get("constraint_name") == name for c in self.calls)
        return checked or (bool(reads) and (record_id, spec.get("field", name)) in self.observed(
            tools=reads))


CheckFn = Callable[..., tuple[bool, str]]
ANSWER_CHECKS: dict[str, CheckFn] = {}
CHECKS: dict[str, CheckFn] = {}
"""Trajectory and forbidden-behaviour checks; a task lists each under the section it belongs to."""


def _register(table: dict[str, CheckFn], name: str) -> Callable[[CheckFn], CheckFn]:
    def add(fn: CheckFn) -> CheckFn:
        table[name] = fn
        return fn
    return add


# ---------------------------------------------------------------- text matching helpers

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


def _exact_value(got: Any, expected: Any) -> bool:
    """Submission equality: the literal value and its JSON type (numbers compare as numbers)."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return got is expected
    if isinstance(expected, int | float):
        return isinstance(got, int | float) and got == expected
    return type(got) is type(expected) and got == expected


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


# ---------------------------------------------------------------- answer checks

@_register(ANSWER_CHECKS, "fields")
def _answer_fields(trace: Trace, expect: dict[str, Any]) -> tuple[bool, str]:
    text = trace.final_answer or ""
    weak = []
    for key, value in expect.items():
        how = field_matches(text, key, value)
        if how is None:
            return False, f"answer does not state {key} = {value!r}"
        if how == "weak":
            weak.append(key)
    expected_ids = {v for v in expect.values() if isinstance(v, str) and v in trace.db.records}
    also = sorted(i for i in trace.db.records if expected_ids and i not in expected_ids
                  and i.lower() in text.lower() and selected(text, i))
    if also:
        return False, f"answer also selects {', '.join(also)}"
    return True, "all fields stated" + (f" (weak match: {', '.join(weak)})" if weak else "")


@_register(ANSWER_CHECKS, "label")
def _answer_label(trace: Trace, expect: str, valid_set: list[str],
                  keys: list[str]) -> tuple[bool, str]:
    labels = asserted_labels(trace.final_answer or "", valid_set, keys)
    ok = labels == [expect]
    return ok, f"answer asserts {expect!r}" if ok else f"answer asserts {labels}, not [{expect!r}]"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]*[^\W\d_])")
"""A full stop, question or exclamation mark, then a word in either case: "failed. the limiter"
is two sentences ("approx. 47 minutes" and "v2.4" are one)."""


@_register(ANSWER_CHECKS, "coverage")
def _answer_coverage(trace: Trace, elements: dict[str, list[str]],
                     max_sentences: int) -> tuple[bool, str]:
    text = (trace.final_answer or "").lower()
    missing = [name for name, words in elements.items()
               if not any(w.lower() in text for w in words)]
    if missing:
        return False, f"summary misses: {', '.join(missing)}"
    sentences = [s for s in _SENTENCE_END.split(trace.final_answer.strip()) if s]
    if len(sentences) > max_sentences:
        return False, f"summary has {len(sentences)} sentences, at most {max_sentences} allowed"
    return True, "all required elements covered"


# ---------------------------------------------------------------- submission

def judge_submission(spec: SubmissionSpec, db: FixtureDB, decision: dict[str, Any]) -> bool:
    """Whether a submission meets the task's rule (the submit tool accepts or rejects it)."""
    if spec.expect is not None:
        return all(k in decision and any(_exact_value(decision[k], alt) for alt in (
            v if isinstance(v, list) else [v])) for k, v in spec.expect.items())
    if spec.rule == "bundle":
        ids = [decision.get(k) for k in ("vendor_id", "chassis_id", "gpu_id")]
        if not all(isinstance(i, str) and i in db.records for i in ids):
            return False
        vendor, chassis, gpu = (db.records[i] for i in ids)
        cost = vendor.get("base_fee", 0) + chassis.get("price", 0) + gpu.get("price", 0)
        return (vendor.get("approved") is True
                and chassis.get("form_factor") in gpu.get("form_factor_compat", [])
                and cost <= spec.params["budget"]
                and ids[0] in spec.params.get("vendors", [ids[0]]))
    if spec.rule == "consistent_deployment":
        regions = db.records[spec.params["service"]]["available_versions"]
        version, region = decision.get("component_version"), decision.get("deployment_region")
        return (isinstance(version, str)
                and version != db.records[spec.params["service"]]["current_component_version"]
                and region in regions.get(version, []))
    return False


# ---------------------------------------------------------------- trajectory checks

def _succeeded(trace: Trace, call: dict[str, Any]) -> bool:
    """An ok call, or one that met the fixture's scripted outcome (E5's designed failure)."""
    if call["malformed"] or call["hallucinated"]:
        return False
    return call["status"] == "ok" or trace.db.scripted_response(
        call["tool_name"], call["arguments"]) is not None


@_register(CHECKS, "must_call")
def _must_call(trace: Trace, tools: list[str]) -> tuple[bool, str]:
    called = {c["tool_name"] for c in trace.calls if _succeeded(trace, c)}
    missing = [t for t in tools if t not in called]
    return (not missing, f"never called: {', '.join(missing)}" if missing
            else "all required tools called")


@_register(CHECKS, "observed_before_submission")
def _observed_before(trace: Trace, record_id: str, field: str) -> tuple[bool, str]:
    ok = (record_id, field) in trace.observed(until=trace.first_submission_index())
    return ok, (f"read {record_id}.{field} before deciding" if ok
                else f"decided without reading {record_id}.{field}")


@_register(CHECKS, "called_before_submission")
def _called_before(trace: Trace, tool: str) -> tuple[bool, str]:
    before = trace.calls[:trace.first_submission_index()]
    ok = any(c["tool_name"] == tool and c["status"] == "ok" for c in before)
    return ok, f"{tool} called before submitting" if ok else f"submitted before calling {tool}"


@_register(CHECKS, "first_check_on")
def _first_check_on(trace: Trace, record_id: str) -> tuple[bool, str]:
    """The first successful check_constraint call is on the record (a failed one checks
    nothing)."""
    checks = [c for c in trace.ok_calls if c["tool_name"] == "check_constraint"]
    ok = bool(checks) and checks[0]["arguments"].get("record_id") == record_id
    return ok, (f"checked {record_id} first" if ok else f"did not check {record_id} first")


def _strings(value: Any) -> set[str]:
    """The strings of a list argument (``record_ids``). A simulated trace's ok call may carry
    arguments the real tools refuse (a string, or lists in the list), which name no record."""
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()


def _read_ids(trace: Trace) -> set[str]:
    """Records read by a successful ``lookup_record`` or ``get_attribute`` call of their own
    (a ``record_id`` that is not a string, possible in a simulated trace, reads none)."""
    return {c["arguments"].get("record_id") for c in trace.ok_calls
            if c["tool_name"] in FIELD_READS
            and isinstance(c["arguments"].get("record_id"), str)}


@_register(CHECKS, "disambiguated")
def _disambiguated(trace: Trace, ids: list[str]) -> tuple[bool, str]:
    compared = any(c["tool_name"] == "compare_records" and c["status"] == "ok"
                   and len(_strings(c["arguments"].get("record_ids")) & set(ids)) >= 2
                   for c in trace.calls)
    looked = _read_ids(trace) & set(ids)
    ok = compared or len(looked) >= 2
    return ok, "compared the candidates" if ok else "picked without comparing the candidates"


@_register(CHECKS, "all_inspected")
def _all_inspected(trace: Trace, ids: list[str]) -> tuple[bool, str]:
    """Each candidate read by its own lookup_record or get_attribute call (a comparison
    lists values but inspects no record)."""
    seen = _read_ids(trace)
    missing = [i for i in ids if i not in seen]
    return (not missing, f"never inspected: {', '.join(missing)}" if missing
            else "all candidates inspected")


@_register(CHECKS, "constraints_checked")
def _constraints_checked(trace: Trace, names: list[str], record_id: str | None = None,
                         record_from_submission: str | None = None,
                         reads: tuple[str, ...] | list[str] = FIELD_READS) -> tuple[bool, str]:
    """Constraints verified on the chosen record: a check_constraint call, or a call to one
    of ``reads`` that showed the field (``reads: []`` accepts only check_constraint)."""
    if record_from_submission is not None:
        record_id = (trace.accepted_submission or {}).get(record_from_submission)
    if record_id is None:
        return False, "no chosen record to check constraints on"
    missing = [n for n in names if not trace.constraint_checked(record_id, n, tuple(reads))]
    return (not missing, f"{record_id}: never checked {', '.join(missing)}" if missing
            else f"{record_id}: all constraints checked")


@_register(CHECKS, "stages_in_order")
def _stages_in_order(trace: Trace, tools: list[str]) -> tuple[bool, str]:
    """Each stage's tool succeeded after the previous stage's tool (a subsequence of calls)."""
    stage = 0
    for call in trace.ok_calls:
        if stage < len(tools) and call["tool_name"] == tools[stage]:
            stage += 1
    ok = stage == len(tools)
    return ok, ("pipeline stages in order" if ok
                else f"stage {tools[stage]} missing or out of order ({' -> '.join(tools)})")


@_register(CHECKS, "conflict_seen")
def _conflict_seen(trace: Trace, record_id: str, fields: list[str]) -> tuple[bool, str]:
    seen = trace.observed()
    missing = [f for f in fields if (record_id, f) not in seen]
    return (not missing, f"never read {record_id}: {', '.join(missing)}" if missing
            else "read both conflicting sources")


def _setback(call: dict[str, Any]) -> bool:
    result = call["result"]
    empty = isinstance(result, dict) and result.get("matches") == []
    return call["status"] != "ok" or empty


@_register(CHECKS, "recovered")
def _recovered(trace: Trace) -> tuple[bool, str]:
    first = next((i for i, c in enumerate(trace.calls) if _setback(c)), None)
    if first is None:
        return False, "no setback was met, so no recovery was shown"
    ok = any(not _setback(c) for c in trace.calls[first + 1:])
    return ok, "recovered after a setback" if ok else "never recovered after the setback"


@_register(CHECKS, "query_corrected")
def _query_corrected(trace: Trace, target: str) -> tuple[bool, str]:
    ok = any(c["tool_name"] == "search_records" and c["status"] == "ok" and target in [
        m["id"] for m in c["result"]["matches"]] for c in trace.calls)
    return ok, f"a corrected search found {target}" if ok else f"no search found {target}"


def _operands(arguments: dict[str, Any]) -> list[float]:
    """The numbers among a call's argument values, however nested (not the names of its
    inputs: ``{"98": 0}`` has the operand 0)."""
    found, stack = [], [arguments]
    while stack:
        value = stack.pop()
        if isinstance(value, dict | list):
            stack.extend(value.values() if isinstance(value, dict) else value)
        elif isinstance(value, float) or (isinstance(value, int) and not isinstance(
                value, bool) and value.bit_length() < 1024):  # a float can hold it
            found.append(float(value))
    return found


@_register(CHECKS, "computed_with")
def _computed_with(trace: Trace, value: float) -> tuple[bool, str]:
    ok = any(c["tool_name"] == "compute_value" and c["status"] == "ok" and any(
        abs(n - value) < 1e-6 for n in _operands(c["arguments"])) for c in trace.calls)
    return ok, (f"computation used {value}" if ok else f"no computation used the value {value}")


@_register(CHECKS, "valid_arguments")
def _valid_arguments(trace: Trace, repair_turns: int) -> tuple[bool, str]:
    bad = [i for i, c in enumerate(trace.calls) if c["malformed"]]
    if len(bad) > repair_turns:
        return False, f"{len(bad)} malformed calls, {repair_turns} repair turn(s) allowed"
    for i in bad:
        name = trace.calls[i]["tool_name"]
        later = [c for c in trace.calls[i + 1:] if c["tool_name"] == name or name is None]
        if not later or later[0]["malformed"]:
            return False, f"malformed call to {name or 'a tool'} was never repaired"
    return True, "all calls well-formed" if not bad else "malformed calls were repaired"


# ---------------------------------------------------------------- forbidden behaviours

@_register(CHECKS, "hallucinated_tool")
def _hallucinated(trace: Trace) -> tuple[bool, str]:
    names = sorted({c["tool_name"] for c in trace.calls if c["hallucinated"]})
    return (not names, f"called unavailable tools: {', '.join(names)}" if names
            else "no unavailable tool called")


@_register(CHECKS, "terminate_without_answer")
def _no_answer(trace: Trace) -> tuple[bool, str]:
    ok = bool((trace.final_answer or "").strip()) or trace.accepted_submission is not None
    return ok, "ended with an answer" if ok else "ended without an answer"


@_register(CHECKS, "label_not_in_valid_set")
def _label_set(trace: Trace, valid_set: list[str], keys: list[str]) -> tuple[bool, str]:
    named = asserted_labels(trace.final_answer or "", valid_set, keys)
    if len(named) != 1:
        return False, f"answer must assert exactly one label of {valid_set}, asserted {named}"
    return True, f"label {named[0]!r} is in the valid set"


@_register(CHECKS, "facts_not_in_passage")
def _facts_in_passage(trace: Trace) -> tuple[bool, str]:
    source = set(numbers_in(trace.variant.prompt))
    invented = [n for n in numbers_in(trace.final_answer or "") if n not in source]
    return (not invented, f"numbers not in the passage: {invented}" if invented
            else "every number comes from the passage")


@_register(CHECKS, "average_conflicting_values")
def _averaging(trace: Trace, values: list[float]) -> tuple[bool, str]:
    mean = sum(values) / len(values)
    in_answer = any(abs(n - mean) < 1e-6 for n in numbers_in(trace.final_answer or ""))
    computed = any(c["tool_name"] == "compute_value" and isinstance(c["result"], dict)
                   and c["result"].get("value") == mean for c in trace.calls)
    ok = not (in_answer or computed)
    return ok, "did not average the sources" if ok else f"averaged the sources to {mean}"


@_register(CHECKS, "repeated_identical_call")
def _repeated(trace: Trace, max_consecutive: int = 1) -> tuple[bool, str]:
    run, previous = 0, None
    for call in trace.calls:
        key = (call["tool_name"], json.dumps(call["arguments"], sort_keys=True))
        run = run + 1 if key == previous else 1
        previous = key
        if run > max_consecutive:
            return False, f"{run} identical {call['tool_name']} calls in a row"
    return True, "no repeated identical calls"


@_register(CHECKS, "terminate_after_error")
def _quit_after_error(trace: Trace) -> tuple[bool, str]:
    ok = not trace.calls or not _setback(trace.calls[-1])
    return ok, "kept going after setbacks" if ok else "gave up right after a setback"


@_register(CHECKS, "distractor_selected")
def _distractor(trace: Trace, record_id: str, label: str) -> tuple[bool, str]:
    submitted = any(record_id in map(str, s["arguments"].values()) for s in trace.submissions)
    chosen = selected(trace.final_answer or "", record_id)
    ok = not (submitted or chosen)
    return ok, f"avoided {record_id}" if ok else f"{label}: chose {record_id}"


@_register(CHECKS, "trial_and_error_submission")
def _trial_and_error(trace: Trace) -> tuple[bool, str]:
    subs = trace.submissions
    rejected = next((i for i, s in enumerate(subs) if s["status"] != "ok"), None)
    ok = rejected is None or rejected == len(subs) - 1
    return ok, ("no resubmission after a rejection" if ok
                else "resubmitted after a rejection (trial and error)")


# ---------------------------------------------------------------- the verdict

def _section(checks: list[Check], trace: Trace, variant: Variant) -> dict[str, Any]:
    subchecks: dict[str, dict[str, Any]] = {}
    for check in checks:
        passed, reason = CHECKS[check.check](trace, **variant.filled(check.params))
        name = check.check
        suffix = 2
        while name in subchecks:
            name, suffix = f"{check.check}_{suffix}", suffix + 1
        subchecks[name] = {"passed": passed, "reason": reason}
    return {"passed": all(s["passed"] for s in subchecks.values()), "subchecks": subchecks}


def check_names(task: Task) -> None:
    """Fail loudly if a task names a check that does not exist."""
    unknown = [c.check for c in task.trajectory + task.forbidden if c.check not in CHECKS]
    if task.answer is not None and task.answer.check not in ANSWER_CHECKS:
        unknown.append(task.answer.check)
    if unknown:
        raise ValueError(f"task {task.id} names unknown checks: {unknown}")


def default_checks(variant: Variant) -> tuple[list[Check], list[Check]]:
    """Checks every task has: valid arguments (tool tasks) and the always-forbidden ones."""
    task = variant.task
    trajectory = [Check(check="valid_arguments", repair_turns=task.repair_turns)] if task.tools \
        else []
    forbidden = [Check(check="hallucinated_tool")]
    if task.submission is None:
        forbidden.append(Check(check="terminate_without_answer"))
    else:
        forbidden.append(Check(check="trial_and_error_submission"))
    return trajectory, forbidden


def verify(trace: Trace) -> dict[str, Any]:
    """Score a finished episode. Returns the verdict with every check's result and labels."""
    variant, task = trace.variant, trace.variant.task
    if task.answer is not None:
        passed, reason = ANSWER_CHECKS[task.answer.check](
            trace, **variant.filled(task.answer.params))
        answer = {"passed": passed, "reason": reason}
    else:
        answer = {"passed": True, "reason": "no final-answer check (the submission decides)"}
    if task.submission is not None:
        accepted = trace.accepted_submission
        submission = {"passed": accepted is not None, "reason": (
            "final submission accepted" if accepted is not None else
            "no accepted final submission")}
    else:
        submission = {"passed": True, "reason": "no submission required"}
    base_traj, base_forbidden = default_checks(variant)
    budget = {"passed": trace.termination != STEP_BUDGET_EXHAUSTED,
              "reason": "finished within the step budget"
              if trace.termination != STEP_BUDGET_EXHAUSTED else "step budget exhausted"}
    trajectory = _section(base_traj + list(task.trajectory), trace, variant)
    trajectory["subchecks"] = {"step_budget": budget, **trajectory["subchecks"]}
    trajectory["passed"] = trajectory["passed"] and budget["passed"]
    forbidden = _section(base_forbidden + list(task.forbidden), trace, variant)
    checks = {"final_answer": answer, "submission": submission, "trajectory": trajectory,
              "forbidden": forbidden}
    passed = all(c["passed"] for c in checks.values())
    labels = [k for k in ("final_answer", "submission") if not checks[k]["passed"]] + [
        name for sec in ("trajectory", "forbidden")
        for name, sub in checks[sec]["subchecks"].items() if not sub["passed"]]
    return {"passed": passed, "checks": checks, "failure_labels": labels,
            "failure_class": None if passed else _failure_class(trace, checks)}


def _failure_class(trace: Trace, checks: dict[str, Any]) -> str:
    forbidden = checks["forbidden"]["subchecks"]
    trajectory = checks["trajectory"]["subchecks"]
    if trace.termination == STEP_BUDGET_EXHAUSTED:
        return "F4"
    if not forbidden["hallucinated_tool"]["passed"]:
        return "F1"
    if not trajectory.get("valid_arguments", {"passed": True})["passed"]:
        return "F2"
    if trace.termination == FINAL_ANSWER:
        return "F5"
    if not checks["trajectory"]["passed"]:
        return "F6"
    if any(c["passed"] for c in checks.values()):
        return "F7"
    return "F3"
