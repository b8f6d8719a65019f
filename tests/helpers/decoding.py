"""Token-id prompts and plain greedy decoding, the reference of the decoders' tests."""

from __future__ import annotations

import random

from agentworld_envs.backends.ragged import RaggedDecoder


def greedy(ragged: RaggedDecoder, prompts: list[list[int]], max_new_tokens: int,
           eos_ids: set[int] = frozenset()) -> list[list[int]]:
    """Plain greedy decoding, one token per forward pass (the reference)."""
    return ragged.decode(prompts, max_new_tokens, set(eos_ids),
                         lambda rows, scores: scores.float().argmax(dim=-1))


VOCAB = 400
"""Token ids drawn here stay below this (the tiny model has about 500)."""


def token_prompts(seed: int, count: int) -> list[list[int]]:
    """Prompts of 1 to 300 tokens: random ones, ones repeating a phrase (so n-grams match),
    and runs of distinct tokens (so none does)."""
    rng = random.Random(seed)
    prompts = []
    for i in range(count):
        length = rng.choice([1, 3, 12, 40, 120, 300])
        if i % 3 == 0:
            prompts.append([rng.randrange(3, VOCAB) for _ in range(length)])
        elif i % 3 == 1:
            phrase = [rng.randrange(3, VOCAB) for _ in range(rng.randint(2, 9))]
            prompts.append((phrase * (length // len(phrase) + 1))[:length])
        else:
            start = rng.randrange(3, VOCAB - length)
            prompts.append(list(range(start, start + length)))
    return prompts
