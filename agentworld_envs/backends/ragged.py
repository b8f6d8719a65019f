"""Ragged batch decoding for the in-process backend: no compute spent on padding.

``generate`` on a left-padded batch runs every row over the longest prompt and keeps decoding
finished rows until the longest answer ends. On a CPU both are the main cost of a vector of
simulated envs (prompts of 150–800 tokens, answers of 60–500). Here each prompt is prefilled
alone at its own length, the rows' caches are joined (left-padded, masked) for one batched
decode in a cache that grows in place (:mod:`~agentworld_envs.backends.growing_cache`), and a
row leaves the batch when it ends. Greedy tokens are those of ``generate``;
sampled rows draw from their own generators exactly as there. With a
:class:`~agentworld_envs.backends.prefix_cache.PrefixCache`, a prompt is prefilled only from
where it parts from the longest kept prompt it starts with (the rests of a batch's prompts in
one forward pass), and is kept in turn.
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
    return RaggedDecoder(torch, model, GrowingCache.joined, keyword, prefixes)


def _cache_of(output: Any) -> Any:
    return getattr(output, "cache", None) or output.past_key_values


class RaggedDecoder:
    """Decodes token-id prompts of different lengths in one batch (see the module docstring)."""

    def __init__(self, torch: Any, model: Any, joined: Callable[..., Any], cache_keyword: str,
                 prefixes: PrefixCache | None = None) -> None:
        self._torch = torch
        self._model = model
        self._joined = joined
        self._cache_keyword = cache_keyword
        self.prefixes = prefixes

    def decode(self, prompts: Sequence[list[int]], max_new_tokens: int, eos_ids: set[int],
               pick: Callable[[list[int], Any], Any],
               stopped: Callable[[list[int], int], bool] | None = None,
               interrupt: Callable[[], None] | None = None) -> list[list[int]]:
        """New tokens for each prompt, up to and including its first end token (or the step
        where ``stopped(new_tokens, fresh)``, such as a
        :class:`~agentworld_envs.backends.stops.StopWatch`, says its stop string is complete).

        ``pick(rows, scores)`` turns the next-token scores of the still-running ``rows``
        (their positions in ``prompts``) into their next tokens. ``interrupt`` goes to
        :meth:`prefill`.
        """
        with self._torch.inference_mode():
            cache, mask, positions, scores, _ = self.prefill(prompts, interrupt)
            return self._loop(cache, mask, positions, scores, max_new_tokens, eos_ids, pick,
                              stopped)

    def prefill(self, prompts: Sequence[list[int]],
                interrupt: Callable[[], None] | None = None) -> Prefilled:
        """Each prompt run alone at its own length, or, for the prompts that start with a kept
        one, the rest of them in one batch; the caches joined. ``interrupt`` is called before
        each prompt run alone (it raises to abandon the call: a cancelled one). Call under
        ``inference_mode``."""
        torch = self._torch
        device = self._model.device
        longest = max(len(p) for p in prompts)
        # every lookup before any prompt is kept, so no row's prefix is dropped for another's
        kept = [self.prefixes.longest(p) if self.prefixes else (0, None) for p in prompts]
        rows: list[Any] = [None] * len(prompts)
        last: list[Any] = [None] * len(prompts)
        resumed = [row for row, (reused, _) in enumerate(kept) if reused]
        if resumed:
            for row, layers, scores in zip(resumed, *self._rests(
                    [prompts[row] for row in resumed], [kept[row] for row in resumed]),
                    strict=True):
                rows[row], last[row] = layers, scores
        for row, prompt in enumerate(prompts):
            if rows[row] is None:
                if interrupt is not None:
                    interrupt()
                output = self._model(input_ids=torch.tensor([prompt], device=device),
                                     use_cache=True, logits_to_keep=1)
                rows[row] = [(layer.keys, layer.values) for layer in _cache_of(output).layers]
                last[row] = output.logits[0, -1]
            if self.prefixes:
                self.prefixes.put(prompt, rows[row])
        cache = self._joined(rows)
        mask = torch.zeros((len(prompts), longest), dtype=torch.long, device=device)
        for row, prompt in enumerate(prompts):
            mask[row, longest - len(prompt):] = 1
        positions = torch.tensor([len(p) for p in prompts], device=device)
        return Prefilled(cache, mask, positions, torch.stack(last), [n for n, _ in kept])

    def _rests(self, prompts: Sequence[list[int]], kept: Sequence[tuple[int, Any]]
               ) -> tuple[list[Any], list[Any]]:
        """Each prompt's keys and values and last scores, running only what follows its kept
        prefix, all rows in one forward pass: the kept prefixes joined left-padded, the rests
        after them right-padded, the padding masked, so each row's own positions stay
        contiguous."""
        torch = self._torch
        device = self._model.device
        past = max(reused for reused, _ in kept)
        rests = [len(p) - reused for p, (reused, _) in zip(prompts, kept, strict=True)]
        cache = self._joined([[(keys[..., :reused, :], values[..., :reused, :])
                               for keys, values in layers] for reused, layers in kept],
                             room=max(rests))
        tokens = torch.zeros((len(prompts), max(rests)), dtype=torch.long, device=device)
        mask = torch.zeros((len(prompts), past + max(rests)), dtype=torch.long, device=device)
        for row, (prompt, (reused, _), rest) in enumerate(zip(prompts, kept, rests,
                                                               strict=True)):
            tokens[row, :rest] = torch.tensor(prompt[reused:], device=device)
            mask[row, past - reused : past + rest] = 1
        positions = (torch.tensor([reused for reused, _ in kept], device=device)[:, None]
                     + torch.arange(max(rests), device=device))
        ends = sorted(set(rest - 1 for rest in rests))
        logits = self.forward(tokens, mask, positions, cache,
                              keep=torch.tensor(ends, device=device))
        layers = [[(layer.keys[row : row + 1, :, past - reused : past + rest].clone(),
                    layer.values[row : row + 1, :, past - reused : past + rest].clone())
                   for layer in cache.layers]
                  for row, ((reused, _), rest) in enumerate(zip(kept, rests, strict=True))]
        return layers, [logits[row, ends.index(rest - 1)] for row, rest in enumerate(rests)]

    def forward(self, tokens: Any, mask: Any, positions: Any, cache: Any, keep: Any = 0) -> Any:
        """The scores of ``tokens`` (rows by columns) at ``positions`` (the same shape),
        appended to ``cache``, whose columns and the new ones ``mask`` covers; only at the
        columns ``keep`` (a tensor of indices) when given."""
        return self._model(input_ids=tokens, attention_mask=mask, position_ids=positions,
                           use_cache=True, logits_to_keep=keep,
                           **{self._cache_keyword: cache}).logits

    def _loop(self, cache: Any, mask: Any, positions: Any, scores: Any, max_new_tokens: int,
              eos_ids: set[int], pick: Callable[[list[int], Any], Any],
              stopped: Callable[[list[int], int], bool] | None) -> list[list[int]]:
        torch = self._torch
        rows = list(range(len(positions)))
        new: list[list[int]] = [[] for _ in rows]
        for _ in range(max_new_tokens):
            tokens = pick(rows, scores)
            running = []
            for slot, (row, token) in enumerate(zip(rows, tokens.tolist(), strict=True)):
                new[row].append(token)
                if (token not in eos_ids and len(new[row]) < max_new_tokens
                        and not (stopped and stopped(new[row], 1))):
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
