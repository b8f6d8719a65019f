"""Ragged batch decoding for the in-process backend: no compute spent on padding.

``generate`` on a left-padded batch runs every row over the longest prompt and keeps decoding
finished rows until the longest answer ends. On a CPU both are the main cost of a vector of
simulated envs (prompts of 150–800 tokens, answers of 60–500). Here each prompt is prefilled
alone at its own length, the rows' caches are joined (left-padded, masked) for one batched
decode in a cache that grows in place (:mod:`~agentworld_envs.backends.growing_cache`), and a
row leaves the batch when it ends. Greedy tokens are those of ``generate``;
sampled rows draw from their own generators exactly as there. With a
:class:`~agentworld_envs.backends.prefix_cache.PrefixCache`, a prompt is prefilled only from
where it parts from the longest kept prompt it starts with, and is kept in turn.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from agentworld_envs.backends.prefix_cache import PrefixCache

__all__ = ["ragged_decoder", "Prefilled", "RaggedDecoder"]


class Prefilled(NamedTuple):
    """A batch after its prefill."""

    cache: Any
    """The rows' caches joined, left-padded."""
    mask: Any
    """Its attention mask (left padding masked)."""
    positions: Any
    """Each row's next position."""
    scores: Any
    """Each row's next-token scores."""
    reused: list[int]
    """Prompt tokens each row took from the prefix cache."""


def ragged_decoder(torch: Any, model: Any, prefixes: PrefixCache | None = None
                   ) -> RaggedDecoder | None:
    """A decoder for ``model`` (prefilling from ``prefixes`` when given), or None when its
    cache is not plain per-layer keys and values (sliding-window, hybrid or recurrent layers),
    which ``generate`` must handle."""
    from transformers import DynamicCache

    from agentworld_envs.backends.growing_cache import GrowingCache

    with torch.inference_mode():
        probe = model(input_ids=torch.zeros((1, 2), dtype=torch.long, device=model.device),
                      use_cache=True)
    cache = _cache_of(probe)
    layers = getattr(cache, "layers", None)
    if not isinstance(cache, DynamicCache) or not layers or any(
            type(layer).__name__ != "DynamicLayer" for layer in layers):
        return None
    keyword = "cache" if "cache" in inspect.signature(model.forward).parameters else (
        "past_key_values")
    return RaggedDecoder(torch, model, DynamicCache, GrowingCache.joined, keyword, prefixes)


def _cache_of(output: Any) -> Any:
    return getattr(output, "cache", None) or output.past_key_values


class RaggedDecoder:
    """Decodes token-id prompts of different lengths in one batch (see the module docstring)."""

    def __init__(self, torch: Any, model: Any, cache_type: type, joined: Callable[..., Any],
                 cache_keyword: str, prefixes: PrefixCache | None = None) -> None:
        self._torch = torch
        self._model = model
        self._cache_type = cache_type
        self._joined = joined
        self._cache_keyword = cache_keyword
        self.prefixes = prefixes

    def decode(self, prompts: Sequence[list[int]], max_new_tokens: int, eos_ids: set[int],
               pick: Callable[[list[int], Any], Any]) -> list[list[int]]:
        """New tokens for each prompt, up to and including its first end token.

        ``pick(rows, scores)`` turns the next-token scores of the still-running ``rows``
        (their positions in ``prompts``) into their next tokens.
        """
        with self._torch.inference_mode():
            cache, mask, positions, scores, _ = self.prefill(prompts)
            return self._loop(cache, mask, positions, scores, max_new_tokens, eos_ids, pick)

    def prefill(self, prompts: Sequence[list[int]]) -> Prefilled:
        """Each prompt run alone at its own length (from its kept prefix), the caches joined.
        Call under ``inference_mode``."""
        torch = self._torch
        device = self._model.device
        longest = max(len(p) for p in prompts)
        # every lookup before any prompt is kept, so no row's prefix is dropped for another's
        kept = [self.prefixes.longest(p) if self.prefixes else (0, None) for p in prompts]
        rows, last = [], []
        for prompt, (reused, past) in zip(prompts, kept, strict=True):
            output = self._model(input_ids=torch.tensor([prompt[reused:]], device=device),
                                 use_cache=True, logits_to_keep=1,
                                 **self._past(reused, past))
            layers = [(layer.keys, layer.values) for layer in _cache_of(output).layers]
            if self.prefixes:
                self.prefixes.put(prompt, layers)
            rows.append(layers)
            last.append(output.logits[0, -1])
        cache = self._joined(rows)
        mask = torch.zeros((len(prompts), longest), dtype=torch.long, device=device)
        for row, prompt in enumerate(prompts):
            mask[row, longest - len(prompt):] = 1
        positions = torch.tensor([len(p) for p in prompts], device=device)
        return Prefilled(cache, mask, positions, torch.stack(last), [n for n, _ in kept])

    def _past(self, reused: int, layers: Any) -> dict[str, Any]:
        """The model's cache argument holding the first ``reused`` positions of a kept
        prompt's ``layers``; none when nothing is reused."""
        if not reused:
            return {}
        cache = self._cache_type()
        for index, (keys, values) in enumerate(layers):
            cache.update(keys[..., :reused, :], values[..., :reused, :], index)
        return {self._cache_keyword: cache}

    def forward(self, tokens: Any, mask: Any, positions: Any, cache: Any) -> Any:
        """The scores of ``tokens`` (rows by columns) at ``positions`` (the same shape),
        appended to ``cache``, whose columns and the new ones ``mask`` covers."""
        return self._model(input_ids=tokens, attention_mask=mask, position_ids=positions,
                           use_cache=True, **{self._cache_keyword: cache}).logits

    def _loop(self, cache: Any, mask: Any, positions: Any, scores: Any, max_new_tokens: int,
              eos_ids: set[int], pick: Callable[[list[int], Any], Any]) -> list[list[int]]:
        torch = self._torch
        rows = list(range(len(positions)))
        new: list[list[int]] = [[] for _ in rows]
        for _ in range(max_new_tokens):
            tokens = pick(rows, scores)
            running = []
            for slot, (row, token) in enumerate(zip(rows, tokens.tolist(), strict=True)):
                new[row].append(token)
                if token not in eos_ids and len(new[row]) < max_new_tokens:
                    running.append(slot)
            if not running:
                break
            if len(running) < len(rows):
                keep = torch.tensor(running, device=mask.device)
                cache.batch_select_indices(keep)
                mask, positions, tokens = mask[keep], positions[keep], tokens[keep]
                rows = [rows[slot] for slot in running]
            mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
            scores = self.forward(tokens[:, None], mask, positions[:, None], cache)[:, -1]
            positions = positions + 1
        return new
