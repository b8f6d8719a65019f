"""The ``embedded`` backend's config is checked before anything is made, as ``hf``'s is: a bad
setting or an adapter that is not shipped is refused by name, exit status 2, no folder made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentworld_envs.backends.registry import BackendConfigError, check_backend_config
from agentworld_envs.cli import main


@pytest.mark.parametrize(("config", "message"), [
    ({"adapter": "tool"}, "no shipped adapter 'tool'; shipped: ['tools']"),
    ({"adapter": "tools", "batch_size": 0}, "batch_size must be an integer >= 1, not 0"),
    ({"greedy_memo": -1, "draft": "ngram"}, "greedy_memo must be an integer >= 0 (0 keeps "
                                            "none), not -1; draft must be one of"),
    ({"model": "/no/such/base"}, "model '/no/such/base' is no folder"),
])
def test_a_bad_embedded_config_is_refused_by_name(config: dict, message: str) -> None:
    with pytest.raises(BackendConfigError) as raised:
        check_backend_config({"name": "embedded", **config})
    assert str(raised.value).startswith(f"backend 'embedded': {message}")


@pytest.mark.parametrize("config", [{}, {"adapter": "tools"}, {"adapter": "tools",
                                                               "batch_size": 4}])
def test_a_good_embedded_config_passes(config: dict) -> None:
    check_backend_config({"name": "embedded", **config})


def test_a_command_refuses_it_before_it_makes_its_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = json.dumps({"name": "embedded", "adapter": "tools", "batch_size": 0})
    argv = ["floor", "run", "--tasks", "A1", "--out", str(tmp_path / "out"), "--backend", backend]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "backend 'embedded': batch_size must be an integer >= 1, not 0" in err
    assert not (tmp_path / "out").exists()
