"""Seeded sampling for the in-process backend: each request draws from its own torch generator,
so a seeded request samples the same way whatever batch it is in.

:class:`GumbelSampler` turns greedy search into sampling, as ``generate``'s logits processor or
through :func:`picker` in ragged decoding; :func:`generator` makes a request's generator and
:func:`copied` one that draws what another will draw. torch is passed in, never imported here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentworld_envs.protocol.chat import ChatRequest

__all__ = ["GREEDY_BELOW", "GumbelSampler", "copied", "generator", "greedy_when_cold", "picker"]

GREEDY_BELOW = 1e-5
"""Temperatures below this decode greedily, as vLLM's do (its ``_SAMPLING_EPS``): logits
divided by such a temperature overflow, and sampling would then pick the lowest token id."""


def greedy_when_cold(request: ChatRequest) -> ChatRequest:
    """``request``, set to greedy decoding when its temperature is above 0 but below
    :data:`GREEDY_BELOW`."""
    sampling = request.sampling
    if not 0 < sampling.temperature < GREEDY_BELOW:
        return request
    return dataclasses.replace(request, sampling=dataclasses.replace(sampling, temperature=0.0))


class GumbelSampler:
    """Logits processor that turns greedy search into sampling with per-row torch generators.

    Adding Gumbel noise to temperature-scaled, top-k- then top-p-filtered logits and taking the
    argmax draws from the same distribution as multinomial sampling, but from each request's
    own seeded generator, so a seeded request samples the same way whatever batch it is in.
    ``top_k`` None or 0 keeps every token.
    """

    def __init__(self, torch: Any, generators: list[Any], temperature: float, top_p: float,
                 top_k: int | None = None):
        self._torch = torch
        self._generators = generators
        self._temperature = temperature
        self._top_p = top_p
        self._top_k = top_k

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        return self.perturb(scores, self._generators)

    def perturb(self, scores: Any, generators: list[Any]) -> Any:
        """The noisy scores of rows drawn with ``generators``, one per row of ``scores``."""
        torch = self._torch
        scores = scores.float() / self._temperature
        if self._top_k and self._top_k < scores.shape[-1]:  # ties with the k-th stay in
            kth = scores.topk(self._top_k, dim=-1).values[..., -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if self._top_p < 1.0:
            ordered, order = scores.sort(dim=-1, descending=True)
            probs = ordered.softmax(dim=-1)
            drop_sorted = probs.cumsum(dim=-1) - probs > self._top_p
            drop = drop_sorted.scatter(-1, order, drop_sorted)
            scores = scores.masked_fill(drop, float("-inf"))
        uniform = torch.stack([
            torch.rand(scores.shape[-1], generator=g, device=g.device) for g in generators
        ]).clamp_(1e-10, 1.0 - 1e-7)
        return scores - torch.log(-torch.log(uniform))


def picker(sampler: GumbelSampler | None, generators: list[Any]) -> Any:
    """The ragged decoder's token choice: the argmax of the (sampled) scores."""
    def pick(rows: list[int], scores: Any) -> Any:
        scores = scores.float()
        if sampler is not None:
            scores = sampler.perturb(scores, [generators[row] for row in rows])
        return scores.argmax(dim=-1)
    return pick


def copied(torch: Any, generator: Any) -> Any:
    """A new generator in ``generator``'s state: it draws what ``generator`` will draw."""
    copy_ = torch.Generator(device=generator.device)
    copy_.set_state(generator.get_state())
    return copy_


def generator(torch: Any, device: str, seed: int | None) -> Any:
    """A torch generator on ``device`` seeded with ``seed`` (by the system when None)."""
    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    return generator
