"""Scripted verifiers: a run passes only if every check passes (no partial credit).

The verdict has four sections: the final answer, the submission, the trajectory and the
forbidden behaviours. Each check is a function registered by name; tasks name checks in their
YAML files and an unknown name fails when the task loads, never silently at scoring time.
One module per part: the trace, the text matching helpers, the answer checks, the submission,
the trajectory checks, the forbidden behaviours and the verdict (the registry holds the checks).
"""

from floor_tasks.verifier.registry import ANSWER_CHECKS, CHECKS, CheckFn
from floor_tasks.verifier.submission import judge_submission
from floor_tasks.verifier.text import asserted_labels, field_matches, numbers_in, selected
from floor_tasks.verifier.trace import FIELD_READS, Trace
from floor_tasks.verifier.verdict import FAILURE_CLASSES, check_names, default_checks, verify

__all__ = ["Trace", "verify", "judge_submission", "check_names", "ANSWER_CHECKS", "CHECKS",
           "FAILURE_CLASSES", "FIELD_READS", "CheckFn", "asserted_labels", "default_checks",
           "field_matches", "numbers_in", "selected"]
