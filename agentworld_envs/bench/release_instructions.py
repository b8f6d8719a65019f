"""The judge's fixed instructions, read from a Qwen-AgentWorld checkout's ``task_configs.py``.

The release keeps the text that ends its judge user message in the ``JUDGE_USER_PROMPT``
template of ``eval/lwm_eval_utils/task_configs.py``: four placeholders (``{context}``,
``{world_model_input}``, ``{predicted_observation}``, ``{ground_truth}``), then the
instructions. The file is read as data with :mod:`ast`, never executed, and the instructions
are the template's literal text after ``{ground_truth}``, as ``str.format`` renders it
(``{{`` becomes ``{``), without the blank line that separates them from the ground truth and
without trailing white space (the release strips the whole message).

A template whose fields are not those four, in that order, a blank line apart with nothing
before them, would not give the release's message and is refused.

Example:
    >>> instructions_from_template("{context}\\n\\n{world_model_input}\\n\\n"
    ...     "{predicted_observation}\\n\\n{ground_truth}\\n\\nGive {{\\"scores\\": 1}}.")
    'Give {"scores": 1}.'
"""

from __future__ import annotations

import ast
import string
from pathlib import Path

__all__ = ["TASK_CONFIGS", "TEMPLATE_NAME", "instructions_from_task_configs",
           "instructions_from_template"]

TASK_CONFIGS = Path("eval", "lwm_eval_utils", "task_configs.py")
"""Where a checkout keeps the template, relative to its top."""
TEMPLATE_NAME = "JUDGE_USER_PROMPT"
LAYOUT = ("context", "world_model_input", "predicted_observation", "ground_truth")
"""The template's fields, in order, a blank line apart, as the judge's message is built."""
LAST_FIELD = LAYOUT[-1]


def instructions_from_template(template: str) -> str:
    """The rendered literal text after ``{ground_truth}``; raises ValueError when the template
    has no such field or a field after it."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"{TEMPLATE_NAME} is not a format template: {exc}") from None
    fields = [field for _, field, _, _ in parts if field is not None]
    if LAST_FIELD not in fields or fields[-1] != LAST_FIELD:
        raise ValueError(f"{TEMPLATE_NAME} does not end with the {{{LAST_FIELD}}} field and then "
                         f"the instructions (its fields: {fields})")
    last = [field for _, field, _, _ in parts].index(LAST_FIELD)
    text = "".join(literal for literal, _, _, _ in parts[last + 1:])
    if not text.startswith("\n\n"):
        raise ValueError(f"{TEMPLATE_NAME} does not put a blank line between {{{LAST_FIELD}}} "
                         "and the instructions, as the release's layout does")
    head = [(literal.strip() if n == 0 else literal, field, spec, conversion)
            for n, (literal, field, spec, conversion) in enumerate(parts[:last + 1])]
    if head != [("" if n == 0 else "\n\n", field, "", None) for n, field in enumerate(LAYOUT)]:
        raise ValueError(f"{TEMPLATE_NAME} is not the release's layout before the instructions "
                         f"({', '.join(f'{{{field}}}' for field in LAYOUT)}, a blank line "
                         f"apart, nothing before them; its fields: {fields}), so the judge's "
                         "message would not be the release's")
    return text[2:].rstrip()


def instructions_from_task_configs(path: Path) -> str:
    """The instructions in the ``task_configs.py`` at ``path``; raises ValueError naming the
    file when it cannot be read or holds no string ``JUDGE_USER_PROMPT``."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"cannot read {str(path)!r}: {exc}") from None
    except (RecursionError, MemoryError):  # the parser's own limits, on absurd nesting
        raise ValueError(f"cannot read {str(path)!r}: nested too deeply to parse") from None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == TEMPLATE_NAME
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            try:
                return instructions_from_template(node.value.value)
            except ValueError as exc:
                raise ValueError(f"{str(path)!r}: {exc}") from None
    raise ValueError(f"{str(path)!r} assigns no string {TEMPLATE_NAME}")
