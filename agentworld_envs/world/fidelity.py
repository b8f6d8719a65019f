"""Judge-free fidelity: how closely a predicted observation agrees with the real one.

Four measures per step:

* ``exact``: the two agree exactly: as JSON values when both are JSON (so key order, spacing
  and how a number is written, ``1`` or ``1.0``, do not matter), otherwise as text after
  trimming and normalising line ends.
* ``structural``: JSON-structural agreement, the Jaccard overlap of the two documents' skeletons
  (every ``(path, type)`` pair, list positions included; a path is the keys and positions
  from the root, so ``{"a.b": 1}`` and ``{"a": {"b": 1}}`` share no leaf).
* ``values``: the share of the real document's leaves (``(path, value)`` pairs) that the
  prediction reproduces.
* ``calls``: the share of the real observation's call results (one per JSON line) whose
  outcome the prediction gets right at the same position: the tool named (``tool_name``), the
  ``status``, and the error's ``type`` or ``code`` (none on success).

All three are ``nan`` when the real observation is not JSON, and 0 when it is but the
prediction is not.

JSON here is one JSON document, a fenced ```` ```json ```` block, or JSON Lines (one value per
non-empty line, read as a list), which is how the AgentFloor tools answer.

Example:
    >>> f = step_fidelity('{"status": "ok", "result": {"id": "P1", "price": 9}}',
    ...                   '{"result": {"price": 12, "id": "P1"}, "status": "ok"}')
    >>> f.exact, f.structural, round(f.values, 2), f.calls
    (False, 1.0, 0.67, 1.0)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from agentworld_envs.protocol import bounded_json
from agentworld_envs.world.parsing import clean_response_marker

__all__ = ["Fidelity", "parse_json_observation", "step_fidelity", "summarise"]

_FENCE_HEAD = re.compile(r"```(?:json)?(\s*)", re.IGNORECASE)
_NOT_JSON = object()


@dataclass(frozen=True)
class Fidelity:
    """Agreement between one predicted and one real observation."""

    exact: bool
    structural: float
    values: float
    predicted_json: bool
    real_json: bool
    calls: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        """A plain dict for ``info`` and reports; ``nan`` measures are left out."""
        return {k: v for k, v in asdict(self).items()
                if not (isinstance(v, float) and math.isnan(v))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fidelity:
        """Rebuild from :meth:`to_dict`'s form (a missing measure is ``nan``)."""
        return cls(exact=bool(data["exact"]), structural=float(data.get("structural", math.nan)),
                   values=float(data.get("values", math.nan)),
                   predicted_json=bool(data["predicted_json"]), real_json=bool(data["real_json"]),
                   calls=float(data.get("calls", math.nan)))


def _normal_text(text: str) -> str:
    text = clean_response_marker(text.replace("\r\n", "\n").replace("\r", "\n"))
    return "\n".join(line.rstrip() for line in text.strip().split("\n"))


def _fence_body(text: str) -> str:
    """``text`` without its fence, when it is one fenced block (```json or ```, blank to a
    newline, ``` at the end), read in one pass; else ``text``."""
    head = _FENCE_HEAD.match(text)
    if head and "\n" in head.group(1) and text.endswith("```") and len(text) - 3 >= head.end():
        return text[head.end():-3].strip()
    return text


def parse_json_observation(text: str) -> Any:
    """The observation as a JSON value, or the module's ``_NOT_JSON`` sentinel.

    Accepts one document, one fenced json block, or JSON Lines (returned as a list).
    """
    text = _fence_body(_normal_text(text))
    if not text:
        return _NOT_JSON
    try:
        return bounded_json.loads(text)
    except bounded_json.JSONError:
        pass
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2:
        return _NOT_JSON
    try:
        return [bounded_json.loads(line) for line in lines]
    except bounded_json.JSONError:
        return _NOT_JSON


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def _shape(value: Any, paths: dict[tuple[int, Any], int]) -> tuple[set[tuple[int, str]],
                                                                    dict[int, Any]]:
    """A JSON value's skeleton (every ``(path, type)`` pair) and leaves (path to value), in one
    walk. A path is an id: the root's is 0, a child's the one ``paths`` gives its parent's id
    and its key or position (added when new), so documents walked with one ``paths`` share the
    ids of their common paths, and a path costs one id however long its keys."""
    shape: set[tuple[int, str]] = set()
    leaves: dict[int, Any] = {}
    stack: list[tuple[int, Any]] = [(0, value)]
    while stack:
        path, item = stack.pop()
        shape.add((path, _type_name(item)))
        if isinstance(item, dict | list):
            stack.extend((paths.setdefault((path, key), len(paths) + 1), child) for key, child
                         in (item.items() if isinstance(item, dict) else enumerate(item)))
        else:
            leaves[path] = item
    return shape, leaves


def _same(a: Any, b: Any) -> bool:
    return _type_name(a) == _type_name(b) and a == b


def step_fidelity(predicted: str, real: str) -> Fidelity:
    """Agreement of one predicted observation with the real one (see the module docstring)."""
    pred_value, real_value = parse_json_observation(predicted), parse_json_observation(real)
    predicted_json, real_json = pred_value is not _NOT_JSON, real_value is not _NOT_JSON
    if not (predicted_json and real_json):
        missing = 0.0 if real_json else math.nan
        return Fidelity(exact=_normal_text(predicted) == _normal_text(real), structural=missing,
                        values=missing, predicted_json=predicted_json, real_json=real_json,
                        calls=missing)
    paths: dict[tuple[int, Any], int] = {}
    (pred_shape, pred_leaves), (real_shape, real_leaves) = (_shape(pred_value, paths),
                                                            _shape(real_value, paths))
    structural = len(pred_shape & real_shape) / len(pred_shape | real_shape)
    matched = sum(1 for path, item in real_leaves.items()
                  if path in pred_leaves and _same(pred_leaves[path], item))
    values = matched / len(real_leaves) if real_leaves else float(not pred_leaves)
    real_calls, pred_calls = _calls(real_value), _calls(pred_value)
    right = sum(1 for k, call in enumerate(real_calls)
                if k < len(pred_calls) and _outcome(pred_calls[k]) == _outcome(call))
    exact = pred_shape == real_shape and matched == len(real_leaves)
    return Fidelity(exact=exact, structural=structural,
                    values=values, predicted_json=True, real_json=True,
                    calls=right / len(real_calls) if real_calls else float(not pred_calls))


def _calls(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _outcome(call: Any) -> tuple[Any, ...]:
    """What a call result says happened: tool, status and error kind (when it names them)."""
    if not isinstance(call, dict):
        return (_type_name(call),)
    error = call.get("error")
    kind = (error.get("type", error.get("code")) if isinstance(error, dict)
            else None if error is None else str(error))
    return call.get("tool_name"), call.get("status"), kind


def summarise(fidelities: Iterable[Fidelity]) -> dict[str, float]:
    """Means over steps: ``exact`` rate, and ``structural``/``values`` over steps whose real
    observation is JSON.

    Returns ``{"steps", "exact", "structural", "values", "calls", "json_steps"}`` (``nan``
    for a mean over no steps).
    """
    items = list(fidelities)
    json_items = [f for f in items if f.real_json]

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else math.nan

    return {
        "steps": float(len(items)),
        "exact": mean([float(f.exact) for f in items]),
        "structural": mean([f.structural for f in json_items]),
        "values": mean([f.values for f in json_items]),
        "calls": mean([f.calls for f in json_items]),
        "json_steps": float(len(json_items)),
    }
