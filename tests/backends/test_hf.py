"""HFBackend on the tiny model in-process; import hints of the in-process backends."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentworld_envs.backends import ChatRequest, SamplingParams, make_backend
from agentworld_envs.backends.chat_template import template_messages
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.backends.stops import cut_at_stop

PROMPTS = [
    [{"role": "user", "content": "hi"}],
    [
        {"role": "system", "content": "You are a careful agent that checks every constraint."},
        {"role": "user", "content": "search the weather in the city and then submit the answer"},
    ],
    [{"role": "user", "content": "lookup order 42 status"}],
]


@pytest.fixture(scope="module")
def hf(tiny_lm_dir: Path) -> Iterator[HFBackend]:
    backend = make_backend({"name": "hf", "model": str(tiny_lm_dir), "batch_size": 8})
    assert isinstance(backend, HFBackend)
    yield backend
    backend.close()


def forced(n: int, **kwargs) -> SamplingParams:
    """Exactly ``n`` new tokens, so outputs are long enough to compare."""
    return SamplingParams(max_tokens=n, extra={"min_new_tokens": n}, **kwargs)


def token_ids(completion) -> list[int]:
    return completion.raw["token_ids"]


def test_left_padded_batch_matches_each_prompt_alone(hf: HFBackend) -> None:
    requests = [ChatRequest(m, sampling=forced(10)) for m in PROMPTS]
    batch = hf.complete(requests)
    alone = [hf.complete([r])[0] for r in requests]
    lengths = {c.usage.input_tokens for c in batch}
    assert len(lengths) == 3  # different prompt lengths, so the batch really was padded
    for together, single in zip(batch, alone, strict=True):
        assert token_ids(together) == token_ids(single)
        assert (together.text, together.usage) == (single.text, single.usage)
    assert len({tuple(token_ids(c)) for c in batch}) == 3  # the outputs depend on the prompt


def test_batch_size_splits_and_keeps_order(tiny_lm_dir: Path, hf: HFBackend) -> None:
    requests = [ChatRequest(m, sampling=forced(4)) for m in PROMPTS * 2]
    small = HFBackend(str(tiny_lm_dir), batch_size=2)
    assert [token_ids(c) for c in small.complete(requests)] == [
        token_ids(c) for c in hf.complete(requests)
    ]
    mixed = [ChatRequest(PROMPTS[0], sampling=forced(3)), ChatRequest(PROMPTS[1]),
             ChatRequest(PROMPTS[2], sampling=forced(3))]
    out = small.complete(mixed)
    assert [c.usage.output_tokens for c in (out[0], out[2])] == [3, 3]
    assert token_ids(out[0]) == token_ids(hf.complete([mixed[0]])[0])


def test_usage_counts_and_finish_reason(tiny_lm_dir: Path, hf: HFBackend) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    (completion,) = hf.complete([ChatRequest(PROMPTS[1], sampling=forced(7))])
    prompt = tokenizer.apply_chat_template(PROMPTS[1], add_generation_prompt=True, tokenize=False)
    assert completion.usage.input_tokens == len(tokenizer(prompt)["input_ids"])
    assert completion.usage.output_tokens == 7 == len(token_ids(completion))
    assert completion.finish_reason == "length"
    assert completion.text == tokenizer.decode(token_ids(completion), skip_special_tokens=True)
    assert completion.latency_s > 0


def test_stop_strings_cut_the_text(hf: HFBackend) -> None:
    request = ChatRequest(PROMPTS[2], sampling=forced(16))
    (full,) = hf.complete([request])
    visible = full.text.strip()
    assert len(visible) >= 4
    stop = visible[2:4]
    (cut,) = hf.complete([ChatRequest(PROMPTS[2], sampling=forced(16, stop=(stop,)))])
    assert cut.text == full.text[: full.text.find(stop)]
    assert cut.finish_reason == "stop"


def test_seeded_sampling_is_reproducible_whatever_the_batch(hf: HFBackend) -> None:
    def sample(seed: int, prompt: int = 0) -> ChatRequest:
        return ChatRequest(PROMPTS[prompt], sampling=forced(12, temperature=1.0, seed=seed))

    alone = hf.complete([sample(1)])[0]
    in_batch = hf.complete([sample(7, 1), sample(1), sample(2, 2)])[1]
    other_seed = hf.complete([sample(2)])[0]
    greedy = hf.complete([ChatRequest(PROMPTS[0], sampling=forced(12))])[0]
    assert token_ids(alone) == token_ids(in_batch)
    assert token_ids(alone) != token_ids(other_seed)
    assert token_ids(alone) != token_ids(greedy)


def test_top_p_near_zero_is_greedy(hf: HFBackend) -> None:
    nucleus = SamplingParams(temperature=1.0, top_p=1e-6, seed=3, max_tokens=8,
                             extra={"min_new_tokens": 8})
    sampled = hf.complete([ChatRequest(PROMPTS[1], sampling=nucleus)])[0]
    greedy = hf.complete([ChatRequest(PROMPTS[1], sampling=forced(8))])[0]
    assert token_ids(sampled) == token_ids(greedy)


def test_top_k_keeps_the_likeliest_tokens_and_a_seeded_draw_repeats(hf: HFBackend) -> None:
    def sampled(seed: int, top_k: int | None, prompt: int = 1) -> ChatRequest:
        return ChatRequest(PROMPTS[prompt], sampling=SamplingParams(
            temperature=1.0, top_k=top_k, seed=seed, max_tokens=10))

    greedy = token_ids(hf.complete([ChatRequest(PROMPTS[1],
                                                sampling=SamplingParams(max_tokens=10))])[0])
    seeds = range(1, 5)
    alone = [token_ids(hf.complete([sampled(s, 1)])[0]) for s in seeds]  # generate's path
    batch = [token_ids(c) for c in hf.complete([sampled(s, 1) for s in seeds])]  # ragged
    assert alone == batch == [greedy] * len(seeds)
    few = [token_ids(hf.complete([sampled(s, 5)])[0]) for s in seeds]
    assert len({tuple(t) for t in few}) > 1  # top_k 5 still samples
    mixed = hf.complete([sampled(7, 5, 0), sampled(1, 5), sampled(2, 20, 2)])
    assert token_ids(mixed[1]) == few[0]  # a seeded draw, whatever its batch
    assert token_ids(hf.complete([sampled(3, 0)])[0]) == token_ids(
        hf.complete([sampled(3, None)])[0])  # 0 keeps every token


BAD_SAMPLING = {
    "temperature=-1": ({"temperature": -1.0}, "temperature must be a finite number >= 0"),
    "temperature=nan": ({"temperature": float("nan")}, "temperature must be a finite number"),
    "temperature='0.6'": ({"temperature": "0.6"}, "temperature must be a finite number"),
    "max_tokens=0": ({"max_tokens": 0}, "max_tokens must be an integer >= 1, not 0"),
    "top_p=0": ({"top_p": 0.0}, "top_p must be a number in (0, 1] or None, not 0.0"),
    "top_p=1.5": ({"top_p": 1.5}, "top_p must be a number in (0, 1] or None"),
    "top_k=-1": ({"top_k": -1}, "top_k must be an integer >= 0 (0: off) or None, not -1"),
    "two at once": ({"top_k": 2.5, "max_tokens": True},
                    "max_tokens must be an integer >= 1, not True; top_k must be"),
}


@pytest.mark.parametrize("case", BAD_SAMPLING)
def test_sampling_no_backend_can_honour_is_refused_where_it_is_made(case: str) -> None:
    import dataclasses

    settings, message = BAD_SAMPLING[case]
    with pytest.raises(ValueError, match=re.escape(message)):
        SamplingParams(**settings)
    with pytest.raises(ValueError, match=re.escape(message)):
        dataclasses.replace(SamplingParams(), **settings)
    SamplingParams(temperature=0, top_p=1, top_k=0, max_tokens=1)  # the edges are fine


def test_close_lets_the_model_go(tiny_lm_dir: Path) -> None:
    import gc
    import weakref

    backend = HFBackend(str(tiny_lm_dir), prefix_cache=4096, greedy_memo=4)
    backend.complete([ChatRequest(PROMPTS[0], sampling=SamplingParams(max_tokens=3))])  # drafted
    backend.complete([ChatRequest(m, sampling=SamplingParams(max_tokens=3, temperature=1.0,
                                                             seed=1)) for m in PROMPTS])
    model = weakref.ref(backend._model)
    backend.close()
    gc.collect()
    assert model() is None


def padded(backend: HFBackend, requests: list[ChatRequest]) -> list[list[int]]:
    """The token ids ``generate`` gives on the left-padded batch (the reference path)."""
    config = backend._generation_config(requests[0].sampling)
    sampler = None
    if requests[0].sampling.temperature > 0:
        from agentworld_envs.backends.sampling import GumbelSampler, generator

        sampler = GumbelSampler(backend._torch, [
            generator(backend._torch, "cpu", r.sampling.seed) for r in requests],
            requests[0].sampling.temperature, 1.0)
    return backend._padded_generate(backend._token_ids([backend._prompt(r, {}) for r in requests]),
                                    config, sampler)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_ragged_decoding_gives_the_tokens_of_padded_generate(
        hf: HFBackend, temperature: float) -> None:
    requests = [ChatRequest(m, sampling=SamplingParams(max_tokens=12, temperature=temperature,
                                                       seed=i))
                for i, m in enumerate(PROMPTS)]
    out = hf.complete(requests)
    assert hf._decoder is not None  # plain settings: the ragged path ran
    assert [token_ids(c) for c in out] == padded(hf, requests)
    assert [c.usage.output_tokens for c in out] == [12, 12, 12]


def test_a_row_that_ends_leaves_the_batch_and_the_others_go_on(tiny_lm_dir: Path) -> None:
    early = HFBackend(str(tiny_lm_dir))
    requests = [ChatRequest(m, sampling=SamplingParams(max_tokens=12)) for m in PROMPTS]
    full = [token_ids(c) for c in early.complete(requests)]
    end = full[1][3]  # the 4th token of the second answer becomes an end token
    early._model.generation_config.eos_token_id = [early._tokenizer.eos_token_id, end]
    early._eos_ids.add(end)
    out = early.complete(requests)
    for tokens, row in zip([token_ids(c) for c in out], full, strict=True):
        cut = row.index(end) + 1 if end in row else len(row)
        assert tokens == row[:cut]
    assert out[1].finish_reason == "stop" and len(token_ids(out[1])) <= 4
    assert [token_ids(c) for c in out] == [
        r[: r.index(end) + 1] if end in r else r for r in padded(early, requests)]


def test_greedy_memo_answers_a_prompt_seen_before_without_generating(
        tiny_lm_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memo = HFBackend(str(tiny_lm_dir), greedy_memo=2)
    generated: list[int] = []
    real = memo._generate
    monkeypatch.setattr(memo, "_generate",
                        lambda rs, *rest: generated.append(len(rs)) or real(rs, *rest))
    greedy = [ChatRequest(m, sampling=SamplingParams(max_tokens=6, seed=i))
              for i, m in enumerate(PROMPTS)]
    first = memo.complete(greedy)
    again = memo.complete([greedy[2], greedy[1]])
    assert generated == [3] and [c.text for c in again] == [first[2].text, first[1].text]
    memo.complete([ChatRequest(PROMPTS[0], sampling=SamplingParams(max_tokens=6, seed=9))])
    assert generated == [3, 1]  # the oldest answer left the memo (it keeps 2)
    sampled = ChatRequest(PROMPTS[1], sampling=SamplingParams(max_tokens=6, temperature=1.0,
                                                              seed=1))
    memo.complete([sampled])
    memo.complete([sampled])
    assert generated == [3, 1, 1, 1]  # sampled answers are never reused


def test_tools_thinking_and_tool_call_history_reach_the_template(
    tiny_lm_dir: Path, hf: HFBackend
) -> None:
    tools = [{"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}}}}]
    history = PROMPTS[0] + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "search", "arguments": '{"q": "cats"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "3 cats"},
    ]
    plain, with_tools, with_history = hf.complete([
        ChatRequest(PROMPTS[0], sampling=forced(2)),
        ChatRequest(PROMPTS[0], tools=tools, sampling=forced(2)),
        ChatRequest(history, tools=tools, sampling=forced(2)),
    ])
    assert with_tools.usage.input_tokens > plain.usage.input_tokens
    assert with_history.usage.input_tokens > with_tools.usage.input_tokens
    thinking_off = HFBackend(str(tiny_lm_dir), enable_thinking=False)
    (off,) = thinking_off.complete([ChatRequest(PROMPTS[0], sampling=forced(2))])
    assert off.usage.input_tokens > plain.usage.input_tokens
    via_extra = SamplingParams(max_tokens=2, extra={"chat_template_kwargs": {
        "enable_thinking": False}, "min_new_tokens": 2})
    (extra,) = hf.complete([ChatRequest(PROMPTS[0], sampling=via_extra)])
    assert extra.usage.input_tokens == off.usage.input_tokens


def test_template_messages_turns_argument_text_into_objects() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    broken = {"id": "d", "type": "function", "function": {"name": "g", "arguments": "{oops"}}
    messages = [{"role": "assistant", "content": "", "tool_calls": [call, broken]}]
    converted = template_messages(messages)
    assert converted[0]["tool_calls"][0]["function"]["arguments"] == {"a": 1}
    assert converted[0]["tool_calls"][1]["function"]["arguments"] == "{oops"
    assert call["function"]["arguments"] == '{"a": 1}'  # the caller's messages are untouched


def test_cut_at_stop() -> None:
    assert cut_at_stop("abc STOP def END", ["END", "STOP"]) == ("abc ", True)
    assert cut_at_stop("abc", ["x", ""]) == ("abc", False)


def test_unknown_extra_setting_is_rejected(hf: HFBackend) -> None:
    bad = SamplingParams(max_tokens=2, extra={"not_a_generation_setting": 1})
    with pytest.raises(ValueError, match="not_a_generation_setting"):
        hf.complete([ChatRequest(PROMPTS[0], sampling=bad)])


def test_describe(hf: HFBackend, tiny_lm_dir: Path) -> None:
    assert hf.describe() == {
        "name": "hf", "model": str(tiny_lm_dir), "device": "cpu", "dtype": "auto",
        "batch_size": 8, "enable_thinking": None, "adapter": None, "view": None,
        "greedy_memo": 0, "draft": "prompt",
    }


def test_missing_torch_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r'pip install "agentworld\[hf\]"'):
        HFBackend("unused")


def test_missing_vllm_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=r'pip install "agentworld\[vllm\]"'):
        make_backend({"name": "vllm", "model": "unused"})


def test_vllm_backend_wraps_llm_chat(monkeypatch: pytest.MonkeyPatch) -> None:
    """The thin vLLM wrapper, against a stand-in ``vllm`` module (vllm is not installed here)."""
    calls: list[dict] = []

    def echo_call(text: str) -> str:
        return f'<tool_call>{json.dumps({"name": "echo", "arguments": {"t": text}})}</tool_call>'

    class StubParams:
        def __init__(self, **kwargs) -> None:
            self.kwargs = kwargs

    class StubLLM:
        def __init__(self, model: str, **engine_kwargs) -> None:
            self.engine = (model, engine_kwargs)

        def chat(self, conversations, sampling_params, use_tqdm, tools, chat_template_kwargs):
            calls.append({"n": len(conversations), "tools": tools,
                          "template": chat_template_kwargs, "params": sampling_params})
            return [
                SimpleNamespace(
                    prompt_token_ids=[0] * len(c[-1]["content"]),
                    outputs=[SimpleNamespace(
                        text=echo_call(c[-1]["content"]),
                        token_ids=(1, 2, 3),
                        finish_reason="stop",
                    )],
                )
                for c in conversations
            ]

    stub = SimpleNamespace(LLM=StubLLM, SamplingParams=StubParams)
    monkeypatch.setitem(sys.modules, "vllm", stub)
    monkeypatch.setitem(sys.modules, "vllm.engine", SimpleNamespace())
    monkeypatch.setitem(sys.modules, "vllm.engine.arg_utils", SimpleNamespace(
        EngineArgs=lambda gpu_memory_utilization=0.9: None))  # where the engine keys go
    backend = make_backend({"name": "vllm", "model": "m", "enable_thinking": False,
                            "gpu_memory_utilization": 0.5})
    tools = [{"type": "function", "function": {"name": "echo", "parameters": {}}}]
    requests = [
        ChatRequest([{"role": "user", "content": "aa"}], sampling=SamplingParams(seed=1)),
        ChatRequest([{"role": "user", "content": "bbbb"}], tools=tools,
                    sampling=SamplingParams(stop=("X",), extra={"top_k": 5})),
        ChatRequest([{"role": "user", "content": "c"}]),
    ]
    out = backend.complete(requests)
    assert [c.tool_calls[0].arguments["t"] for c in out] == ["aa", "bbbb", "c"]
    assert [c.usage.input_tokens for c in out] == [2, 4, 1]
    assert all(c.usage.output_tokens == 3 and c.raw == {"token_ids": [1, 2, 3]} for c in out)
    assert [(c["n"], c["tools"]) for c in calls] == [(2, None), (1, tools)]
    assert calls[0]["template"] == {"enable_thinking": False}
    assert calls[0]["params"][0].kwargs["seed"] == 1
    assert calls[1]["params"][0].kwargs == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 512,
                                            "seed": None, "stop": ["X"], "top_k": 5}
    assert backend.describe()["engine_kwargs"] == {"gpu_memory_utilization": 0.5}


BAD_SETTINGS = {  # the fuzzers' configs: each refused at construction, before anything loads
    "greedy_memo=-1": ({"greedy_memo": -1}, "greedy_memo must be an integer >= 0"),
    "greedy_memo='x'": ({"greedy_memo": "x"}, "greedy_memo must be an integer >= 0"),
    "batch_size='8'": ({"batch_size": "8"}, "batch_size must be an integer >= 1, not '8'"),
    "batch_size=True": ({"batch_size": True}, "batch_size must be an integer >= 1"),
    "dtype='__class__'": ({"dtype": "__class__"}, "dtype must be one of ('auto', 'float32'"),
    "device": ({"device": "gpu!"}, "device must be a torch device such as 'cpu'"),
    "adapter='tools'": ({"adapter": "tools"}, "use the 'embedded' backend with adapter='tools'"),
    "a missing folder": ({"adapter": "./runs/none"}, "adapter './runs/none' is no folder"),
    "draft='fast'": ({"draft": "fast"}, "draft must be one of ('prompt', 'none'), not 'fast'"),
    "a missing corpus": ({"draft_corpus": "./none.jsonl"},
                         "draft_corpus must be a file of answers (JSON lines) or None, not "
                         "'./none.jsonl'"),
    "two at once": ({"view": "big", "cache": "x"}, "view must be one of ['compact'] or None, "
                    "not 'big'; cache must be one of ('dynamic', 'static')"),
}


@pytest.fixture
def nothing_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a tokenizer (the first thing HFBackend loads) fails the test."""
    import transformers

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("nothing may load before the settings are checked")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", refuse)


@pytest.mark.parametrize("case", BAD_SETTINGS)
def test_bad_settings_are_refused_before_anything_loads(case: str, tiny_lm_dir: Path,
                                                       nothing_loads: None) -> None:
    settings, message = BAD_SETTINGS[case]
    with pytest.raises(ValueError, match=re.escape(message)):
        HFBackend(str(tiny_lm_dir), **settings)


@pytest.mark.parametrize(("text", "message"), [('"ok"\n{"a": 1}\n', ":2: an answer must be a "
                                                                     "JSON string, not dict"),
                                              ('"ok"\n"cut', ":2: not JSON")])
def test_a_bad_draft_corpus_is_refused_before_anything_loads(
        text: str, message: str, tiny_lm_dir: Path, tmp_path: Path, nothing_loads: None) -> None:
    corpus = tmp_path / "answers.jsonl"
    corpus.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{corpus}{message}")):
        HFBackend(str(tiny_lm_dir), draft_corpus=str(corpus))


def test_a_hub_name_with_the_hub_off_is_refused_before_any_attempt(
        monkeypatch: pytest.MonkeyPatch, nothing_loads: None) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="'org/no-model' is no folder, and the hub is off"):
        HFBackend("org/no-model")
