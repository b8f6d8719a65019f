"""The ``hf`` backend's CTranslate2 engine gives the torch engine's greedy tokens, on the tiny
model converted the way the embedded one is; its conversion cache is reused, and rebuilt when
broken."""

from __future__ import annotations

import pickle
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest, SamplingParams, make_backend
from agentworld_envs.backends.hf import HFBackend

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("ctranslate2")

from agentworld_envs.backends import ct2  # noqa: E402 - after the skips


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A conversion cache of the module's own."""
    folder = tmp_path_factory.mktemp("ct2_cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTWORLD_CACHE", str(folder))
        yield folder


@pytest.fixture(scope="module")
def torch_backend(tiny_lm_dir: Path) -> HFBackend:
    return HFBackend(str(tiny_lm_dir), engine="torch", draft="none")


@pytest.fixture(scope="module")
def ct2_backend(tiny_lm_dir: Path, cache: Path) -> HFBackend:
    return HFBackend(str(tiny_lm_dir), engine="ctranslate2")


WORDS = ["lookup", "record", "P1", "status", "ok", "{", "}", '"id":', "42", "tool", "call",
         "error", "not_found", "result", "the", "a", "search", "query", ":", ","]


def chats(seed: int, count: int) -> list[list[dict[str, str]]]:
    """Chats of 1 to 200 words, some repeating a phrase."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.choice([1, 4, 20, 60, 200]))]
        if i % 2:
            words = (words[:8] * 20)[: len(words)]
        out.append([{"role": "system", "content": "You simulate tools."},
                    {"role": "user", "content": " ".join(words)}])
    return out


def token_ids(backend: HFBackend, requests: list[ChatRequest]) -> list[list[int]]:
    return [c.raw["token_ids"] for c in backend.complete(requests)]


def greedy(backend: HFBackend, prompts: list[list[int]], most: int,
           eos: set[int]) -> list[list[int]]:
    """Plain greedy decoding with torch, one token per forward pass (the reference)."""
    import torch

    from agentworld_envs.backends.ragged import ragged_decoder

    ragged = ragged_decoder(torch, backend._model)
    assert ragged is not None
    return ragged.decode(prompts, most, eos, lambda rows, scores: scores.float().argmax(-1))


@pytest.mark.parametrize("max_tokens", [1, 7, 40])
def test_ctranslate2_greedy_answers_are_the_torch_ones(torch_backend: HFBackend,
                                                       ct2_backend: HFBackend,
                                                       max_tokens: int) -> None:
    requests = [ChatRequest(chat, sampling=SamplingParams(max_tokens=max_tokens))
                for chat in chats(max_tokens, 24)]
    expected = token_ids(torch_backend, requests)
    assert token_ids(ct2_backend, requests) == expected
    assert token_ids(ct2_backend, requests[:1]) == expected[:1]  # alone as in a batch


def test_ctranslate2_rows_ending_early_and_mixed_lengths_match_ragged_greedy(
        torch_backend: HFBackend, ct2_backend: HFBackend) -> None:
    """Token-id prompts of 1 to 300 tokens against the torch ragged decoder, with end tokens
    chosen among the tokens the model writes, so that rows end at different steps."""
    rng = random.Random(5)
    prompts = [[rng.randrange(3, 400) for _ in range(rng.choice([1, 3, 12, 40, 120, 300]))]
               for _ in range(20)]
    written = [t for row in greedy(torch_backend, prompts, 30, set()) for t in row]
    eos = {max(set(written), key=written.count), written[len(written) // 2]}
    expected = greedy(torch_backend, prompts, 30, eos)
    assert len({len(row) for row in expected}) > 2  # rows end at different steps
    assert ct2_backend._ct2.decode(prompts, 30, eos) == expected


def test_sampled_and_extra_setting_requests_take_the_torch_path(torch_backend: HFBackend,
                                                                ct2_backend: HFBackend) -> None:
    chat = chats(9, 1)[0]
    requests = [ChatRequest(chat, sampling=SamplingParams(max_tokens=12, temperature=0.9,
                                                          seed=s)) for s in (1, 2)]
    requests.append(ChatRequest(chat, sampling=SamplingParams(
        max_tokens=12, extra={"repetition_penalty": 1.3})))
    assert token_ids(ct2_backend, requests) == token_ids(torch_backend, requests)


def test_describe_names_the_engine_and_pickling_keeps_it(ct2_backend: HFBackend,
                                                         torch_backend: HFBackend) -> None:
    assert ct2_backend.describe()["engine"] == "ctranslate2"
    assert "engine" not in torch_backend.describe()
    again = pickle.loads(pickle.dumps(ct2_backend))
    assert again.engine == "ctranslate2" and again.describe() == ct2_backend.describe()


def test_ctranslate2_names_its_install(tiny_lm_dir: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ctranslate2", None)
    with pytest.raises(ImportError, match=r'pip install "agentworld\[hf\]"'):
        HFBackend(str(tiny_lm_dir), engine="ctranslate2")


@pytest.mark.parametrize("config, message", [
    ({"engine": "fast"}, "engine must be one of ('torch', 'ctranslate2'), not 'fast'"),
    ({"engine": "ctranslate2", "cache": "static"}, "engine 'ctranslate2' has no static cache"),
    ({"engine": "ctranslate2", "dtype": "float64"}, "engine 'ctranslate2' has no float64"),
    ({"engine": "ctranslate2", "device": "mps"}, "runs on 'cpu' or 'cuda"),
])
def test_bad_engine_settings_are_refused_before_loading(tiny_lm_dir: Path,
                                                        config: dict[str, Any],
                                                        message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_backend({"name": "hf", "model": str(tiny_lm_dir), **config})


# --- the conversion cache ---------------------------------------------------------------

@pytest.fixture
def conversions(torch_backend: HFBackend, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Count conversions into a fresh cache."""
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path))
    done: list[Path] = []
    convert = ct2._converter

    def counted(ctranslate2: Any, folder: str, model: Any) -> Any:
        converter = convert(ctranslate2, folder, model)
        done.append(Path(folder))
        return converter

    monkeypatch.setattr(ct2, "_converter", counted)
    return done


def build(backend: HFBackend) -> ct2.CT2Engine:
    return ct2.CT2Engine.build(backend._model, backend.model, None, "cpu", "float32", 1)


def test_a_second_build_reuses_the_conversion(torch_backend: HFBackend,
                                              conversions: list[Path]) -> None:
    first = build(torch_backend)
    second = build(torch_backend)
    assert len(conversions) == 1 and first.path == second.path
    assert first.path.parent.name == "ctranslate2" and (first.path / "model.bin").is_file()
    assert [p.name for p in first.path.parent.iterdir()] == [first.path.name]  # no leftovers


def test_the_key_covers_the_adapter(torch_backend: HFBackend, conversions: list[Path],
                                    tmp_path: Path) -> None:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    plain = ct2.converted_dir(torch_backend._model, torch_backend.model, None)
    adapted = ct2.converted_dir(torch_backend._model, torch_backend.model, str(adapter))
    (adapter / "adapter_config.json").write_text('{"r": 2}')
    changed = ct2.converted_dir(torch_backend._model, torch_backend.model, str(adapter))
    assert len({plain, adapted, changed}) == 3 and len(conversions) == 3


@pytest.mark.parametrize("damage", ["truncate", "no_mark", "bad_mark", "garbage_weights"])
def test_a_partial_or_corrupted_conversion_is_rebuilt(torch_backend: HFBackend,
                                                      conversions: list[Path],
                                                      damage: str) -> None:
    path = build(torch_backend).path
    weights = path / "model.bin"
    if damage == "truncate":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif damage == "no_mark":
        (path / ct2._MARK).unlink()
    elif damage == "bad_mark":
        (path / ct2._MARK).write_text("{not json")
    else:  # the sizes still fit: caught when CTranslate2 cannot load it
        weights.write_bytes(b"\0" * weights.stat().st_size)
    rebuilt = build(torch_backend)
    assert len(conversions) == 2 and rebuilt.path == path
    prompts = [[5, 6, 7, 8], [9]]
    assert rebuilt.decode(prompts, 5, set()) == greedy(torch_backend, prompts, 5, set())
