"""The submission: whether a decision meets the task's rule."""

from __future__ import annotations

from typing import Any

from floor_tasks.database import FixtureDB
from floor_tasks.task import SubmissionSpec


def _exact_value(got: Any, expected: Any) -> bool:
    """Submission equality: the literal value and its JSON type (numbers compare as numbers)."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return got is expected
    if isinstance(expected, int | float):
        return isinstance(got, int | float) and got == expected
    return type(got) is type(expected) and got == expected


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
