"""In-process backend: a transformers causal LM, generating in left-padded batches.

torch and transformers are imported when a backend is built, never at package import.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

from agentworld_envs.backends.base import Backend, BackendError
from agentworld_envs.backends.bucketing import bucket_length, bucket_rows
from agentworld_envs.backends.cancelling import (
    InFlight,
    cancel_criterion,
    raise_if_cancelled,
    stop_hook,
)
from agentworld_envs.backends.chat_template import chat_view, template_messages
from agentworld_envs.backends.generation_config import generation_config, needs_generate
from agentworld_envs.backends.greedy_memo import GreedyMemo
from agentworld_envs.backends.hf_loading import context_length, import_hf, load_model
from agentworld_envs.backends.hf_settings import check_settings
from agentworld_envs.backends.replies import text_tool_calls
from agentworld_envs.backends.sampling import (
    GumbelSampler,
    copied,
    generator,
    greedy_when_cold,
    picker,
)
from agentworld_envs.backends.stops import StopWatch, cut_at_end, cut_at_stop, tokens_to_stop
from agentworld_envs.protocol.chat import ChatRequest, Completion, SamplingParams, Usage

__all__ = ["HFBackend"]


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
            their prompt, the request's ``draft_hint`` and the last answers
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

        draft_corpus: A file of answers the model was trained to write (JSON lines, each a
            string, :func:`~agentworld_envs.backends.drafting.read_corpus`), drafted from
            where a row's prompt, hint and the last answers hold no strong match (text no
            prompt holds, such as an error message); it changes only the speed. The
            embedded adapters ship theirs.

    ``SamplingParams.extra`` may hold ``chat_template_kwargs`` (passed to the chat template);
    its other keys set ``GenerationConfig`` fields such as ``repetition_penalty`` or
    ``min_new_tokens``. ``Completion.raw`` holds the generated token ids, up to and including
    the end token or the one that completes a stop string (``usage.output_tokens`` counts
    them); the text leaves the stop string out.
    """

    name = "hf"
    cancels_each_call = True  # a call's scope raises its flag alone (InFlight.call)

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
        draft_corpus: str | None = None,
    ) -> None:
        torch, transformers = import_hf()  # first, for its install hint; nothing loads yet
        check_settings(model, dtype, batch_size, enable_thinking, adapter, view, greedy_memo,
                       cache, draft, prefix_cache, draft_corpus)
        from agentworld_envs.backends.drafting import read_corpus

        answers = read_corpus(draft_corpus) if draft_corpus else []
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
        self.draft_corpus = draft_corpus
        self._corpus_answers = answers
        self._memo = GreedyMemo(greedy_memo)
        self._view = chat_view(view)
        self._torch = torch
        self._tokenizer, self._model, self._eos_ids = load_model(torch, transformers, model,
                                                                 device, dtype, adapter)
        self._context = context_length(self._model)
        self._decoder: Any = _UNSET
        self._drafted: Any = None
        self._in_flight = InFlight()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the constructor's arguments; unpickling loads the model again."""
        return (type(self), (self.model, self.device, self.dtype, self.batch_size,
                             self.enable_thinking, self.adapter, self.view, self.greedy_memo,
                             self.cache, self.draft, self.prefix_cache, self.draft_corpus))

    @staticmethod
    def check_config(**settings: Any) -> None:
        """Raise ``ValueError`` naming every bad setting (:func:`check_settings`: a model or
        adapter that cannot load without a network attempt that must fail included); a
        command checks an ``hf`` config with it, every setting given
        (:func:`~agentworld_envs.backends.check_backend_config`), before it makes anything.
        The device is checked when the backend is made."""
        check_settings(**settings)

    def describe(self) -> dict[str, Any]:
        """Settings for run metadata (``cache`` only when static: a default run's are as
        before; ``draft`` always, so ``info["world_model"]`` says whether greedy answers were
        drafted; ``prefix_cache`` when it keeps any; ``draft_corpus`` when there is one)."""
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
            **({"draft_corpus": self.draft_corpus} if self.draft_corpus else {}),
        }

    def cancel(self) -> None:
        """Cancel every call in flight, from any thread: each stops within one forward pass
        (:mod:`~agentworld_envs.backends.cancelling`), so the model is free for the next call,
        and raises
        :class:`~agentworld_envs.backends.cancelling.CallCancelled`; nothing it decoded is
        kept. A cancelled :class:`~agentworld_envs.backends.cancelling.CallScope` stops its
        call so, and no other."""
        self._in_flight.cancel()

    def close(self) -> None:
        """Cancel the calls in flight; drop the model, its decoders (and the keys and values
        they keep) and the kept answers, and free accelerator memory."""
        self.cancel()
        self._model = self._decoder = self._drafted = None
        self._memo = GreedyMemo(0)
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Generate for every request, batching requests that share sampling settings.

        A request's ``draft_hint`` (a text a greedy answer is likely to copy, such as the real
        counterpart's observation) is drafted from too: it changes only the speed, never an
        answer.

        Seeds may differ within a batch: each request samples from its own generator. Greedy
        requests that read the same prompt (envs of a vector that play the same action in the
        same state) are generated once and answered alike, and with ``greedy_memo`` an answer
        is reused by later calls too.

        A temperature below :data:`~agentworld_envs.backends.sampling.GREEDY_BELOW` decodes
        greedily, as vLLM's does.

        An answer ends where the model's context does (its ``max_position_embeddings``):
        ``max_tokens`` past it are not decoded, and such an answer finishes with ``"length"``
        (requests whose context ends them early are batched apart, so no row runs past its
        context). A row stops decoding once it completes a stop string
        (:class:`~agentworld_envs.backends.stops.StopWatch`), as vLLM's does.

        Raises:
            BackendError: a request's prompt fills the model's context; nothing is generated
                then; the backend is closed. ``CallCancelled`` when :meth:`cancel`, or the
                call's scope, cancelled it.
        """
        if self._model is None:
            raise BackendError(f"the hf backend of {self.model!r} is closed: make another")
        with self._in_flight.call() as cancelled:
            return self._complete(requests, cancelled)

    def _complete(self, requests: Sequence[ChatRequest], cancelled: threading.Event
                  ) -> list[Completion]:
        """:meth:`complete`, whose decoding stops once the event ``cancelled`` is set."""
        requests = [greedy_when_cold(request) for request in requests]
        prompts, ids = self._prompts(requests)
        for row in ids:
            if error := self._too_long(len(row)):
                raise error
        groups: dict[tuple[str, int], list[int]] = {}
        first: dict[str, int] = {}
        copies: dict[int, int] = {}
        results: list[Completion | None] = [None] * len(requests)
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
            # a batch decodes no row past its context: rows it ends early decode apart
            cap = min(request.sampling.max_tokens, self._room(len(ids[i])))
            groups.setdefault((key, cap), []).append(i)
        for indices in groups.values():
            for start in range(0, len(indices), self.batch_size):
                chunk = indices[start : start + self.batch_size]
                raise_if_cancelled(cancelled)
                batch = self._generate([requests[i] for i in chunk], [ids[i] for i in chunk],
                                       cancelled)
                raise_if_cancelled(cancelled)  # its rows were cut short
                for i, completion in zip(chunk, batch, strict=True):
                    results[i] = completion
        for i, source in copies.items():
            results[i] = copy.deepcopy(results[source])
        for same, i in first.items():
            self._memo.put(same, results[i])
        return results  # type: ignore[return-value]

    def complete_each(self, requests: Sequence[ChatRequest]) -> list[Completion | BackendError]:
        """:meth:`complete`, a request whose prompt fills the model's context answered by its
        :class:`BackendError` in its place, the others completed together (their prompts are
        rendered again only then)."""
        with self._in_flight.call():  # one call: a cancel reaches both of its tries
            try:
                return list(self.complete(requests))
            except _PromptFillsContext:
                errors = [self._too_long(len(row)) for row in self._prompts(requests)[1]]
            except BackendError as exc:
                return [exc] * len(requests)
            fitting = [request for request, error in zip(requests, errors, strict=True)
                       if error is None]
            completed = iter(super().complete_each(fitting) if fitting else [])
            return [error or next(completed) for error in errors]

    def _prompts(self, requests: Sequence[ChatRequest]) -> tuple[list[str], list[list[int]]]:
        """The prompts the model reads, as text and as token ids."""
        prompts = [self._prompt(r, r.sampling.extra.get("chat_template_kwargs") or {})
                   for r in requests]
        return prompts, self._token_ids(prompts)

    def _room(self, prompt_tokens: int) -> int:
        """New tokens the model's context leaves after a prompt of ``prompt_tokens``."""
        return self._context - prompt_tokens if self._context is not None else 1 << 62

    def _too_long(self, prompt_tokens: int) -> BackendError | None:
        """The error of a prompt that leaves no room in the model's context; None when it
        does."""
        if self._room(prompt_tokens) > 0:
            return None
        return _PromptFillsContext(f"the prompt has {prompt_tokens} tokens and the model's "
                                   f"context is {self._context}: shorten the prompt")

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
        return generation_config(self._model.generation_config, sampling,
                                 self._tokenizer.pad_token_id)

    def _generate(self, requests: list[ChatRequest], ids: list[list[int]],
                  cancelled: threading.Event) -> list[Completion]:
        """Generate for requests that share sampling settings, given their prompts' token
        ids; every row stops once the event ``cancelled`` is set."""
        torch = self._torch
        sampling = requests[0].sampling
        caps = [min(sampling.max_tokens, self._room(len(row))) for row in ids]
        if max(caps) < sampling.max_tokens:  # the context ends every row first
            sampling = dataclasses.replace(sampling, max_tokens=max(caps))
        config = self._generation_config(sampling)
        generators = ([generator(torch, self.device, r.sampling.seed) for r in requests]
                      if sampling.temperature > 0 else [])
        watch = StopWatch(sampling.stop, self._decode) if any(sampling.stop) else None
        stopped = stop_hook(cancelled, watch)
        interrupt = functools.partial(raise_if_cancelled, cancelled)
        criteria = [cancel_criterion(torch, cancelled)]
        start = time.perf_counter()
        drafts: list[Any] = [None] * len(requests)
        if self.cache == "static":
            rows = self._static_generate(ids, config, sampling, generators, watch, criteria)
        elif self.draft == "prompt" and sampling.temperature == 0 and self._ragged(config):
            hint_ids = [self._token_ids([r.draft_hint])[0] if r.draft_hint else []
                        for r in requests]
            rows, drafts = self._drafter().decode(ids, sampling.max_tokens, self._eos_ids,
                                                  hint_ids, stopped, interrupt)
        elif (len(requests) > 1 or self.prefix_cache) and self._ragged(config):
            rows = self._decoder.decode(ids, sampling.max_tokens, self._eos_ids,
                                        picker(self._sampler(sampling, generators), generators),
                                        stopped, interrupt)
        else:
            rows = self._padded_generate(ids, config, self._sampler(sampling, generators), watch,
                                         criteria)
        latency_s = time.perf_counter() - start
        completions = []
        for new_ids, prompt, draft, cap in zip(rows, ids, drafts, caps, strict=True):
            new_ids, finish = cut_at_end(new_ids[:cap], self._eos_ids, cap)
            new_ids = tokens_to_stop(new_ids, sampling.stop, self._decode)
            text, stopped = cut_at_stop(self._decode(new_ids), sampling.stop)
            completions.append(Completion(
                text=text,
                tool_calls=text_tool_calls(text),
                finish_reason="stop" if stopped else finish,
                usage=Usage(input_tokens=len(prompt), output_tokens=len(new_ids)),
                latency_s=latency_s,
                raw={"token_ids": new_ids, **({"draft": draft.to_dict()} if draft else {})},
            ))
        return completions

    def _decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids, skip_special_tokens=True)

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        return [self._tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]

    def _drafter(self) -> Any:
        """The drafted decoder on the ragged one (which :meth:`_ragged` made), made once: it
        drafts from its last answers and the ``draft_corpus`` too."""
        if self._drafted is None:
            from agentworld_envs.backends.drafting import DraftCorpus, DraftedDecoder

            corpus = (DraftCorpus(self._token_ids(self._corpus_answers), self._end_id())
                      if self._corpus_answers else None)
            self._drafted = DraftedDecoder(self._torch, self._decoder,
                                           self._tokenizer.pad_token_id, corpus=corpus)
        return self._drafted

    def _end_id(self) -> int | None:
        """The token that ends an answer: the tokenizer's end token where it ends answers, else
        the lowest that does (None for a model with none)."""
        ends = {token for token in self._eos_ids if token is not None}
        end = self._tokenizer.eos_token_id
        return end if end in ends else min(ends, default=None)

    def _ragged(self, config: Any) -> bool:
        """Whether a batch can use ragged decoding (a single prompt has no padding to skip, and
        ``generate`` is as fast there, unless kept prefixes save its prefill): its generation
        settings make no logits processor (no ``SamplingParams.extra`` such as
        ``repetition_penalty``, none in the model's own generation config), and the model's
        cache allows it."""
        if needs_generate(config):
            return False
        if self._decoder is _UNSET:
            from agentworld_envs.backends.prefix_cache import PrefixCache
            from agentworld_envs.backends.ragged import ragged_decoder

            prefixes = PrefixCache(self.prefix_cache) if self.prefix_cache else None
            self._decoder = ragged_decoder(self._torch, self._model, prefixes)
        return self._decoder is not None

    def _sampler(self, sampling: SamplingParams, generators: list[Any]) -> GumbelSampler | None:
        """The sampler drawing a row from each of ``generators``; None when greedy."""
        if sampling.temperature == 0:
            return None
        return GumbelSampler(self._torch, generators, sampling.temperature,
                             1.0 if sampling.top_p is None else sampling.top_p, sampling.top_k)

    def _static_generate(self, ids: list[list[int]], config: Any, sampling: SamplingParams,
                         generators: list[Any], watch: StopWatch | None,
                         criteria: Sequence[Any]) -> list[list[int]]:
        """New token ids from ``generate`` on the static cache at bucket shapes (see
        ``cache``). The spare rows repeat the first prompt and its generator's state, so they
        end when it does."""
        spare = bucket_rows(len(ids), self.batch_size) - len(ids)
        length = bucket_length(max(len(row) for row in ids))
        config.cache_implementation = "static"
        config.max_cache_len = bucket_length(length + config.max_new_tokens)
        inputs = self._tokenizer.pad({"input_ids": ids + [ids[0]] * spare},
                                     padding="max_length", max_length=length, return_tensors="pt")
        spares = [copied(self._torch, generators[0]) for _ in range(spare if generators else 0)]
        rows = self._run_generate(inputs, config, self._sampler(sampling, generators + spares),
                                  watch, criteria)
        return rows[: len(ids)]

    def _padded_generate(self, ids: list[list[int]], config: Any, sampler: GumbelSampler | None,
                         watch: StopWatch | None = None, criteria: Sequence[Any] = ()
                         ) -> list[list[int]]:
        """New token ids from ``generate`` on the prompts ``ids``, left-padded."""
        return self._run_generate(self._tokenizer.pad({"input_ids": ids}, return_tensors="pt"),
                                  config, sampler, watch, criteria)

    def _run_generate(self, inputs: Any, config: Any, sampler: GumbelSampler | None,
                      watch: StopWatch | None, criteria: Sequence[Any]) -> list[list[int]]:
        """New token ids from ``generate`` on tokenized, left-padded ``inputs``; a row ends
        once ``watch`` sees its stop string, every row once one of ``criteria`` says so."""
        inputs = inputs.to(self.device)
        prompt_len = inputs["input_ids"].shape[1]
        with self._torch.inference_mode():
            output = self._model.generate(
                **inputs, generation_config=config, logits_processor=[sampler] if sampler else [],
                stopping_criteria=[*criteria, *([watch.criterion(self._torch, prompt_len)]
                                                if watch else [])],
            )
        return [output[row, prompt_len:].tolist() for row in range(len(output))]


class _PromptFillsContext(BackendError):
    """A request's prompt leaves no room in the model's context."""


_UNSET = object()
