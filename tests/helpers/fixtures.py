"""Shared fixtures: a tiny LM and a server serving it (session-wide), and one torch thread.

Enable them with ``pytest_plugins = ["tests.helpers.fixtures"]`` in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.server import start_transformers_serve
from tests.helpers.tiny_lm import build_tiny_lm


@pytest.fixture(scope="session")
def hf_offline() -> Iterator[None]:
    """Keep huggingface_hub off the network for the session."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield


@pytest.fixture(scope="session")
def tiny_lm_dir(hf_offline: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight chat model saved to a temporary directory."""
    return build_tiny_lm(tmp_path_factory.mktemp("tiny_lm"))


@pytest.fixture(scope="session")
def tiny_lm_model(tiny_lm_dir: Path) -> Any:
    """The tiny model, loaded for inference."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_lm_dir).eval()


@pytest.fixture(scope="session")
def tiny_ragged(tiny_lm_model: Any) -> Any:
    """A ragged decoder on the tiny model, with no prefix cache (it holds no state)."""
    import torch

    from agentworld_envs.backends.ragged import ragged_decoder

    decoder = ragged_decoder(torch, tiny_lm_model)
    assert decoder is not None
    return decoder


@pytest.fixture(scope="session")
def tiny_server(tiny_lm_dir: Path) -> Iterator[tuple[str, str]]:
    """A ``transformers serve`` process on loopback: yields ``(base_url, model_name)``."""
    with start_transformers_serve(tiny_lm_dir) as (base_url, _process):
        yield base_url, str(tiny_lm_dir)


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """Train on one torch thread: on a busy machine more threads make small nets much slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session", autouse=True)
def sb3_logs_in_one_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """SB3's default logger makes a folder in the system's temp dir at every ``learn()``; the
    tests' own PPO runs (doctests included) keep theirs in one folder of the session's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3_logs")))
        yield
