"""Causal-LM policies for text teams, with optional LoRA adapters through peft.

An agent's message is its reply to a chat built from its observation (the role's system prompt,
then the problem and the shared transcript as one user turn, with tool schemas when it has
tools). Log-probs are taken over the reply's tokens only: the prompt, which holds the other
agents' messages, and the padding are masked out.

Generation is transformers' ``generate`` on the agent's adapter: one batched, KV-cached call for
all of a turn's observations, drawn from torch's RNG seeded (inside ``fork_rng``) from the
caller's ``torch.Generator``, so the same seed gives the same messages.

Agents of a team on the same base with LoRA share it: a policy built with ``base=`` adds its own
named adapter to the base's peft model and activates it before every forward pass.

transformers (and peft, when ``lora_rank > 0``) are imported when a policy is built.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agentworld_envs.backends.stops import StopWatch, tokens_to_stop
from agentworld_envs.backends.stops import cut_at_stop as text_before_stop
from trainers.common.batch import Samples
from trainers.common.objectives import message_kl

__all__ = ["TextMessages", "CausalLMPolicy", "DTYPES"]

_HF_HINT = 'LM policies need transformers: pip install "agentworld[hf]"'
_PEFT_HINT = "LoRA policies need peft: pip install peft"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
"""Weight dtypes a policy may load in (log-probs are always computed in float32)."""


@dataclass
class TextMessages:
    """An agent's messages in a batch, as token ids of the policy that wrote them."""

    prompt_ids: list[list[int]]
    response_ids: list[list[int]]
    texts: list[str]
    source: str
    """Fingerprint of the vocabulary the ids belong to."""
    logprobs: list[list[float]] | None = None
    """Each response token's log-prob under the tempered full distribution of the policy that
    sampled it, taken from the sampling pass itself (None: not recorded, score them)."""

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, index: np.ndarray) -> TextMessages:
        """The messages at ``index``."""
        return TextMessages([self.prompt_ids[i] for i in index],
                            [self.response_ids[i] for i in index],
                            [self.texts[i] for i in index], self.source,
                            None if self.logprobs is None else [self.logprobs[i] for i in index])


def chat_messages(observation: dict[str, Any]) -> tuple[list[dict[str, str]], list | None]:
    """The chat and tool schemas for a text-team observation."""
    messages = [{"role": "system", "content": observation["system"]},
                {"role": "user", "content": observation["text"]}]
    tools = json.loads(observation["tools"]) if observation.get("tools") else None
    return messages, tools


def fit_context(prompt: list[int], budget: int) -> list[int]:
    """``prompt`` cut in the middle to at most ``budget`` tokens: its first half-budget (the
    system prompt and the problem) and its last (the latest messages and the assistant header)
    are kept."""
    if len(prompt) <= budget:
        return prompt
    head = budget // 2
    return prompt[:head] + prompt[len(prompt) - (budget - head):]


def cut_at_stop(tokens: list[int], eos: set[int], stop: Sequence[str],
                decode: Any) -> list[int]:
    """The generated ``tokens`` up to and including the first eos token or the token that
    completes the first stop string (:func:`~agentworld_envs.backends.stops.tokens_to_stop`);
    whatever follows (padding, overshoot) is dropped."""
    tokens = tokens[:next((i + 1 for i, t in enumerate(tokens) if t in eos), len(tokens))]
    return tokens_to_stop(tokens, stop, decode)


def neutral_generation_config(network: Any, tokenizer: Any) -> Any:
    """The model's generation defaults replaced by transformers' neutral ones, keeping its
    special tokens, every end token among them (those of the model's config, of its generation
    defaults and of the tokenizer).

    ``generate`` fills whatever a call leaves unset from the model's defaults: one such as a
    ``repetition_penalty`` would sample from another distribution than the tempered one whose
    log-probs the updates use, and greedy evaluation would change with it."""
    from transformers import GenerationConfig

    defaults = network.generation_config
    ends: set[int] = set()
    for ids in (network.config.eos_token_id, defaults.eos_token_id, tokenizer.eos_token_id):
        ends.update([ids] if isinstance(ids, int) else ids or ())
    return GenerationConfig(bos_token_id=defaults.bos_token_id, eos_token_id=sorted(ends),
                            pad_token_id=tokenizer.pad_token_id)


def without_dropout(network: torch.nn.Module) -> None:
    """Turns off every dropout of ``network`` (its ``Dropout`` layers and the attention
    dropout rate of its attention layers), as TRL does for a policy: scoring runs in training
    mode when gradient checkpointing is on, and dropout would make the new log-probs noisy
    against the old ones."""
    for module in network.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if isinstance(getattr(module, "attention_dropout", None), float):
            module.attention_dropout = 0.0


def _contiguous_input(_: Any, args: tuple) -> tuple:
    """The output layer's input made contiguous. ``logits_to_keep`` slices the last positions
    of a batch, and torch's CPU ``linear`` turns such a strided 3-D input into a batched
    matmul over a copy of the weight for each row: in bfloat16, 40 times slower than on a
    contiguous input (half of a prefill's time), in float32 1.3 times."""
    return (args[0].contiguous(), *args[1:])


@contextlib.contextmanager
def _adapter_init(seed: int) -> Iterator[None]:
    """Seed a new adapter's weights, leaving the global RNG as it was; peft's read of
    transformers' deprecated ``is_gradient_checkpointing`` (a ``FutureWarning`` on every
    adapter, not ours to act on) is not shown."""
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.* deprecated",
                                category=FutureWarning)
        torch.manual_seed(seed)
        yield


class CausalLMPolicy:
    """A transformers causal LM playing one agent (or several, when shared).

    Sampling draws from the tempered distribution softmax(logits / ``temperature``), further
    restricted by ``top_k`` and ``top_p`` when set. Log-probs (old and new) are always those of
    the tempered *full* distribution, as TRL scores them: with top-k/top-p they are not the exact
    sampling probabilities (a truncated token set has a larger mass), but old and new are
    measured alike, so ratios and KL stay consistent; without truncation they are exact.

    Args:
        model: Local directory, hub name or an embedded base's name (``smollm2``).
        lora_rank: Train LoRA adapters of this rank on all linear layers; 0 trains all weights.
        lora_alpha: LoRA scaling (twice the rank by default).
        temperature: Sampling temperature; log-probs use the same tempered distribution.
        top_p: Nucleus sampling mass (1: off).
        top_k: Sample among the k most likely tokens (0: off).
        stop: Stop strings: a message ends at the first; its text excludes it, its tokens end
            with the one that completes it. Empty strings are ignored, as the CLI's list does.
        max_new_tokens: Longest message, in tokens.
        context_tokens: Prompt plus message, in tokens (0: the model's context length); longer
            prompts are cut in the middle (:func:`fit_context`).
        score_batch_size: Messages per scoring forward pass (0: all at once).
        dtype: ``float32`` or ``bfloat16`` weights.
        gradient_checkpointing: Recompute activations in the backward pass to save memory.
        device: Torch device.
        seed: Seeds the LoRA initialisation.
        adapter: Name of this policy's LoRA adapter.
        base: Another LoRA policy on the same model whose base weights this one shares, adding
            its own ``adapter``; settings of the weights (model, dtype, checkpointing) are the
            base's.
        engine: Generate through this vLLM engine (:class:`~trainers.policies.vllm_generation.
            VLLMGeneration`) instead of transformers; scoring and updates stay here.
        response_prefix: Every message starts with this text, written after the prompt's
            assistant header (a prefill): its tokens end the prompt, and the message's text
            starts with it.
    """

    def __init__(self, model: str, *, lora_rank: int = 0, lora_alpha: int | None = None,
                 temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                 stop: Sequence[str] = (), max_new_tokens: int = 64, context_tokens: int = 0,
                 score_batch_size: int = 0, dtype: str = "float32",
                 gradient_checkpointing: bool = False, device: str = "cpu", seed: int = 0,
                 adapter: str = "default", base: CausalLMPolicy | None = None,
                 engine: Any = None, response_prefix: str = "") -> None:
        try:
            import transformers
        except ImportError as exc:
            raise ImportError(_HF_HINT) from exc
        self.model_name = str(model)
        self.temperature, self.top_p, self.top_k = float(temperature), float(top_p), int(top_k)
        self.stop = tuple(s for s in stop if s)  # "" is in every text: it ends every message
        self.response_prefix = str(response_prefix)
        self.max_new_tokens = int(max_new_tokens)
        self.score_batch_size = int(score_batch_size)
        self.lora_rank, self.adapter, self.engine = int(lora_rank), adapter, engine
        alpha = lora_alpha or 2 * self.lora_rank
        if base is not None:
            if not (self.lora_rank and base.lora_rank and base.model_name == self.model_name):
                raise ValueError("a policy shares a base only as a LoRA adapter on the same model")
            self.tokenizer, self.module, self.device = base.tokenizer, base.module, base.device
            self.dtype, self.gradient_checkpointing = base.dtype, base.gradient_checkpointing
            with _adapter_init(seed):
                self.module.add_adapter(adapter, self._lora_config(alpha))
        else:
            self._load(transformers, dtype, gradient_checkpointing, device, alpha, seed)
        config = self.module.config
        self.context_tokens = int(context_tokens) or int(
            getattr(config, "max_position_embeddings", 0) or 1 << 30)
        if self.context_tokens <= self.max_new_tokens:
            raise ValueError(f"context_tokens ({self.context_tokens}) must exceed max_new_tokens "
                             f"({self.max_new_tokens})")
        self._eos = set(self.module.generation_config.eos_token_id)

    def _load(self, transformers: Any, dtype: str, checkpointing: bool, device: str,
              alpha: int, seed: int) -> None:
        from agentworld_envs.models.pretrained import resolve_model

        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
        self.dtype, self.gradient_checkpointing = dtype, bool(checkpointing)
        self.device = torch.device(device)
        path = resolve_model(self.model_name)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        network = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[dtype])
        network.generation_config = neutral_generation_config(network, self.tokenizer)
        without_dropout(network)
        network.get_output_embeddings().register_forward_pre_hook(_contiguous_input)
        if self.gradient_checkpointing:  # renamed activation_checkpointing_enable in 5.x
            enable = getattr(network, "activation_checkpointing_enable",
                             network.gradient_checkpointing_enable)
            enable({"use_reentrant": False})
        if self.lora_rank:
            try:
                import peft
            except ImportError as exc:
                raise ImportError(_PEFT_HINT) from exc
            with _adapter_init(seed):
                network = peft.get_peft_model(network, self._lora_config(alpha),
                                              adapter_name=self.adapter)
        self.module = network.to(self.device).eval()

    def _lora_config(self, alpha: int) -> Any:
        import peft

        return peft.LoraConfig(r=self.lora_rank, lora_alpha=alpha, lora_dropout=0.0,
                               target_modules="all-linear", task_type="CAUSAL_LM")

    @functools.cached_property
    def source(self) -> str:
        """A fingerprint of the vocabulary: samples are only scored by policies sharing it."""
        vocab = json.dumps(sorted(self.tokenizer.get_vocab().items()), ensure_ascii=False)
        return hashlib.sha1(vocab.encode()).hexdigest()[:16]

    def spec(self) -> dict[str, Any]:
        """Plain data describing the policy, stored in checkpoints."""
        return {"model": self.model_name, "lora_rank": self.lora_rank,
                "temperature": self.temperature, "max_new_tokens": self.max_new_tokens}

    def activate(self) -> None:
        """Make this policy's adapter the active one of its (possibly shared) model."""
        if self.lora_rank and self.module.active_adapter != self.adapter:
            self.module.set_adapter(self.adapter)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters this agent's updates change: its own adapter's, or all weights."""
        if not self.lora_rank:
            return [p for p in self.module.parameters() if p.requires_grad]
        return [p for name, p in self.module.named_parameters()
                if "lora_" in name and f".{self.adapter}." in name]

    def release(self, successor: Any) -> None:
        """Unload this policy's adapter from the base it shares with ``successor``, which has
        taken its place (a replacement), so the shared model holds no adapter nobody uses."""
        if self.lora_rank and getattr(successor, "module", None) is self.module:
            self.module.delete_adapter(self.adapter)

    def save_adapter(self, folder: Path) -> None:
        """Write this policy's adapter as ``save_pretrained`` does, into ``folder``."""
        with tempfile.TemporaryDirectory(dir=folder.parent) as scratch:
            self.module.save_pretrained(scratch, selected_adapters=[self.adapter])
            written = Path(scratch) if self.adapter == "default" else Path(scratch) / self.adapter
            shutil.move(str(written), folder)

    def load_adapter(self, weights: dict[str, torch.Tensor], folder: Path) -> None:
        """Load the ``weights`` of an adapter that :meth:`save_adapter` wrote into ``folder``
        (its ``adapter_model.safetensors``, read by the caller) into this policy's adapter."""
        from peft import set_peft_model_state_dict

        result = set_peft_model_state_dict(self.module, weights, adapter_name=self.adapter)
        missing = [k for k in result.missing_keys if "lora_" in k and f".{self.adapter}." in k]
        if missing or result.unexpected_keys:
            raise ValueError(f"{folder}: the adapter does not fit the policy (missing "
                             f"{missing[:3]}, unexpected {result.unexpected_keys[:3]})")

    def with_response_prefix(self, response_prefix: str) -> CausalLMPolicy:
        """This policy, weights and all, playing a role whose messages start with
        ``response_prefix`` (a shared policy's view for one agent)."""
        view = copy.copy(self)
        view.response_prefix = str(response_prefix)
        return view

    def encode_prompt(self, observation: dict[str, Any]) -> list[int]:
        """Token ids of the chat prompt for an observation, ending with the assistant header
        and ``response_prefix``, cut to leave ``max_new_tokens`` of the context budget
        (:func:`fit_context`)."""
        messages, tools = chat_messages(observation)
        text = self.tokenizer.apply_chat_template(messages, tools=tools, tokenize=False,
                                                  add_generation_prompt=True)
        text += self.response_prefix
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return fit_context(ids, self.context_tokens - self.max_new_tokens)

    def _padded(self, rows: Sequence[Sequence[int]], width: int,
                prompt_width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows of prompt + response ids, prompts left-padded to ``prompt_width`` and the
        whole right-padded to ``width``; with the attention mask."""
        ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros_like(ids)
        for row, (prompt, response) in enumerate(rows):
            start = prompt_width - len(prompt)
            ids[row, start:prompt_width + len(response)] = torch.tensor(
                list(prompt) + list(response), dtype=torch.long)
            attention[row, start:prompt_width + len(response)] = 1
        return ids.to(self.device), attention.to(self.device)

    def _generation_config(self, greedy: bool, **outputs: bool) -> Any:
        from transformers import GenerationConfig

        sampling = {} if greedy else {"temperature": self.temperature, "top_p": self.top_p,
                                      "top_k": self.top_k}
        return GenerationConfig(do_sample=not greedy, max_new_tokens=self.max_new_tokens,
                                eos_token_id=sorted(self._eos),
                                pad_token_id=self.tokenizer.pad_token_id, **sampling, **outputs)

    @torch.no_grad()
    def generate(self, observations: Sequence[dict[str, Any]], generator: torch.Generator,
                 greedy: bool = False) -> TextMessages:
        """Sample one message per observation in one batched ``generate`` call (``greedy``:
        the most likely token at each step instead, for evaluation).

        The draw comes from torch's RNG seeded by a number drawn from ``generator``, inside
        ``fork_rng``, so the global RNG is untouched (with an ``engine``, vLLM's sampler seeded
        by that number). ``response_ids`` are exactly the
        generated tokens up to and including eos or the one completing a stop string.
        """
        prompts = [self.encode_prompt(obs) for obs in observations]
        seed = int(torch.randint(2**62, (1,), generator=generator))
        rows, logprobs = ((self.engine.generate(self, prompts, greedy, seed), None)
                          if self.engine is not None else self._generated(prompts, greedy, seed))
        decode = functools.partial(self.tokenizer.decode, skip_special_tokens=True)
        responses = [cut_at_stop(row, self._eos, self.stop, decode) for row in rows]
        texts = [text_before_stop(decode(r), self.stop)[0] for r in responses]
        texts = [self.response_prefix + text for text in texts]
        kept = None if logprobs is None else [row[:len(r)] for row, r in zip(
            logprobs, responses, strict=True)]
        return TextMessages(prompts, responses, texts, self.source, kept)

    def _generated(self, prompts: list[list[int]], greedy: bool,
                   seed: int) -> tuple[list[list[int]], list[list[float]] | None]:
        """The token ids ``generate`` appends to each prompt (padding after eos included) and,
        when sampling in float32, each one's log-prob under the tempered full distribution,
        from the sampling pass's own logits (so the old log-probs need no second forward pass).

        In bfloat16 the cached decoding pass and a scoring pass round differently (on
        SmolLM2-135M a message KL of up to 0.1 at zero update, over 32 tokens), so the old
        log-probs are left to a scoring pass, measured as the new ones are."""
        width = max(len(p) for p in prompts)
        ids, attention = self._padded([(p, ()) for p in prompts], width, width)
        recorded = not greedy and self.dtype == "float32"
        # a row ends once its own message holds a stop string: transformers' ``stop_strings``
        # also match across the prompt's end, leaving a message with no stop string in it
        watch = StopWatch(self.stop, functools.partial(self.tokenizer.decode,
                                                       skip_special_tokens=True))
        stops = [watch.criterion(torch, width)] if self.stop else None
        self.activate()
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            output = self.module.generate(
                input_ids=ids, attention_mask=attention, stopping_criteria=stops,
                generation_config=self._generation_config(
                    greedy, return_dict_in_generate=True, output_logits=recorded))
        tokens = output.sequences[:, width:]
        if not recorded:
            return tokens.cpu().tolist(), None
        logprobs = torch.stack([  # one step's distribution at a time
            torch.log_softmax(step.float() / self.temperature, dim=-1).gather(
                -1, tokens[:, i, None]).squeeze(-1) for i, step in enumerate(output.logits)], 1)
        return tokens.cpu().tolist(), logprobs.cpu().tolist()

    def token_logprobs(self, samples: Samples) -> torch.Tensor:
        """Per-token log-probs ``(M, T)`` of the agent's message tokens (0 elsewhere), under
        the tempered full distribution, in forward passes of at most ``score_batch_size``
        messages."""
        messages: TextMessages = samples.payload
        if messages.source != self.source:
            raise ValueError("these messages were tokenised with another vocabulary; a policy "
                             "can only score messages written with its own tokenizer")
        width = samples.mask.shape[1]
        if not len(messages):  # an agent that wrote nothing in the batch (router handoff)
            return torch.zeros((0, width))
        self.activate()
        # training mode only turns checkpointing on: the policy has no dropout (``_load``)
        self.module.train(self.gradient_checkpointing and torch.is_grad_enabled())
        size = self.score_batch_size or len(messages)
        try:
            parts = [self._scored(messages.subset(np.arange(start, min(start + size,
                                                                       len(messages)))), width)
                     for start in range(0, len(messages), size)]
        finally:
            self.module.eval()
        return torch.cat(parts) * samples.mask

    def _scored(self, messages: TextMessages, width: int) -> torch.Tensor:
        prompt_width = max(len(p) for p in messages.prompt_ids)
        ids, attention = self._padded(list(zip(messages.prompt_ids, messages.response_ids,
                                               strict=True)), prompt_width + width, prompt_width)
        positions = (attention.cumsum(1) - 1).clamp(min=0)
        # Only the logits predicting the response (the last width + 1 positions, less the last).
        logits = self.module(input_ids=ids, attention_mask=attention, position_ids=positions,
                             use_cache=False, logits_to_keep=width + 1).logits[:, :width]
        logits = logits.float() / self.temperature
        targets = ids[:, prompt_width:].unsqueeze(-1)
        return torch.log_softmax(logits, dim=-1).gather(-1, targets).squeeze(-1).cpu()

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
