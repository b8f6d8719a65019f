"""``agentworld sim fidelity --variants`` reads variants as ``agentworld floor run`` does, and
checks them before the world model loads. Before, ``--variants i1`` (a variant 6 of the 30
tasks have, which ``floor run`` plays on those 6) was refused as "unknown floor scenario
'A01/i1'", and any unknown variant was refused only after the model's weights had loaded."""

from __future__ import annotations

import json

import pytest

from agentworld_envs.cli import main


@pytest.fixture
def no_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a world model is built."""
    import agentworld_envs.sim.model_client as model_client

    def built(*_: object, **__: object) -> None:
        raise AssertionError("a world model was built")

    monkeypatch.setattr(model_client, "make_backend", built)


@pytest.mark.parametrize(("variants", "message"), [
    ("zz", "--variants: no selected task has variant(s) 'zz' (they have: v0, v1, v2, v3, v4, "
           "i1, i2, i3, i4)"),
    ("", "--variants: no selected task has variant(s) '' (they have: v0, v1, v2, v3, v4, i1, "
         "i2, i3, i4)"),
    ("v0,v0", "--variants: v0 named twice"),
])
def test_a_bad_variant_is_one_line_before_the_world_model_is_built(
        variants: str, message: str, no_backend: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "fidelity", "--backend", "scripted", "--variants", variants]) == 2
    assert capsys.readouterr().err == f"agentworld: error: {message}\n"


def test_a_variant_plays_on_each_selected_task_that_has_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    from floor_tasks import TASK_IDS, load_task

    having = [task for task in TASK_IDS if "i2" in load_task(task).variant_names]
    assert 0 < len(having) < len(TASK_IDS)
    assert main(["sim", "fidelity", "--backend", "scripted", "--variants", "i2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["scenarios"]) == [f"{task}/i2" for task in having]
