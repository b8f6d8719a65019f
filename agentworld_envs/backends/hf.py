"""In-process backend: a transformers causal LM, generating in left-padded batches.

torch and transformers are imported when a backend is built, never at package import.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld_envs.backends.base import Backend
from agentworld_envs.backends.drafting import DRAFTS
from agentworld_envs.backends.greedy_memo import GreedyMemo
from agentworld_envs.backends.replies import text_tool_calls
from agentworld_envs.protocol.chat import ChatRequest, Completion, SamplingParams, Usage

__all__ = ["HFBackend", "CACHES", "bucket_rows", "bucket_length", "template_messages",
           "cut_at_stop"]

CACHES = ("dynamic", "static")
"""The values of :class:`HFBackend`'s ``cache``."""
DTYPES = ("auto", "float32", "bfloat16", "float16", "float64")
"""The values of :class:`HFBackend`'s ``dtype``."""
_HINT = 'the "hf" backend needs torch and transformers: pip install "agentworld[hf]"'


def _import_hf() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(_HINT) from exc
    return torch, transformers


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy messages for a chat template: tool-call arguments given as JSON text become objects."""
    out = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            message = {**message, "tool_calls": [_object_arguments(call) for call in calls]}
        out.append(message)
    return out


def _object_arguments(call: dict[str, Any]) -> dict[str, Any]:
    call = copy.deepcopy(call)
    function = call.get("function") if isinstance(call.get("function"), dict) else call
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            function["arguments"] = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass  # rendered as the raw text the model wrote
    return call


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` at the first stop string; also say whether one was found."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)


def bucket_rows(rows: int, most: int) -> int:
    """The batch size a static-cache ``generate`` runs ``rows`` prompts at: the next power of
    two, at most ``most`` (the backend's ``batch_size``, itself a bucket)."""
    return min(1 << (rows - 1).bit_length(), most)


def bucket_length(tokens: int) -> int:
    """``tokens`` rounded up to a quarter-octave step (a multiple of 64 up to 512, of 128 up to
    1,024, ...): four lengths per doubling, under 25% padding from 256 tokens on."""
    step = 1 << max((tokens - 1).bit_length() - 3, 6)
    return -(-tokens // step) * step


class _GumbelSampler:
    """Logits processor that turns greedy search into sampling with per-row torch generators.

    Adding Gumbel noise to temperature-scaled, top-p-filtered logits and taking the argmax
    draws from the same distribution as multinomial sampling, but from each request's own
    seeded generator, so a seeded request samples the same way whatever batch it is in.
    """

    def __init__(self, torch: Any, generators: list[Any], temperature: float, top_p: float):
        self._torch = torch
        self._generators = generators
        self._temperature = temperature
        self._top_p = top_p

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        return self.perturb(scores, self._generators)

    def perturb(self, scores: Any, generators: list[Any]) -> Any:
        """The noisy scores of rows drawn with ``generators``, one per row of ``scores``."""
        torch = self._torch
        scores = scores.float() / self._temperature
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


class HFBackend(Backend):
    """A transformers causal LM run in-process.

    Args:
        model: Local directory or hub name, loaded with ``AutoTokenizer`` and
            ``AutoModelForCausalLM``, or the name of a pretrained base in
            :data:`agentworld_envs.models.pretrained.BASES` (converted and cached on first use).
        device: Torch device, e.g. ``"cpu"`` or ``"cuda:0"``.
        dtype: ``"auto"`` or a torch dtype name such as ``"bfloat16"``.
        batch_size: Most conversations per ``generate`` call.
        enable_thinking: Passed to the chat template when not None.
        adapter: A PEFT (LoRA) adapter folder, merged into the model on load (needs ``peft``).
        view: The name of a view in :data:`agentworld_envs.models.compact_view.VIEWS` that
            rewrites each chat before its template (the layout the model was trained on).
        greedy_memo: Greedy answers kept for reuse, by the prompt the model reads (after the
            view and the template) and the settings: an env that comes back to a state it
            has seen is answered without generating (exact: greedy decoding is
            deterministic). 0 keeps none.
        draft: ``"prompt"`` (the default): greedy requests decode with drafts looked up in
            their prompt, a hint and the last answers
            (:mod:`agentworld_envs.backends.drafting`), several tokens per forward pass, the
            same tokens; ``"none"``: one token per forward pass. Sampled requests, requests
            with generation settings that need ``generate`` (``SamplingParams.extra`` such as
            ``repetition_penalty``) and the static cache never draft.
        prefix_cache: Most prompt tokens whose keys and values are kept
            (:mod:`agentworld_envs.backends.prefix_cache`): a prompt that starts with a kept
            one, as a simulated env's next step starts with its last, is prefilled only from
            where the two part. 0 (the default) keeps none. Each kept token costs
            ``2 × layers × key-value heads × head size`` numbers (46 KB for the embedded
            model in float32). Used wherever decoding is ragged (not with ``generate``'s
            settings or the static cache).
        cache: ``"dynamic"`` (the default: ragged decoding, or ``generate`` with its dynamic
            cache) or ``"static"``: ``generate`` with transformers' static cache, which
            ``generate`` compiles on CUDA (and XPU, TPU). So the compiled decode step's shapes
            repeat, a batch is padded up to :func:`bucket_rows` rows (copies of its first
            prompt, dropped from the result), prompts are left-padded to
            :func:`bucket_length`, and the cache to ``bucket_length(prompt + max_tokens)``
            (``max_new_tokens`` itself stays exact: it is no shape of the graph). The first
            call of each new shape compiles (tens of seconds on a GPU). On a CPU ``generate``
            does not compile (compiling the tiny test model there took 32 s, then decoded
            slower than eager), and the eager static cache is about 20% slower than the
            dynamic one. Greedy and seeded tokens equal the dynamic cache's (tested on a CPU).

    ``SamplingParams.extra`` may hold ``chat_template_kwargs`` (passed to the chat template);
    its other keys set ``GenerationConfig`` fields such as ``repetition_penalty`` or
    ``min_new_tokens``. ``Completion.raw`` holds the generated token ids.
    """

    name = "hf"

    def __init__(
        self,
        model: str,
        device: str = "cpu",
        dtype: str = "auto",
        batch_size: int = 8,
        enable_thinking: bool | None = None,
        adapter: str | None = None,
        view: str | None = None,
        greedy_memo: int = 0,
        cache: str = "dynamic",
        draft: str = "prompt",
        prefix_cache: int = 0,
    ) -> None:
        torch, transformers = _import_hf()  # first, for its install hint; nothing loads yet
        _check_settings(model, dtype, batch_size, enable_thinking, adapter, view, greedy_memo,
                        cache, draft, prefix_cache)
        try:
            torch.device(device)
        except (RuntimeError, TypeError):
            raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda:0', not "
                             f"{device!r}") from None
        self.model = model
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.enable_thinking = enable_thinking
        self.adapter = adapter
        self.view = view
        self.greedy_memo = greedy_memo
        self.cache = cache
        self.draft = draft
        self.prefix_cache = prefix_cache
        self._memo = GreedyMemo(greedy_memo)
        self._view = _view(view)
        self._torch = torch
        from agentworld_envs.models.pretrained import resolve_model

        folder = resolve_model(model)
        self._tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        self._tokenizer.padding_side = "left"
        if self._tokenizer.pad_token is None:
            self._tokenizer.pad_token = self._tokenizer.eos_token
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
        self._model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype)
        if adapter:
            self._model = _merged(self._model, adapter)
        self._model.to(device).eval()
        eos = self._model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        self._eos_ids = set(eos) | {self._tokenizer.eos_token_id}
        self._decoder: Any = _UNSET
        self._drafted: Any = None

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the constructor's arguments; unpickling loads the model again."""
        return (type(self), (self.model, self.device, self.dtype, self.batch_size,
                             self.enable_thinking, self.adapter, self.view, self.greedy_memo,
                             self.cache, self.draft, self.prefix_cache))

    def describe(self) -> dict[str, Any]:
        """Settings for run metadata (``cache`` only when static: a default run's are as
        before; ``draft`` always, so ``info["world_model"]`` says whether greedy answers were
        drafted; ``prefix_cache`` when it keeps any)."""
        return {
            "name": self.name,
            "model": self.model,
            "device": self.device,
            "dtype": self.dtype,
            "batch_size": self.batch_size,
            "enable_thinking": self.enable_thinking,
            "adapter": self.adapter,
            "view": self.view,
            "greedy_memo": self.greedy_memo,
            **({"cache": self.cache} if self.cache != "dynamic" else {}),
            "draft": self.draft,
            **({"prefix_cache": self.prefix_cache} if self.prefix_cache else {}),
        }

    def close(self) -> None:
        """Drop the model and free accelerator memory."""
        self._model = None
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()

    def complete(self, requests: Sequence[ChatRequest],
                 hints: Sequence[str | None] | None = None) -> list[Completion]:
        """Generate for every request, batching requests that share sampling settings.

        ``hints`` (one per request, or None) are texts a greedy answer is likely to copy, such
        as the real counterpart's observation: drafts are also taken from them. They change
        only the speed, never an answer.

        Seeds may differ within a batch: each request samples from its own generator. Greedy
        requests that read the same prompt (envs of a vector that play the same action in the
        same state) are generated once and answered alike, and with ``greedy_memo`` an answer
        is reused by later calls too.
        """
        groups: dict[str, list[int]] = {}
        first: dict[str, int] = {}
        copies: dict[int, int] = {}
        results: list[Completion | None] = [None] * len(requests)
        prompts = [self._prompt(r, r.sampling.extra.get("chat_template_kwargs") or {})
                   for r in requests]
        for i, request in enumerate(requests):
            settings = {k: v for k, v in request.sampling.to_dict().items() if k != "seed"}
            key = json.dumps(settings, sort_keys=True, default=str)
            if request.sampling.temperature == 0:
                same = json.dumps([key, prompts[i]])  # all that decides a greedy answer
                if (kept := self._memo.get(same)) is not None:
                    results[i] = kept
                    continue
                if same in first:
                    copies[i] = first[same]
                    continue
                first[same] = i
            groups.setdefault(key, []).append(i)
        for indices in groups.values():
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                batch = self._generate([requests[i] for i in chunk],
                                       [prompts[i] for i in chunk],
                                       [hints[i] for i in chunk] if hints else None)
                for i, completion in zip(chunk, batch, strict=True):
                    results[i] = completion
        for i, source in copies.items():
            results[i] = copy.deepcopy(results[source])
        for same, i in first.items():
            self._memo.put(same, results[i])
        return results  # type: ignore[return-value]

    def _prompt(self, request: ChatRequest, template_kwargs: dict[str, Any]) -> str:
        kwargs = dict(template_kwargs)
        if self.enable_thinking is not None:
            kwargs.setdefault("enable_thinking", self.enable_thinking)
        messages = self._view(request.messages) if self._view else request.messages
        return self._tokenizer.apply_chat_template(
            template_messages(messages),
            tools=request.tools or None,
            add_generation_prompt=True,
            tokenize=False,
            **kwargs,
        )

    def _generation_config(self, sampling: SamplingParams) -> Any:
        """The ``GenerationConfig`` of ``sampling`` (``chat_template_kwargs`` go to the
        template, not here)."""
        extra = {k: v for k, v in sampling.extra.items() if k != "chat_template_kwargs"}
        config = copy.deepcopy(self._model.generation_config)
        unused = config.update(
            max_new_tokens=sampling.max_tokens,
            do_sample=False,
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=self._tokenizer.pad_token_id,
            **extra,
        )
        if unused:
            raise ValueError(f"unknown generation settings in SamplingParams.extra: {unused}")
        return config

    def _generate(self, requests: list[ChatRequest], prompts: list[str],
                  hints: list[str | None] | None = None) -> list[Completion]:
        """Generate for requests that share sampling settings, given their rendered prompts
        (and the hints of drafted decoding)."""
        torch = self._torch
        sampling = requests[0].sampling
        config = self._generation_config(sampling)
        generators = ([_generator(torch, self.device, r.sampling.seed) for r in requests]
                      if sampling.temperature > 0 else [])
        start = time.perf_counter()
        drafts: list[Any] = [None] * len(requests)
        if self.cache == "static":
            rows, lengths = self._static_generate(prompts, config, sampling, generators)
        elif self.draft == "prompt" and sampling.temperature == 0 and self._ragged(config):
            ids = self._token_ids(prompts)
            hint_ids = [self._token_ids([h])[0] if h else [] for h in hints or [None] * len(ids)]
            rows, drafts = self._drafter().decode(ids, sampling.max_tokens, self._eos_ids,
                                                  hint_ids)
            lengths = [len(i) for i in ids]
        elif (len(requests) > 1 or self.prefix_cache) and self._ragged(config):
            ids = self._token_ids(prompts)
            rows = self._decoder.decode(ids, sampling.max_tokens, self._eos_ids,
                                        _picker(self._sampler(sampling, generators), generators))
            lengths = [len(i) for i in ids]
        else:
            rows, lengths = self._padded_generate(prompts, config,
                                                  self._sampler(sampling, generators))
        latency_s = time.perf_counter() - start
        completions = []
        for new_ids, request, length, draft in zip(rows, requests, lengths, drafts, strict=True):
            ends = [j for j, token in enumerate(new_ids) if token in self._eos_ids]
            if ends:
                new_ids, finish = new_ids[: ends[0] + 1], "stop"
            else:
                finish = "length" if len(new_ids) >= sampling.max_tokens else "stop"
            text = self._tokenizer.decode(new_ids, skip_special_tokens=True)
            text, stopped = cut_at_stop(text, request.sampling.stop)
            completions.append(Completion(
                text=text,
                tool_calls=text_tool_calls(text),
                finish_reason="stop" if stopped else finish,
                usage=Usage(input_tokens=length, output_tokens=len(new_ids)),
                latency_s=latency_s,
                raw={"token_ids": new_ids, **({"draft": draft.to_dict()} if draft else {})},
            ))
        return completions

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        return [self._tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]

    def _drafter(self) -> Any:
        """The drafted decoder on the ragged one (which :meth:`_ragged` made), made once: it
        drafts from its last answers too."""
        if self._drafted is None:
            from agentworld_envs.backends.drafting import DraftedDecoder

            self._drafted = DraftedDecoder(self._torch, self._decoder,
                                           self._tokenizer.pad_token_id)
        return self._drafted

    def _ragged(self, config: Any) -> bool:
        """Whether a batch can use ragged decoding (a single prompt has no padding to skip, and
        ``generate`` is as fast there, unless kept prefixes save its prefill): its generation
        settings make no logits processor (no ``SamplingParams.extra`` such as
        ``repetition_penalty``, none in the model's own generation config), and the model's
        cache allows it."""
        if set(config.to_diff_dict()) - _PLAIN_SETTINGS:
            return False
        if self._decoder is _UNSET:
            from agentworld_envs.backends.prefix_cache import PrefixCache
            from agentworld_envs.backends.ragged import ragged_decoder

            prefixes = PrefixCache(self.prefix_cache) if self.prefix_cache else None
            self._decoder = ragged_decoder(self._torch, self._model, prefixes)
        return self._decoder is not None

    def _sampler(self, sampling: SamplingParams, generators: list[Any]) -> _GumbelSampler | None:
        """The sampler drawing a row from each of ``generators``; None when greedy."""
        if sampling.temperature == 0:
            return None
        return _GumbelSampler(self._torch, generators, sampling.temperature,
                              1.0 if sampling.top_p is None else sampling.top_p)

    def _static_generate(self, prompts: list[str], config: Any, sampling: SamplingParams,
                         generators: list[Any]) -> tuple[list[list[int]], list[int]]:
        """``generate`` on the static cache at bucket shapes (see ``cache``). The spare rows
        repeat the first prompt and its generator's state, so they end when it does."""
        ids = self._token_ids(prompts)
        spare = bucket_rows(len(ids), self.batch_size) - len(ids)
        length = bucket_length(max(len(row) for row in ids))
        config.cache_implementation = "static"
        config.max_cache_len = bucket_length(length + config.max_new_tokens)
        inputs = self._tokenizer.pad({"input_ids": ids + [ids[0]] * spare},
                                     padding="max_length", max_length=length, return_tensors="pt")
        spares = [_copied(self._torch, generators[0]) for _ in range(spare if generators else 0)]
        rows, lengths = self._run_generate(inputs, config,
                                           self._sampler(sampling, generators + spares))
        return rows[: len(prompts)], lengths[: len(prompts)]

    def _padded_generate(self, prompts: list[str], config: Any,
                         sampler: _GumbelSampler | None) -> tuple[list[list[int]], list[int]]:
        """New token ids and prompt lengths from ``generate`` on a left-padded batch."""
        inputs = self._tokenizer(prompts, return_tensors="pt", padding=True,
                                 add_special_tokens=False)
        return self._run_generate(inputs, config, sampler)

    def _run_generate(self, inputs: Any, config: Any,
                      sampler: _GumbelSampler | None) -> tuple[list[list[int]], list[int]]:
        """New token ids and prompt lengths from ``generate`` on tokenized, left-padded
        ``inputs``."""
        inputs = inputs.to(self.device)
        with self._torch.inference_mode():
            output = self._model.generate(
                **inputs, generation_config=config, logits_processor=[sampler] if sampler else []
            )
        prompt_len = inputs["input_ids"].shape[1]
        return ([output[row, prompt_len:].tolist() for row in range(len(output))],
                [int(n) for n in inputs["attention_mask"].sum(dim=1)])


_UNSET = object()
_PLAIN_SETTINGS = {
    "max_new_tokens", "do_sample", "pad_token_id", "bos_token_id", "eos_token_id", "use_cache",
    "output_attentions", "output_hidden_states", "_from_model_config", "transformers_version",
}


def _picker(sampler: _GumbelSampler | None, generators: list[Any]) -> Any:
    """The ragged decoder's token choice: the argmax of the (sampled) scores."""
    def pick(rows: list[int], scores: Any) -> Any:
        scores = scores.float()
        if sampler is not None:
            scores = sampler.perturb(scores, [generators[row] for row in rows])
        return scores.argmax(dim=-1)
    return pick


def _is_count(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _check_settings(model: Any, dtype: Any, batch_size: Any, enable_thinking: Any,
                    adapter: Any, view: Any, greedy_memo: Any, cache: Any, draft: Any,
                    prefix_cache: Any) -> None:
    """Refuse a bad setting before anything loads; the message names the allowed values.

    Raises:
        ValueError: naming every bad setting.
    """
    from agentworld_envs.models.compact_view import VIEWS

    problems = [problem for bad, problem in (
        (not isinstance(model, str) or not model, f"model must be a folder or a hub name, not "
                                                   f"{model!r}"),
        (dtype not in DTYPES, f"dtype must be one of {DTYPES}, not {dtype!r}"),
        (not _is_count(batch_size, 1), f"batch_size must be an integer >= 1, not {batch_size!r}"),
        (not (enable_thinking is None or isinstance(enable_thinking, bool)),
         f"enable_thinking must be True, False or None, not {enable_thinking!r}"),
        (view is not None and view not in VIEWS, f"view must be one of {sorted(VIEWS)} or None, "
                                                 f"not {view!r}"),
        (not _is_count(greedy_memo, 0), f"greedy_memo must be an integer >= 0 (0 keeps none), "
                                        f"not {greedy_memo!r}"),
        (cache not in CACHES, f"cache must be one of {CACHES}, not {cache!r}"),
        (draft not in DRAFTS, f"draft must be one of {DRAFTS}, not {draft!r}"),
        (not _is_count(prefix_cache, 0), f"prefix_cache must be an integer >= 0 (0 keeps none), "
                                         f"not {prefix_cache!r}"),
    ) if bad]
    problems += [problem for name, value in (("model", model), ("adapter", adapter))
                 if isinstance(value, str) and (problem := _unreachable(name, value))]
    if adapter is not None and not isinstance(adapter, str):
        problems.append(f"adapter must be a folder or None, not {adapter!r}")
    if problems:
        raise ValueError("; ".join(problems))


def _unreachable(name: str, value: str) -> str | None:
    """Why ``value`` cannot be loaded without a network attempt that must fail, if it cannot:
    a shipped adapter's name, a local-looking path that does not exist, or a hub name while
    the hub is off."""
    from agentworld_envs.models import ADAPTERS
    from agentworld_envs.models.pretrained import BASES

    if value in BASES or Path(value).expanduser().exists():
        return None
    if name == "adapter" and value in ADAPTERS:
        return (f"adapter {value!r} is a shipped adapter's name: use the 'embedded' backend "
                f"with adapter={value!r}, which also sets its view")
    if value.startswith((".", "/", "~")) or value.count("/") > 1:
        return f"{name} {value!r} is no folder"
    if any(os.environ.get(flag, "").lower() in ("1", "true", "yes", "on")
           for flag in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return f"{name} {value!r} is no folder, and the hub is off (HF_HUB_OFFLINE)"
    return None


def _view(name: str | None) -> Any:
    if name is None:
        return None
    from agentworld_envs.models.compact_view import VIEWS

    return VIEWS[name]


def _merged(model: Any, adapter: str) -> Any:
    """``model`` with the LoRA adapter folder ``adapter`` merged into its weights."""
    try:
        from peft import PeftModel
    except ImportError as exc:
        raise ImportError('loading an adapter needs peft: pip install "agentworld[hf]"') from exc
    return PeftModel.from_pretrained(model, adapter).merge_and_unload()


def _copied(torch: Any, generator: Any) -> Any:
    """A new generator in ``generator``'s state: it draws what ``generator`` will draw."""
    copy_ = torch.Generator(device=generator.device)
    copy_.set_state(generator.get_state())
    return copy_


def _generator(torch: Any, device: str, seed: int | None) -> Any:
    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    return generator
