"""Causal-LM policies for text teams, with optional LoRA adapters through peft.

An agent's message is its reply to a chat built from its observation (the role's system prompt,
then the problem and the shared transcript as one user turn, with tool schemas when it has
tools). Log-probs are taken over the reply's tokens only: the prompt, which holds the other
agents' messages, and the padding are masked out.

Sampling is a plain decoding loop over the model's KV cache that draws every token from an
explicit ``torch.Generator``, so the same seed gives the same messages.

transformers (and peft, when ``lora_rank > 0``) are imported when a policy is built.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainers.common.batch import Samples
from trainers.common.objectives import message_kl

__all__ = ["TextMessages", "CausalLMPolicy"]

_HF_HINT = 'LM policies need transformers: pip install "agentworld[hf]"'
_PEFT_HINT = "LoRA policies need peft: pip install peft"


@dataclass
class TextMessages:
    """An agent's messages in a batch, as token ids of the policy that wrote them."""

    prompt_ids: list[list[int]]
    response_ids: list[list[int]]
    texts: list[str]
    source: str
    """Fingerprint of the vocabulary the ids belong to."""

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, index: np.ndarray) -> TextMessages:
        """The messages at ``index``."""
        return TextMessages([self.prompt_ids[i] for i in index],
                            [self.response_ids[i] for i in index],
                            [self.texts[i] for i in index], self.source)


def chat_messages(observation: dict[str, Any]) -> tuple[list[dict[str, str]], list | None]:
    """The chat and tool schemas for a text-team observation."""
    messages = [{"role": "system", "content": observation["system"]},
                {"role": "user", "content": observation["text"]}]
    tools = json.loads(observation["tools"]) if observation.get("tools") else None
    return messages, tools


def _cache_of(output: Any) -> dict[str, Any]:
    """The KV cache of a forward pass, keyed as the model expects it back (``cache`` since
    transformers 5.x, ``past_key_values`` before)."""
    return {"cache": output["cache"]} if "cache" in output else {
        "past_key_values": output["past_key_values"]}


class CausalLMPolicy:
    """A transformers causal LM playing one agent (or several, when shared).

    Args:
        model: Local directory or hub name.
        lora_rank: Train LoRA adapters of this rank on all linear layers; 0 trains all weights.
        lora_alpha: LoRA scaling (twice the rank by default).
        temperature: Sampling temperature; log-probs use the same tempered distribution.
        max_new_tokens: Longest message, in tokens.
        device: Torch device.
        seed: Seeds the LoRA initialisation.
    """

    def __init__(self, model: str, *, lora_rank: int = 0, lora_alpha: int | None = None,
                 temperature: float = 1.0, max_new_tokens: int = 64, device: str = "cpu",
                 seed: int = 0) -> None:
        try:
            import transformers
        except ImportError as exc:
            raise ImportError(_HF_HINT) from exc
        self.model_name = str(model)
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        self.device = torch.device(device)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_name)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        network = transformers.AutoModelForCausalLM.from_pretrained(
            self.model_name, dtype=torch.float32)
        self.lora_rank = int(lora_rank)
        if self.lora_rank:
            network = self._with_lora(network, lora_alpha or 2 * self.lora_rank, seed)
        self.module = network.to(self.device).eval()
        eos = self.module.config.eos_token_id
        self._eos = {eos} if isinstance(eos, int) else set(eos or ())
        self._eos.add(self.tokenizer.eos_token_id)

    def _with_lora(self, network: Any, alpha: int, seed: int) -> Any:
        try:
            import peft
        except ImportError as exc:
            raise ImportError(_PEFT_HINT) from exc
        config = peft.LoraConfig(r=self.lora_rank, lora_alpha=alpha, lora_dropout=0.0,
                                 target_modules="all-linear", task_type="CAUSAL_LM")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return peft.get_peft_model(network, config)

    @functools.cached_property
    def source(self) -> str:
        """A fingerprint of the vocabulary: samples are only scored by policies sharing it."""
        vocab = json.dumps(sorted(self.tokenizer.get_vocab().items()), ensure_ascii=False)
        return hashlib.sha1(vocab.encode()).hexdigest()[:16]

    def spec(self) -> dict[str, Any]:
        """Plain data describing the policy, stored in checkpoints."""
        return {"model": self.model_name, "lora_rank": self.lora_rank,
                "temperature": self.temperature, "max_new_tokens": self.max_new_tokens}

    def encode_prompt(self, observation: dict[str, Any]) -> list[int]:
        """Token ids of the chat prompt for an observation, ending with the assistant header."""
        messages, tools = chat_messages(observation)
        text = self.tokenizer.apply_chat_template(messages, tools=tools, tokenize=False,
                                                  add_generation_prompt=True)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _left_padded(self, prompts: Sequence[Sequence[int]]) -> tuple[torch.Tensor, ...]:
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros_like(ids)
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt):] = torch.tensor(prompt)
            attention[row, width - len(prompt):] = 1
        return ids.to(self.device), attention.to(self.device)

    @torch.no_grad()
    def generate(self, observations: Sequence[dict[str, Any]], generator: torch.Generator,
                 greedy: bool = False) -> TextMessages:
        """Sample one message per observation, in one batch (``greedy``: the most likely
        token at each step instead, for evaluation)."""
        prompts = [self.encode_prompt(obs) for obs in observations]
        ids, attention = self._left_padded(prompts)
        positions = (attention.cumsum(1) - 1).clamp(min=0)
        output = self.module(input_ids=ids, attention_mask=attention, position_ids=positions,
                             use_cache=True)
        finished = torch.zeros(len(prompts), dtype=torch.bool)
        responses: list[list[int]] = [[] for _ in prompts]
        eos = torch.tensor(sorted(self._eos))
        for _ in range(self.max_new_tokens):
            logits = output.logits[:, -1].float().cpu()
            tokens = logits.argmax(dim=-1) if greedy else torch.multinomial(
                torch.softmax(logits / self.temperature, dim=-1), 1,
                generator=generator).squeeze(1)
            for row in np.flatnonzero(~finished.numpy()):
                responses[row].append(int(tokens[row]))
            finished |= torch.isin(tokens, eos)
            if finished.all():
                break
            attention = torch.cat([attention, torch.ones_like(attention[:, :1])], dim=1)
            positions = positions[:, -1:] + 1
            output = self.module(input_ids=tokens.unsqueeze(1).to(self.device),
                                 attention_mask=attention, position_ids=positions,
                                 use_cache=True, **_cache_of(output))
        texts = [self.tokenizer.decode(r, skip_special_tokens=True) for r in responses]
        return TextMessages(prompts, responses, texts, self.source)

    def token_logprobs(self, samples: Samples) -> torch.Tensor:
        """Per-token log-probs ``(M, T)`` of the agent's message tokens (0 elsewhere)."""
        messages: TextMessages = samples.payload
        if messages.source != self.source:
            raise ValueError("these messages were tokenised with another vocabulary; a policy "
                             "can only score messages written with its own tokenizer")
        width = samples.mask.shape[1]
        if not len(messages):  # an agent that wrote nothing in the batch (router handoff)
            return torch.zeros((0, width))
        prompt_width = max(len(p) for p in messages.prompt_ids)
        ids = torch.full((len(messages), prompt_width + width), self.tokenizer.pad_token_id,
                         dtype=torch.long)
        attention = torch.zeros_like(ids)
        for row, (prompt, response) in enumerate(zip(messages.prompt_ids,
                                                     messages.response_ids, strict=True)):
            ids[row, prompt_width - len(prompt):prompt_width + len(response)] = torch.tensor(
                list(prompt) + list(response))
            attention[row, prompt_width - len(prompt):prompt_width + len(response)] = 1
        ids, attention = ids.to(self.device), attention.to(self.device)
        positions = (attention.cumsum(1) - 1).clamp(min=0)
        logits = self.module(input_ids=ids, attention_mask=attention,
                             position_ids=positions).logits
        logits = logits[:, prompt_width - 1:prompt_width + width - 1].float() / self.temperature
        targets = ids[:, prompt_width:prompt_width + width].unsqueeze(-1)
        logp = torch.log_softmax(logits, dim=-1).gather(-1, targets).squeeze(-1).cpu()
        return logp * samples.mask

    def score(self, samples: Samples) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-token log-probs and the sampled per-message KL(old ‖ self) estimate.

        Full-vocabulary distributions are too large to keep for every rollout token, so the KL
        is the masked sum of ``(e^Δ - 1) - Δ`` over the message's sampled tokens.
        """
        logp = self.token_logprobs(samples)
        return logp, message_kl(logp, samples.old_logp, samples.mask)

    def response_mask(self, messages: TextMessages) -> torch.Tensor:
        """``(M, T)`` mask of each message's own tokens."""
        lengths = torch.tensor([len(r) for r in messages.response_ids])
        width = max(int(lengths.max()) if len(lengths) else 0, 1)
        return (torch.arange(width) < lengths.unsqueeze(1)).float()
