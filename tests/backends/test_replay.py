"""Request keys, the JSONL request cache, and record/replay."""

from __future__ import annotations

import dataclasses
import json
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import (
    Backend,
    BackendError,
    ChatRequest,
    Completion,
    SamplingParams,
    Usage,
    make_backend,
)
from agentworld_envs.backends.replay import (
    RecordingBackend,
    ReplayBackend,
    ReplayedWarning,
    RequestCache,
    completion_from_dict,
    completion_to_dict,
    legacy_request_key,
    request_key,
)
from agentworld_envs.protocol.chat import MessageLog
from agentworld_envs.protocol.tool_calls import ToolCall


def ask(text: str, **sampling: Any) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": text}], sampling=SamplingParams(**sampling))


def rich_completion(text: str = "done") -> Completion:
    return Completion(
        text=text,
        tool_calls=[ToolCall("search", {"q": "ünïcode", "n": [1, 2.5, None]}, call_id="c1")],
        finish_reason="tool_calls",
        usage=Usage(input_tokens=12, output_tokens=5),
        latency_s=0.1234567890123,
        raw={"id": "x", "choices": [{"message": {"content": text}}], "nested": {"a": [True]}},
    )


class CountingBackend(Backend):
    """Answers with a counter, so every fresh completion differs."""

    name = "counting"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": "counter-1"}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls.append(len(requests))
        start = sum(self.calls) - len(requests)
        return [
            Completion(
                text=f"answer {start + i} to {r.messages[-1]['content']}",
                tool_calls=[ToolCall("echo", {"i": start + i})],
                usage=Usage(len(r.messages[-1]["content"]), 2),
                latency_s=0.5 + i / 3,
                raw={"i": start + i},
            )
            for i, r in enumerate(requests)
        ]


def test_request_key_is_canonical_and_sensitive() -> None:
    base = ask("hi", temperature=0.0)
    same = ChatRequest([{"content": "hi", "role": "user"}])
    assert request_key(base, "m") == request_key(same, "m")
    assert len(request_key(base, "m")) == 64
    variants = [
        request_key(base, "other-model"),
        request_key(ask("hi!"), "m"),
        request_key(ask("hi", temperature=0.5), "m"),
        request_key(ask("hi", temperature=0.5, seed=1), "m"),
        request_key(ChatRequest(base.messages, tools=[{"name": "t"}]), "m"),
    ]
    assert len({request_key(base, "m"), *variants}) == 6
    assert request_key(ask("hi", temperature=0.0, seed=7), "m") == request_key(base, "m")


def test_completion_round_trips_exactly() -> None:
    completion = rich_completion()
    on_disk = json.loads(json.dumps(completion_to_dict(completion)))
    assert completion_from_dict(on_disk) == completion
    bare = Completion(text="")
    assert completion_from_dict(completion_to_dict(bare)) == bare


def test_cache_appends_lines_and_reloads(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.jsonl"
    cache = RequestCache(path)
    cache.put("k1", rich_completion("one"))
    cache.put("k2", rich_completion("two"))
    cache.put("k1", rich_completion("one again"))
    cache.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["key"] for line in lines] == ["k1", "k2", "k1"]
    reloaded = RequestCache(path)
    assert len(reloaded) == 2 and "k2" in reloaded and "k3" not in reloaded
    assert reloaded.get("k1") == rich_completion("one again")
    assert reloaded.get("k3") is None


def test_truncated_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    cache = RequestCache(path)
    cache.put("good", rich_completion("kept"))
    cache.put("cut", rich_completion("lost"))
    cache.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 25])  # a crash in the middle of the last write
    with pytest.warns(RuntimeWarning, match=r"cache.jsonl:2"):
        damaged = RequestCache(path)
    assert damaged.get("good") == rich_completion("kept") and "cut" not in damaged
    damaged.put("after", rich_completion("new"))  # must not glue onto the broken line
    damaged.close()
    with pytest.warns(RuntimeWarning):
        again = RequestCache(path)
    assert again.get("after") == rich_completion("new") and len(again) == 2


def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    writers = [RequestCache(path), RequestCache(path)]
    big = "x" * 20_000

    def write(cache: RequestCache, who: int) -> None:
        for i in range(40):
            cache.put(f"{who}-{i}", Completion(text=f"{big}{who}-{i}"))

    threads = [threading.Thread(target=write, args=(c, n)) for n, c in enumerate(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for cache in writers:
        cache.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        merged = RequestCache(path)
    assert len(merged) == 80
    assert merged.get("1-39").text.endswith("1-39")


def test_record_then_replay_gives_identical_completions(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    inner = CountingBackend()
    requests = [ask("a"), ask("b", temperature=0.7, seed=3), ask("a")]
    with RecordingBackend(inner, path) as recorder:
        first = recorder.complete(requests)
        second = recorder.complete(requests + [ask("c")])
        assert recorder.describe()["inner"] == inner.describe()
    assert inner.calls == [2, 1]  # duplicates share one call; hits are not re-sent
    assert first[0] == first[2] and first[0] != first[1]
    assert second[:3] == first
    replay = make_backend({"name": "replay", "path": str(path), "model": "counter-1"})
    assert isinstance(replay, ReplayBackend)
    assert replay.complete(requests + [ask("c")]) == second
    replay.close()


def test_a_rerun_on_the_same_recording_says_once_that_it_replays(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReplayedWarning)  # its own answers are no replay
        with RecordingBackend(CountingBackend(), path) as first:
            first.complete([ask("a")])
            first.complete([ask("a"), ask("b")])
    inner = CountingBackend()
    with warnings.catch_warnings(record=True) as caught, RecordingBackend(inner, path) as rerun:
        warnings.simplefilter("always")
        rerun.complete([ask("c")])  # a miss: asked, nothing replayed yet
        rerun.complete([ask("a"), ask("c")])
        rerun.complete([ask("b")])
    replayed = [str(w.message) for w in caught if w.category is ReplayedWarning]
    assert len(replayed) == 1 and inner.calls == [1]
    assert replayed[0].startswith(f"{path} already holds 2 recorded answer(s): 1 of these 2 ")
    assert "'counter-1'" in replayed[0] and "new record_path" in replayed[0]


def test_an_env_rerun_with_the_same_record_path_warns_once(tmp_path: Path) -> None:
    path = str(tmp_path / "calls.jsonl")
    search = '{"name": "web_search", "arguments": {"query": "Velmora"}}'
    runs = []
    for _ in range(2):
        env = gym.make("AgentWorld/Search-v0", backend="scripted", record_path=path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env.reset(seed=0, options={"scenario": "search-velmora-founder"})
            observations = [env.step(search)[0] for _ in range(3)]
        env.close()
        runs.append((observations, [w for w in caught if w.category is ReplayedWarning]))
    (first, none), (again, once) = runs
    assert (len(none), len(once)) == (0, 1) and again == first


def test_replay_miss_names_the_key_and_last_user_message(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    with RecordingBackend(CountingBackend(), path) as recorder:
        recorder.complete([ask("recorded")])
    long_question = "what is the status of order " + "9" * 500
    request = ChatRequest([
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": long_question},
    ])
    with ReplayBackend(path, model="counter-1") as replay:
        with pytest.raises(BackendError) as info:
            replay.complete([ask("recorded"), request])
    message = str(info.value)
    assert request_key(request, {"model": "counter-1", "name": "counting"}) in message
    assert "what is the status of order 999" in message and "9" * 400 not in message
    with ReplayBackend(path, model="another-model") as wrong_model:
        with pytest.raises(BackendError, match="recorded"):
            wrong_model.complete([ask("recorded")])


def test_record_and_replay_a_real_model(tmp_path: Path, tiny_lm_dir: Path) -> None:
    path = tmp_path / "hf.jsonl"
    sampling = SamplingParams(max_tokens=6, extra={"min_new_tokens": 6})
    requests = [ChatRequest([{"role": "user", "content": t}], sampling=sampling)
                for t in ("hi", "lookup order 42")]
    with RecordingBackend({"name": "hf", "model": str(tiny_lm_dir)}, path) as recorder:
        recorded = recorder.complete(requests)
    with ReplayBackend(path, model=str(tiny_lm_dir)) as replay:
        assert replay.complete(requests) == recorded
    assert all(c.usage.output_tokens == 6 for c in recorded)


def test_with_seed_is_replace_with_another_seed() -> None:
    """The per-step copy equals ``dataclasses.replace``, keeps the original and stays frozen."""
    sampling = SamplingParams(temperature=0.7, top_k=5, max_tokens=9, seed=1, stop=("x",),
                              extra={"min_new_tokens": 2})
    copy = sampling.with_seed(42)
    assert copy == dataclasses.replace(sampling, seed=42) and sampling.seed == 1
    assert request_key(ChatRequest([], sampling=copy), "m") == request_key(
        ChatRequest([], sampling=dataclasses.replace(sampling, seed=42)), "m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        copy.seed = 3  # type: ignore[misc]


def test_a_live_backend_is_shared_not_copied_by_an_env_spec() -> None:
    """``gym.make`` wrappers deep-copy the make arguments into ``spec``; a live backend (for
    ``hf``, a loaded model) must come through as itself."""
    import copy

    from agentworld_envs.backends.scripted import ScriptedBackend

    backend = ScriptedBackend()
    assert copy.deepcopy({"backend": backend})["backend"] is backend
    env = gym.make("AgentWorld/Search-v0", backend=backend)
    assert env.spec is not None and env.spec.kwargs["backend"] is backend
    env.close()


def _greedy_and_sampled() -> list[ChatRequest]:
    return [ChatRequest([{"role": "system", "content": "You simulate."},
                         {"role": "user", "content": "ls ünï"}],
                        tools=[{"type": "function", "function": {"name": "t"}}],
                        sampling=SamplingParams(temperature=0.7, seed=3)),
            ChatRequest([{"role": "user", "content": "hi"}], sampling=SamplingParams(seed=9))]


def test_the_legacy_key_is_the_one_old_caches_were_written_with() -> None:
    """Pinned values of the key before version 2 (the whole request's canonical JSON)."""
    sampled, greedy = _greedy_and_sampled()
    assert legacy_request_key(sampled, "m") == (
        "0b05c2f2a24660c7d10982a1aa7386330f01424ffe0593ee5361d9d1e9db4738")
    assert legacy_request_key(greedy, "m") == (
        "4b6649bff97f077ebeea9a10a6c327c8036110e47fd0fa9fc8c80d77197ecce4")
    assert request_key(sampled, "m") != legacy_request_key(sampled, "m")


def test_an_old_cache_still_replays_and_grows_with_new_keys(tmp_path: Path) -> None:
    """Lines without "v" (the whole request's JSON) and of "v": 2 (the model's name) replay
    as they did; what is recorded now goes under "v": 3, the model's identity."""
    path = tmp_path / "old.jsonl"
    old = [*_greedy_and_sampled(), ask("of v2")]
    lines = [{"key": legacy_request_key(r, "counter-1"),
              "completion": completion_to_dict(rich_completion(t))}
             for r, t in zip(old[:2], ("one", "two"), strict=True)]
    lines.append({"key": request_key(old[2], "counter-1"), "v": 2,
                  "completion": completion_to_dict(rich_completion("three"))})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with ReplayBackend(path, model="counter-1") as replay:
        assert [c.text for c in replay.complete(old)] == ["one", "two", "three"]
    inner = CountingBackend()
    with RecordingBackend(inner, path) as recorder:
        texts = [c.text for c in recorder.complete([*old, ask("new")])]
    assert texts[:3] == ["one", "two", "three"] and inner.calls == [1]  # old hits: not re-sent
    last = json.loads(path.read_text().splitlines()[-1])
    identity = {"model": "counter-1", "name": "counting"}
    assert last["key"] == request_key(ask("new"), identity) and last["v"] == 3
    assert last["model"] == identity
    with ReplayBackend(path, model="counter-1") as replay:
        assert [c.text for c in replay.complete([*old, ask("new")])] == texts


class _Unreadable(list):
    """A message list that fails the test if anything reads it."""

    def __iter__(self) -> Any:
        raise AssertionError("the conversation was read")

    def __getitem__(self, index: Any) -> Any:
        raise AssertionError("the conversation was read")


def test_keying_a_late_request_does_not_read_the_conversation(tmp_path: Path) -> None:
    """A request from a MessageLog is keyed by its running digest: at turn 300 the key costs
    what it does at turn 1 (an operation count, not a timing), recording and replaying."""
    log = MessageLog([{"role": "system", "content": "You simulate a shell."}])
    for turn in range(300):
        log.append({"role": "user", "content": f"ls /tmp/{turn}"})
        log.append({"role": "assistant", "content": f"file{turn}.txt"})
    request = log.request({"role": "user", "content": "pwd"})
    key = request_key(request, "counter-1")
    assert key == request_key(ChatRequest(list(request.messages)), "counter-1")
    path = tmp_path / "rec.jsonl"
    with RecordingBackend(CountingBackend(), path) as recorder:
        recorded = recorder.complete([request])  # the miss: the inner backend reads it
    request.messages = _Unreadable(request.messages)
    assert request_key(request, "counter-1") == key
    with RecordingBackend(CountingBackend(), path) as recorder:
        assert recorder.complete([request]) == recorded
    with ReplayBackend(path, model="counter-1") as replay:
        assert replay.complete([request]) == recorded


class DescribedBackend(Backend):
    """Answers with its label; describes itself as the embedded model with ``settings``."""

    def __init__(self, label: str, **settings: Any) -> None:
        self.label, self.settings, self.asked = label, settings, 0

    def describe(self) -> dict[str, Any]:
        return {"name": "hf", "model": "smollm2", "view": "compact", **self.settings}

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.asked += len(requests)
        return [Completion(f"{self.label}: {r.messages[-1]['content']}") for r in requests]


EXP1 = {"adapter": "runs/exp1/adapter", "dtype": "float32"}


@pytest.mark.parametrize(("other", "shared"), [
    ({"adapter": "runs/exp2/adapter"}, False),  # the same folder name, another adapter
    ({"dtype": "bfloat16"}, False),
    ({"enable_thinking": False}, False),
    ({"name": "openai"}, False),
    ({"base_urls": ["http://b:8000/v1"]}, False),
    ({"native_tools": True}, False),
    ({"batch_size": 16, "draft": "none", "draft_corpus": "a.jsonl", "prefix_cache": 4096,
      "greedy_memo": 64, "device": "cuda:0", "concurrency": 4}, True),  # speed alone
])
def test_models_that_answer_differently_never_share_recorded_answers(
        other: dict[str, Any], shared: bool, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "calls.jsonl"
    with RecordingBackend(DescribedBackend("exp1", **EXP1), path) as first:
        first.complete([ask("ls")])
    second = DescribedBackend("exp2", **{**EXP1, **other})
    with warnings.catch_warnings(record=True), RecordingBackend(second, path) as recorder:
        warnings.simplefilter("always")
        (answer,) = recorder.complete([ask("ls")])
    assert (answer.text, second.asked) == (("exp1: ls", 0) if shared else ("exp2: ls", 1))


def test_a_replay_picks_the_recorded_model_its_settings_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "calls.jsonl"
    for exp in ("exp1", "exp2"):
        with RecordingBackend(DescribedBackend(exp, adapter=f"runs/{exp}/adapter"),
                              path) as recorder:
            recorder.complete([ask("ls")])
    assert json.loads(path.read_text().splitlines()[1])["model"]["adapter"] == str(
        tmp_path / "runs" / "exp2" / "adapter")
    with pytest.raises(ValueError, match="holds the answers of 2 models that"):
        ReplayBackend(path, model="smollm2 adapter=adapter view=compact")
    with ReplayBackend(path, model={"model": "smollm2",
                                    "adapter": "runs/exp2/adapter"}) as replay:
        assert replay.complete([ask("ls")])[0].text == "exp2: ls"


def test_a_replay_faults_only_the_requests_never_recorded(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with RecordingBackend(CountingBackend(), path) as recorder:
        recorded = recorder.complete([ask("a"), ask("b")])
    with ReplayBackend(path, model="counter-1") as replay:
        outcomes = replay.complete_each([ask("a"), ask("never recorded"), ask("b")])
    assert [outcomes[0], outcomes[2]] == recorded
    assert isinstance(outcomes[1], BackendError) and "never recorded" in str(outcomes[1])


def test_a_replay_naming_no_recorded_model_says_which_the_file_holds(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    with RecordingBackend(CountingBackend(), path) as recorder:
        recorder.complete([ask("recorded")])
    hint = ("; the file holds recordings for model(s) 'counter-1': "
            'pass "model": "counter-1"; last user message')
    for model in ("", "another-model"):
        with ReplayBackend(path, model=model) as wrong_model:
            answer, = wrong_model.complete_each([ask("recorded")])
        assert isinstance(answer, BackendError) and f"(model {model!r}){hint}" in str(answer)
    with ReplayBackend(path, model="counter-1") as right_model:  # a miss of the right model
        answer, = right_model.complete_each([ask("never asked")])
        assert right_model.complete([ask("recorded")])[0].text == "answer 0 to recorded"
    assert isinstance(answer, BackendError) and "the file holds" not in str(answer)
