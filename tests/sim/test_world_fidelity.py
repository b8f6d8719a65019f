"""Fidelity's ``exact`` compares JSON values as values, as ``values`` and ``structural`` do, and
a fenced json block is JSON whatever the case of its tag."""

from __future__ import annotations

import pytest

from agentworld_envs.world.fidelity import step_fidelity


@pytest.mark.parametrize(("predicted", "real"), [
    ('{"price": 12, "ok": true}', '{"ok": true, "price": 12.0}'),
    ('{"delta": 0}', '{"delta": -0.0}'),
    ('[1e2]', '[100]'),
])
def test_the_same_numbers_written_differently_agree_exactly(predicted: str, real: str) -> None:
    fidelity = step_fidelity(predicted, real)
    assert (fidelity.exact, fidelity.structural, fidelity.values) == (True, 1.0, 1.0)


@pytest.mark.parametrize(("predicted", "real"), [
    ('{"ok": 1}', '{"ok": true}'),
    ('{"a": [1, 2]}', '{"a": [2, 1]}'),
    ('{"a": 1}', '{"a": 1, "b": null}'),
    ('{"a": {}}', '{"a": []}'),
])
def test_different_json_values_do_not_agree_exactly(predicted: str, real: str) -> None:
    assert step_fidelity(predicted, real).exact is False


@pytest.mark.parametrize("tag", ["JSON", "Json"])
def test_a_fenced_json_block_is_json_whatever_its_tag_case(tag: str) -> None:
    fidelity = step_fidelity(f'```{tag}\n{{"a": 1}}\n```', '{"a": 1}')
    assert fidelity.predicted_json and fidelity.exact and fidelity.values == 1.0
