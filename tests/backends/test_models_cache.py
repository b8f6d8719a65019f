"""Converting a pretrained base into a cache it cannot use: one clear error, nothing converted
in vain."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from agentworld_envs.models.pretrained import convert_gguf
from tests.helpers.tiny_gguf import write_tiny_gguf

transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

pytestmark = pytest.mark.usefixtures("hf_offline", "one_torch_thread")


@pytest.fixture(scope="module")
def gguf_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny-llama.F32.gguf")


def test_an_unwritable_cache_is_refused_before_converting(
        gguf_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The error was the bare errno of the cache's ``bases`` folder, after the conversion."""
    def no_conversion(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("converted into a cache that cannot hold the result")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_conversion)
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "cache" / "bases" / "base"
    with pytest.raises(OSError, match=f"^cannot write the converted base under {out.parent} "
                                      f"\\(Not a directory\\): set AGENTWORLD_CACHE"):
        convert_gguf(gguf_file, out)


def test_a_folder_in_the_way_is_named_with_what_to_do(gguf_file: Path, tmp_path: Path) -> None:
    """The error named the staging folder (already deleted) that could not be renamed."""
    out = tmp_path / "bases" / "base"
    out.mkdir(parents=True)
    (out / "partial").write_text("")
    with pytest.raises(OSError, match=f"^{out} is in the way and holds no converted model: "
                                      f"remove it and retry"):
        convert_gguf(gguf_file, out)
    assert sorted(out.parent.iterdir()) == [out]
    assert sorted(out.iterdir()) == [out / "partial"]


def test_a_killed_conversions_staging_folder_is_removed_by_the_next(gguf_file: Path,
                                                                    tmp_path: Path) -> None:
    """A conversion killed with SIGKILL left its half-written model beside ``out`` (hundreds
    of MB, hidden) for good. The next conversion removes it; a live converter's, another
    host's and anything else beside ``out`` are left alone."""
    out = tmp_path / "bases" / "base"
    out.parent.mkdir(parents=True)
    gone = 2**22 + 1  # above Linux's largest pid_max: no process has it
    host = socket.gethostname()
    dead = out.parent / f".base-{host}-{gone}-abc123"
    kept = [out.parent / f".base-{host}-{os.getpid()}-live", out.parent / ".base-otherhost-1-x",
            out.parent / "unrelated"]
    for folder in (dead, *kept):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"\0" * 64)
    assert convert_gguf(gguf_file, out) == out
    assert sorted(out.parent.iterdir()) == sorted([out, *kept])
