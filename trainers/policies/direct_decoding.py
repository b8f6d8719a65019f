"""Direct KV-cached decoding of LM policies on a CPU (``--generation direct``).

transformers' ``generate`` on a peft model runs every linear layer through peft's LoRA wrapper
and every step through the generation loop's bookkeeping. On two CPU cores, at the few rows of a
team's turn, that overhead costs about as much as the matrix products themselves (docs/
team_envs.md). Here one loop calls the base's own weight tensors (no copy: the base stays held
once per team) with the active agent's adapter applied beside each layer as peft applies it (its
``lora_A``, ``lora_B`` and ``scaling``, the adapter's float32 path included), keys and values in a
cache allocated once per call, grouped-query heads attended without copying them.

Sampling is ``generate``'s: the same warpers (temperature, then top-k, then top-p) on the float32
logits, one ``torch.multinomial`` draw per step from the global RNG (seeded by the policy inside
``fork_rng``), finished rows padded, a row ending at an end token, a stop string (the policy's
:class:`~trainers.policies.lm.MessageStops`) or the token budget. In float32 the tokens are
``generate``'s (tested); in bfloat16 the logits round differently, as any two kernels' do.

Llama-style decoders only (Llama, Mistral without a sliding window, Qwen2: RMSNorm, rotary
positions, gated MLP, optional q/k/v biases); others are refused with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["DirectDecoding", "SUPPORTED_MODEL_TYPES"]

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2")
"""``config.model_type`` values whose decoder layers this loop reproduces."""


class _Linear:
    """A linear layer as its forward computes it: base weight and bias, plus the active LoRA
    adapter's ``B(A(x)) · scaling`` in the adapter's dtype, cast back as peft casts it."""

    def __init__(self, module: torch.nn.Module, adapter: str | None) -> None:
        base = getattr(module, "base_layer", module)
        self.weight, self.bias = base.weight, base.bias
        self.lora: tuple[torch.Tensor, torch.Tensor] | None = None
        if adapter is not None and adapter in getattr(module, "lora_A", {}):
            if module.use_dora.get(adapter):
                raise ValueError("--generation direct does not apply DoRA adapters")
            scaling = module.scaling[adapter]
            self.lora = (module.lora_A[adapter].weight, module.lora_B[adapter].weight * scaling)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        y = F.linear(x, self.weight, self.bias)
        if self.lora is None:
            return y
        a, b = self.lora
        return (y + F.linear(F.linear(x.to(a.dtype), a), b)).to(y.dtype)


class _Layer:
    """One decoder layer's parts."""

    def __init__(self, layer: torch.nn.Module, adapter: str | None) -> None:
        attention, mlp = layer.self_attn, layer.mlp
        self.input_norm, self.post_norm = layer.input_layernorm, layer.post_attention_layernorm
        self.q, self.k, self.v, self.o = (_Linear(getattr(attention, name), adapter)
                                          for name in ("q_proj", "k_proj", "v_proj", "o_proj"))
        self.gate, self.up, self.down = (_Linear(getattr(mlp, name), adapter)
                                         for name in ("gate_proj", "up_proj", "down_proj"))


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class _Decoder:
    """The network of one call, read from a (peft-wrapped) causal LM with ``adapter`` active."""

    def __init__(self, network: torch.nn.Module, adapter: str | None) -> None:
        model = network.get_base_model() if hasattr(network, "get_base_model") else network
        config = model.config
        if config.model_type not in SUPPORTED_MODEL_TYPES or getattr(
                config, "use_sliding_window", False) or (
                config.model_type == "mistral" and getattr(config, "sliding_window", None)):
            raise ValueError(f"--generation direct decodes {', '.join(SUPPORTED_MODEL_TYPES)} "
                             f"models without a sliding window, not this {config.model_type!r} "
                             "model: use --generation transformers")
        inner = model.model
        self.embed, self.norm, self.rotary = inner.embed_tokens, inner.norm, inner.rotary_emb
        self.layers = [_Layer(layer, adapter) for layer in inner.layers]
        self.head = _Linear(model.lm_head, adapter)
        attention = inner.layers[0].self_attn
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = attention.head_dim

    def forward(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor,
                cache: list[tuple[torch.Tensor, torch.Tensor]], start: int) -> torch.Tensor:
        """The last position's logits of ``ids`` (``[rows, n]``) at cache slots
        ``start:start + n``; ``mask`` (``[rows, n, start + n]``) says which slots each attends."""
        rows, n = ids.shape
        end, groups = start + n, self.heads // self.kv_heads
        x = self.embed(ids)
        cos, sin = self.rotary(x, positions)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        # query heads h = kv * groups + g, grouped under their key-value head: [rows, kv, g·n]
        grouped_mask = mask[:, None, None].expand(rows, 1, groups, n, end).reshape(
            rows, 1, groups * n, end)
        for layer, (keys, values) in zip(self.layers, cache, strict=True):
            h = layer.input_norm(x)
            q = layer.q(h).view(rows, n, self.heads, self.head_dim).transpose(1, 2)
            k = layer.k(h).view(rows, n, self.kv_heads, self.head_dim).transpose(1, 2)
            q = q * cos + _rotate_half(q) * sin
            keys[:, :, start:end] = k * cos + _rotate_half(k) * sin
            values[:, :, start:end] = layer.v(h).view(
                rows, n, self.kv_heads, self.head_dim).transpose(1, 2)
            q = q.reshape(rows, self.kv_heads, groups * n, self.head_dim)
            attended = F.scaled_dot_product_attention(
                q, keys[:, :, :end], values[:, :, :end], attn_mask=grouped_mask)
            attended = attended.reshape(rows, self.heads, n, self.head_dim).transpose(1, 2)
            x = x + layer.o(attended.reshape(rows, n, self.heads * self.head_dim))
            h = layer.post_norm(x)
            x = x + layer.down(F.silu(layer.gate(h)) * layer.up(h))
        return self.head(self.norm(x[:, -1:]))[:, -1].float()


def _warpers(temperature: float, top_k: int, top_p: float) -> list[Any]:
    """``generate``'s sampling warpers for these settings, in its order."""
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    warpers: list[Any] = []
    if temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(temperature))
    if top_k:
        warpers.append(TopKLogitsWarper(top_k))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p))
    return warpers


class _Batch:
    """Left-padded prompts (as ``generate`` pads a batch) with room for ``steps`` new tokens:
    which slots hold a token, each slot's position, and the prefill's attention mask."""

    def __init__(self, prompts: Sequence[list[int]], steps: int, pad: int,
                 device: torch.device) -> None:
        self.rows, self.width = len(prompts), max(len(p) for p in prompts)
        self.ids = torch.full((self.rows, self.width), pad, dtype=torch.long, device=device)
        self.present = torch.ones((self.rows, self.width + steps), dtype=torch.bool,
                                  device=device)
        for row, prompt in enumerate(prompts):
            self.ids[row, self.width - len(prompt):] = torch.tensor(prompt, device=device)
            self.present[row, :self.width - len(prompt)] = False
        self.positions = (self.present.long().cumsum(1) - 1).clamp(min=0)
        causal = torch.ones((self.width, self.width), dtype=torch.bool, device=device).tril()
        # a padding slot attends to itself alone, so that no row of the softmax is empty
        self.prefill_mask = (causal & self.present[:, None, :self.width]) | torch.eye(
            self.width, dtype=torch.bool, device=device)


class DirectDecoding:
    """The ``engine`` of :class:`~trainers.policies.lm.CausalLMPolicy` for ``--generation
    direct``: each call decodes with the policy's module and adapter as they are then (so an
    update is seen at once)."""

    @torch.no_grad()
    def generate(self, policy: Any, prompts: Sequence[list[int]], greedy: bool,
                 seed: int) -> tuple[list[list[int]], list[list[float]] | None]:
        """Each prompt's generated token ids (padding after its end) and, when sampling in
        float32, each token's log-prob under the tempered full distribution (as
        ``CausalLMPolicy`` records them from ``generate``); sampled from torch's RNG seeded
        with ``seed`` inside ``fork_rng``."""
        device = policy.device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            tokens, logprobs = self._decode(policy, prompts, greedy)
        generated = torch.stack(tokens, dim=1).cpu().tolist()
        if not logprobs:
            return generated, None
        return generated, torch.stack(logprobs, dim=1).cpu().tolist()

    @staticmethod
    def _decode(policy: Any, prompts: Sequence[list[int]],
                greedy: bool) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Each step's chosen tokens (``pad`` once a row ended) and, when recorded, their
        log-probs."""
        from trainers.policies.lm import MessageStops

        decoder = _Decoder(policy.module, policy.adapter if policy.lora_rank else None)
        steps, pad, device = policy.max_new_tokens, policy.tokenizer.pad_token_id, policy.device
        batch = _Batch(prompts, steps, pad, device)
        cache = [tuple(torch.zeros((batch.rows, decoder.kv_heads, batch.width + steps,
                                    decoder.head_dim), dtype=decoder.embed.weight.dtype,
                                   device=device) for _ in range(2)) for _ in decoder.layers]
        recorded = not greedy and policy.dtype == "float32"
        warpers = [] if greedy else _warpers(policy.temperature, policy.top_k, policy.top_p)
        stops = MessageStops(0, policy.stop, policy.tokenizer) if policy.stop else None
        ends = torch.tensor(sorted(policy._eos), device=device)
        running = torch.ones(batch.rows, dtype=torch.bool, device=device)
        tokens: list[torch.Tensor] = []
        logprobs: list[torch.Tensor] = []
        logits = decoder.forward(batch.ids, batch.positions[:, :batch.width],
                                 batch.prefill_mask, cache, 0)
        for step in range(steps):
            if greedy:
                chosen = logits.argmax(dim=-1)
            else:
                scores = logits
                for warp in warpers:
                    scores = warp(None, scores)
                chosen = torch.multinomial(F.softmax(scores, dim=-1), num_samples=1).squeeze(1)
            if recorded:
                logprobs.append(torch.log_softmax(logits / policy.temperature, dim=-1).gather(
                    -1, chosen[:, None]).squeeze(-1))
            chosen = torch.where(running, chosen, torch.full_like(chosen, pad))
            tokens.append(chosen)
            running &= ~torch.isin(chosen, ends)
            if stops is not None:
                running &= ~stops(torch.stack(tokens[-stops.window:], dim=1), None)
            if not running.any() or step == steps - 1:
                break
            slot = batch.width + step
            logits = decoder.forward(chosen[:, None], batch.positions[:, slot:slot + 1],
                                     batch.present[:, None, :slot + 1], cache, slot)
        return tokens, logprobs
