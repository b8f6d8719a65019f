"""Drafted (prompt-lookup) greedy decoding gives the tokens of plain greedy decoding, on the
tiny model: the decoder against the ragged one, and the ``hf`` backend's ``draft`` setting."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from agentworld_envs.backends import ChatRequest, SamplingParams
from agentworld_envs.backends.drafting import (
    CORPUS_NGRAM,
    DraftCorpus,
    DraftedDecoder,
    PromptLookup,
    draft_length,
)
from agentworld_envs.backends.hf import HFBackend
from agentworld_envs.backends.ragged import RaggedDecoder
from tests.helpers.decoding import VOCAB, greedy, token_prompts


@pytest.fixture
def ragged(tiny_ragged: RaggedDecoder) -> RaggedDecoder:
    return tiny_ragged


def drafted(ragged: RaggedDecoder, **kwargs: Any) -> DraftedDecoder:
    import torch

    return DraftedDecoder(torch, ragged, pad_id=0, **kwargs)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_drafted_tokens_are_the_greedy_tokens(ragged: RaggedDecoder, seed: int) -> None:
    prompts = token_prompts(seed, 18)  # long and short prompts in one batch
    reference = greedy(ragged, prompts, 30)
    decoder = drafted(ragged)
    first, stats = decoder.decode(prompts, 30, set())
    assert first == reference
    assert sum(s.accepted for s in stats) > 0  # drafts were kept, several tokens a pass
    again, again_stats = decoder.decode(prompts, 30, set())  # drafts from the last answers
    assert again == reference
    assert sum(s.forwards for s in again_stats) < sum(s.forwards for s in stats)
    for tokens, row in zip(first, stats, strict=True):
        assert row.forwards == len(tokens) - 1 - row.accepted  # the first token is the prefill's
        assert row.accepted <= row.proposed


def test_rows_that_end_early_and_an_end_inside_an_accepted_draft(
        ragged: RaggedDecoder) -> None:
    prompts = token_prompts(3, 12)
    full = greedy(ragged, prompts, 24)
    end = full[1][5]  # the 6th token of the second answer ends answers
    reference = greedy(ragged, prompts, 24, {end})
    assert any(len(row) < 24 for row in reference) and any(len(row) == 24 for row in reference)
    # each row's hint is its own full answer: the end token stands inside the drafts
    out, stats = drafted(ragged).decode(prompts, 24, {end}, hints=[p[-3:] + r for p, r in
                                                                   zip(prompts, full,
                                                                       strict=True)])
    assert out == reference
    # the second row's whole answer after its first token was one kept draft, ending at `end`
    assert out[1][-1] == end and (stats[1].forwards, stats[1].accepted) == (1, len(out[1]) - 1)


@pytest.mark.parametrize("most", [1, 2, 3, 5, 9, 10])
def test_the_answer_stops_at_max_new_tokens(ragged: RaggedDecoder, most: int) -> None:
    prompts = token_prompts(4, 6)
    full = greedy(ragged, prompts, 12)
    hints = [p[-3:] + r for p, r in zip(prompts, full, strict=True)]  # drafts run past the end
    out, _ = drafted(ragged).decode(prompts, most, set(), hints)
    assert out == [row[:most] for row in full]


def test_a_draft_that_disagrees_at_its_first_token_is_dropped(ragged: RaggedDecoder) -> None:
    prompt = list(range(100, 140))  # distinct tokens: only the hint matches
    (answer,) = greedy(ragged, [prompt], 3)
    wrong = next(t for t in range(3, VOCAB) if t not in answer and t not in prompt)
    hint = prompt[-2:] + answer[:1] + [wrong]
    (out,), (stats,) = drafted(ragged).decode([prompt], 3, set(), [hint])
    assert out == answer
    assert (stats.forwards, stats.proposed, stats.accepted) == (2, 1, 0)


def test_a_draft_that_disagrees_midway_keeps_its_agreeing_prefix(ragged: RaggedDecoder) -> None:
    prompt = list(range(200, 260))
    (answer,) = greedy(ragged, [prompt], 16)
    wrong = next(t for t in range(3, VOCAB) if t not in answer and t not in prompt)
    hint = prompt[-2:] + answer[:5] + [wrong] + answer[6:]
    (out,), (stats,) = drafted(ragged).decode([prompt], 16, set(), [hint])
    assert out == answer
    assert stats.accepted >= 4 and stats.accepted < stats.proposed


def test_prompt_lookup() -> None:
    assert PromptLookup([1, 2, 3, 4]).propose(4) == []  # nothing occurs twice
    assert PromptLookup([1, 2, 3, 1]).propose(0) == []
    assert PromptLookup([1, 2, 3, 1]).propose(9) == [2, 3, 1]  # up to the row's end
    # the longest matching tail wins: [2, 3] -> 4, not [3] -> 9
    assert PromptLookup([3, 9, 2, 3, 4, 2, 3]).propose(1) == [4]
    # at the same length the hint comes first, then the row's own tokens, then recent answers
    assert PromptLookup([5, 6, 7, 5], hint=[5, 8], recent=[5, 9]).propose(1) == [8]
    assert PromptLookup([5, 6, 7, 5], recent=[5, 9]).propose(1) == [6]
    assert PromptLookup([1, 2, 5], recent=[5, 9]).propose(1) == [9]
    # a longer match in the row beats a shorter one in the hint
    assert PromptLookup([4, 5, 6, 4, 5], hint=[5, 8]).propose(1) == [6]
    # copying goes on after the last match (a fresh row takes the first), else at the latest
    lookup = PromptLookup([2], hint=[1, 8, 2, 1, 9])
    assert lookup.propose(1) == [1]
    lookup.extend([7, 1])
    assert lookup.tokens == [2, 7, 1]
    assert lookup.propose(1) == [9]
    assert PromptLookup([7, 1], hint=[1, 8, 2, 1, 9]).propose(1) == [8]
    lookup = PromptLookup([3], hint=[4, 1, 4, 5, 3, 2])
    assert lookup.propose(1) == [2]
    lookup.extend([9, 4])
    assert lookup.propose(1) == [5]


def test_a_corpus_drafts_only_where_the_rows_own_sources_match_weakly() -> None:
    corpus = DraftCorpus([[1, 2, 3, 4, 5, 6, 7, 8], [20, 2, 3, 4, 5, 6, 9]], end=0)
    assert CORPUS_NGRAM == 6
    # no match elsewhere: what followed the row's last 6 tokens in the corpus
    assert PromptLookup([1, 2, 3, 4, 5, 6], corpus=corpus).propose(3) == [7, 8, 0]
    assert PromptLookup([20, 2, 3, 4, 5, 6], corpus=corpus).propose(3) == [9, 0]  # its end
    # a model with no end token: answers follow each other
    assert PromptLookup([20, 2, 3, 4, 5, 6], corpus=DraftCorpus(
        [[20, 2, 3, 4, 5, 6, 9], [1]], end=None)).propose(3) == [9, 1]
    # fewer than 6 matching tokens find nothing there
    assert PromptLookup([50, 3, 4, 5, 6], corpus=corpus).propose(3) == []
    assert PromptLookup([50, 50, 3, 4, 5, 6], corpus=corpus).propose(3) == []
    # a weak match in the row loses to the corpus's longer one ...
    assert PromptLookup([6, 40, 1, 2, 3, 4, 5, 6], corpus=corpus).propose(2) == [7, 8]
    # ... a strong one (running back as far as the corpus's windows) keeps its place
    assert PromptLookup([1, 2, 3, 4, 5, 6, 41, 1, 2, 3, 4, 5, 6],
                        corpus=corpus).propose(2) == [41, 1]
    # copying from the corpus goes on where it left off, in each row apart
    lookup = PromptLookup([1, 2, 3, 4, 5, 6], corpus=corpus)
    other = PromptLookup([20, 2, 3, 4, 5, 6], corpus=corpus)
    assert (lookup.propose(1), other.propose(1)) == ([7], [9])
    lookup.extend([7])
    assert lookup.propose(2) == [8, 0]


def test_drafts_from_a_corpus_keep_the_greedy_tokens(ragged: RaggedDecoder) -> None:
    import numpy as np

    prompts = [list(range(100 + 40 * i, 140 + 40 * i)) for i in range(4)]  # no repeats
    reference = greedy(ragged, prompts, 24)
    plain_forwards = sum(s.forwards for s in drafted(ragged).decode(prompts, 24, set())[1])
    # answers the model was trained on: the right ones, and some that go wrong midway
    rng = np.random.default_rng(0)
    wrong = [r[:10] + rng.integers(3, VOCAB, 14).tolist() for r in reference]
    for answers in (reference, wrong, wrong + reference):
        out, stats = drafted(ragged, corpus=DraftCorpus(answers, end=0)).decode(prompts, 24,
                                                                               set())
        assert out == reference
        if answers is not wrong:
            assert sum(s.forwards for s in stats) < plain_forwards


# The ``hf`` backend's setting, on chats.

CHATS = [
    [{"role": "user", "content": "hi"}],
    [{"role": "system", "content": "You are a careful agent that checks every constraint."},
     {"role": "user", "content": "search the weather in the city and then submit the answer "
                                 "with the record id, the record id and the city"}],
    [{"role": "user", "content": "lookup order 42 status " * 12}],
    [{"role": "user", "content": "price"}],
]


@pytest.fixture(scope="module")
def plain(tiny_lm_dir: Path) -> HFBackend:
    return HFBackend(str(tiny_lm_dir), draft="none")


def requests(max_tokens: int = 20) -> list[ChatRequest]:
    return [ChatRequest(chat, sampling=SamplingParams(max_tokens=max_tokens)) for chat in CHATS]


def test_hf_drafted_answers_are_the_plain_answers(tiny_lm_dir: Path, plain: HFBackend) -> None:
    backend = HFBackend(str(tiny_lm_dir))
    assert backend.draft == "prompt"  # the default
    reference = plain.complete(requests())
    for out in (backend.complete(requests()), [backend.complete([r])[0] for r in requests()]):
        assert [c.raw["token_ids"] for c in out] == [c.raw["token_ids"] for c in reference]
        assert [(c.text, c.finish_reason, c.usage) for c in out] == [
            (c.text, c.finish_reason, c.usage) for c in reference]
        assert all(set(c.raw["draft"]) == {"forwards", "proposed", "accepted", "reused"}
                   for c in out)
    assert all("draft" not in c.raw for c in reference)


def test_a_hint_changes_the_speed_not_the_answer(tiny_lm_dir: Path, plain: HFBackend) -> None:
    reference = plain.complete(requests())
    # a counterpart that says what the model will say
    hinted_requests = [dataclasses.replace(r, draft_hint=c.text)
                       for r, c in zip(requests(), reference, strict=True)]
    assert hinted_requests[0].to_dict() == requests()[0].to_dict()  # never recorded or sent
    without = HFBackend(str(tiny_lm_dir)).complete(requests())
    hinted = HFBackend(str(tiny_lm_dir)).complete(hinted_requests)
    assert [c.raw["token_ids"] for c in hinted] == [c.raw["token_ids"] for c in reference]
    assert [c.raw["token_ids"] for c in without] == [c.raw["token_ids"] for c in reference]
    assert (sum(c.raw["draft"]["forwards"] for c in hinted)
            < sum(c.raw["draft"]["forwards"] for c in without))


def test_a_draft_corpus_changes_the_speed_not_the_answer(tiny_lm_dir: Path, plain: HFBackend,
                                                        tmp_path: Path) -> None:
    import json
    import pickle

    reference = plain.complete(requests())
    corpus = tmp_path / "answers.jsonl"  # answers the model "was trained on": its own
    corpus.write_text("".join(json.dumps(c.text) + "\n" for c in reference))
    backend = HFBackend(str(tiny_lm_dir), draft_corpus=str(corpus))
    out = backend.complete(requests())
    assert [c.raw["token_ids"] for c in out] == [c.raw["token_ids"] for c in reference]
    without = HFBackend(str(tiny_lm_dir)).complete(requests())
    assert (sum(c.raw["draft"]["forwards"] for c in out)
            < sum(c.raw["draft"]["forwards"] for c in without))
    assert backend.describe()["draft_corpus"] == str(corpus)
    assert pickle.loads(pickle.dumps(backend)).draft_corpus == str(corpus)


def test_sampled_requests_are_never_drafted(tiny_lm_dir: Path, plain: HFBackend) -> None:
    sampled = [ChatRequest(chat, sampling=SamplingParams(max_tokens=8, temperature=1.0, seed=i))
               for i, chat in enumerate(CHATS)]
    out = HFBackend(str(tiny_lm_dir)).complete(sampled)
    assert [c.raw for c in out] == [c.raw for c in plain.complete(sampled)]
    assert all("draft" not in c.raw for c in out)


def test_info_world_model_says_whether_greedy_answers_are_drafted(tiny_lm_dir: Path) -> None:
    import gymnasium as gym

    import agentworld_envs  # noqa: F401 - registers the envs

    for draft in ("prompt", "none"):
        env = gym.make("AgentWorld/Floor-v0", max_steps=2, sampling={"max_tokens": 4},
                       backend={"name": "hf", "model": str(tiny_lm_dir), "draft": draft})
        _, info = env.reset(seed=0)
        _, _, _, _, info = env.step(info["candidate_actions"][0])
        assert info["world_model"]["draft"] == draft
        env.close()


def test_of_a_tails_occurrences_the_one_matching_furthest_back_wins() -> None:
    # (2, 3, 4) follows 8 first, then 7, as the row's tail does: the second is taken
    assert PromptLookup([8, 2, 3, 4, 10, 7, 2, 3, 4, 11, 0, 7, 2, 3, 4]).propose(1) == [11]
    # the same across sources: the row's own match runs back 4 tokens, the hint's 3
    assert PromptLookup([7, 2, 3, 4, 11, 0, 7, 2, 3, 4], hint=[2, 3, 4, 99]).propose(1) == [11]
    # an equal run: the hint first, then where copying went on
    assert PromptLookup([0, 2, 3, 4, 11, 0, 2, 3, 4], hint=[0, 2, 3, 4, 99]).propose(1) == [99]
    assert PromptLookup([5, 1, 6, 1, 7, 1]).propose(1) == [6]  # a fresh row: the first


def test_after_a_missed_draft_a_weak_match_drafts_two_tokens() -> None:
    lookup = PromptLookup([1, 2, 3, 4, 5, 6, 7, 1])
    assert lookup.match(5) == ([2, 3, 4, 5, 6], 1)  # a weak match, no miss yet: uncut
    lookup.extend([9])  # the model did not write 2: the draft missed its first token
    assert lookup.missed
    lookup.extend([1])
    assert lookup.match(5) == ([2, 3], 1)  # weak again: cut
    lookup.extend([2, 3, 4])  # the cut draft was kept, then the model's 4
    assert not lookup.missed
    assert lookup.propose(5) == [5, 6, 7, 1, 9]  # a strong match (runs back 4) is never cut
    missed = PromptLookup([5, 6, 7, 8, 0, 5, 6, 7])
    missed.propose(3)
    missed.extend([1])
    missed.extend([5, 6, 7])
    assert missed.missed and missed.match(3) == ([8, 0, 5], 3)  # strong: uncut after a miss


def test_past_a_one_token_substitution_the_hint_goes_on() -> None:
    hint = [10, 11, 12, 13, 14, 15, 16]
    lookup = PromptLookup([1, 10], hint=hint)
    assert lookup.propose(3) == [11, 12, 13]
    lookup.extend([11, 99])  # kept 11, then wrote 99 where the hint has 12 (another digit)
    assert lookup.propose(3) == [13, 14, 15]  # 99 occurs nowhere: the hint goes on past it
    missed = PromptLookup([1, 10], hint=hint)
    missed.propose(3)
    missed.extend([99])  # missed the first token: no run to carry over
    assert missed.propose(3) == []
    strong = PromptLookup([10, 11, 99, 7, 7, 3, 10], hint=hint)
    assert strong.propose(3) == [11, 12, 13]  # the hint (an equal 1-token run: ties go to it)
    strong.extend([11, 99])
    assert strong.propose(2) == [7, 7]  # the row's own (10, 11, 99) is a strong match: it wins
    own = PromptLookup([5, 6, 7, 8, 9, 0, 5, 6])
    assert own.propose(2) == [7, 8]
    own.extend([7, 42])  # a substitution in a draft from the row itself: no carrying over
    assert own.propose(2) == []


def test_a_lone_row_drafts_further_than_a_batch(ragged: RaggedDecoder) -> None:
    assert [draft_length(rows) for rows in (1, 2, 3, 16)] == [24, 12, 8, 8]
    prompt = token_prompts(4, 1)[0]
    answer = greedy(ragged, [prompt], 30)[0]
    (out,), (stats,) = drafted(ragged).decode([prompt], 30, set(), [prompt[-3:] + answer])
    assert out == answer
    assert stats.forwards == 2  # 1 + 24 tokens, then 1 + the last 4 of the hint's answer
    (out,), (stats,) = drafted(ragged, pass_tokens=0).decode([prompt], 30, set(),
                                                            [prompt[-3:] + answer])
    assert out == answer and stats.forwards == 4  # 8 a pass


def test_a_match_says_how_long_a_tail_it_matched() -> None:
    lookup = PromptLookup([5, 6, 7, 8, 5, 6])
    assert lookup.match(3) == ([7, 8, 5], 2)  # (8, 5, 6) occurs nowhere before; (5, 6) does
    assert lookup.match(3)[0] == lookup.propose(3)
    assert lookup.match(0) == ([], 0)
    assert PromptLookup([1, 2, 3]).match(4) == ([], 0)  # its last token occurs nowhere before


@pytest.mark.parametrize(("env_id", "kwargs"), [("AgentWorld/Floor-v0", {}),
                                                ("AgentWorld/MCP-v0", {"scenarios": "generated"})])
def test_a_simulated_env_drafts_from_its_real_counterparts_observation(
        tiny_lm_dir: Path, tmp_path: Path, env_id: str, kwargs: dict[str, Any]) -> None:
    import gymnasium as gym

    import agentworld_envs  # noqa: F401 - registers the envs
    from agentworld_envs.world.parsing import tagged_observation

    backend = HFBackend(str(tiny_lm_dir))
    complete = backend.complete
    asked: list[ChatRequest] = []

    def spy(requests: Any) -> Any:
        asked.extend(requests)
        return complete(requests)

    backend.complete = spy  # type: ignore[method-assign]
    observations = {}
    for counterpart in (True, False):
        asked.clear()
        env = gym.make(env_id, max_steps=3, sampling={"max_tokens": 24}, backend=backend,
                       real_counterpart=counterpart, reveal_reference=counterpart,
                       record_path=str(tmp_path / f"{counterpart}.jsonl"), **kwargs)
        _, info = env.reset(seed=0)
        call = next(a for a in info["candidate_actions"] if "submit" not in a)
        seen = []
        for _ in range(2):
            observation, _, _, _, info = env.step(call)
            seen.append(observation)
            hint = asked[-1].draft_hint
            assert hint == (tagged_observation(info["real_observation"]) if counterpart
                            else None)
        env.close()
        observations[counterpart] = seen
        assert "draft_hint" not in (tmp_path / f"{counterpart}.jsonl").read_text()
    assert observations[True] == observations[False]  # the hint changed no answer
