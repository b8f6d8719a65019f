"""A turn-level ``rollout_func`` for TRL's ``GRPOTrainer`` that keeps our env semantics.

Each assistant turn is generated whole, decoded and played through one ``env.step``, exactly as
the harness does (``Completion.to_action``: calls parsed from the text, else the text), so the
step budget counts turns, unknown tools are labelled hallucinated, broken calls malformed, every
action format reaches the env's own parser and the verdict is the verifier's. All unfinished
episodes of a batch advance together: one generation call per turn.

Wiring (TRL 1.16)::

    trainer = GRPOTrainer(model, args=config, train_dataset=rows,
                          environment_factory=turn_environment_class("AgentFloor/A1-v0"),
                          rollout_func=TurnRollout(), reward_funcs=[environment_reward])

TRL resets one pooled env per rollout from its dataset row (``trainer.environments``) and then
calls the rollout with the prompts; the env class has no tool methods, so TRL runs no tool loop
of its own. The completion is every turn's tokens with the env's feedback in between, masked out
of the loss through ``env_mask``.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld_envs.backends import Completion
from agentworld_envs.backends.replies import text_tool_calls
from agentworld_envs.trl.environment import EnvSession, import_trl

__all__ = ["TurnRollout", "turn_environment_class", "feedback_messages"]


def turn_environment_class(env_id: str, **make_kwargs: Any) -> type[EnvSession]:
    """The env class for :class:`TurnRollout`: ``reset(**row)`` only, no tool methods."""
    return type("Turn" + env_id.replace("/", "_").replace("-", "_"), (EnvSession,),
                {"env_id": env_id, "make_kwargs": dict(make_kwargs)})


def feedback_messages(completion: Completion, session: EnvSession,
                      observation: str) -> list[dict[str, Any]]:
    """The messages that carry a step's observation back to the model, as the harness adds them.

    A turn whose text held tool calls gets one ``tool`` message per call with its envelope; any
    other turn gets the observation (if any) as a user message, ``Tool results:`` first for
    envs that report tool results.
    """
    envelopes = session.last_info.get("tool_results")
    if completion.tool_calls and envelopes is not None:
        return [{"role": "tool", "name": call.name, "content": json.dumps(
            envelopes[i], ensure_ascii=False, default=str) if i < len(envelopes)
            else '{"status": "skipped"}'} for i, call in enumerate(completion.tool_calls)]
    if not observation:
        return []
    prefix = "Tool results:\n" if envelopes is not None else ""
    return [{"role": "user", "content": f"{prefix}{observation}"}]


class _Template:
    """Renders prompts and feedback with a prefix-preserving chat template, as TRL does."""

    def __init__(self, tokenizer: Any, kwargs: dict[str, Any]) -> None:
        utils = import_trl().chat_template_utils
        self.tokenizer, self.kwargs = tokenizer, kwargs
        self.template = None if utils.is_chat_template_prefix_preserving(tokenizer) \
            else utils.get_training_chat_template(tokenizer)

    def ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
            generation_prompt: bool) -> list[int]:
        return list(self.tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=generation_prompt,
            tokenize=True, return_dict=False, chat_template=self.template, **self.kwargs))

    def suffix(self, messages: list[dict[str, Any]]) -> list[int]:
        """Tokens of ``messages`` plus the next generation prompt, after an assistant turn."""
        calls = [{"type": "function", "function": {"name": m.get("name", "tool"), "arguments": {}}}
                 for m in messages if m["role"] == "tool"]
        head = [{"role": "user", "content": "x"},
                {"role": "assistant", "content": "", **({"tool_calls": calls} if calls else {})}]
        prefix = self.ids(head, None, False)
        full = self.ids(head + messages, None, True)
        eos = [i for i, token in enumerate(prefix) if token == self.tokenizer.eos_token_id]
        if eos:
            prefix = prefix[: eos[-1] + 1]
        if full[: len(prefix)] != prefix:
            raise ValueError("the chat template is not prefix-preserving around tool results")
        return full[len(prefix):]


class TurnRollout:
    """``rollout_func`` playing whole assistant turns through ``env.step``.

    Use with an ``environment_factory`` from :func:`turn_environment_class` (a single class or
    TRL's dict of classes) and ``reward_funcs=[environment_reward]``. Episodes are played to
    their end (final answer, submission or step budget), whatever their length; the training
    sequence is then cut at ``max_completion_length`` tokens, so set it to cover a whole episode.

    Each turn is generated through the trainer's own generation path (``generate``, or vLLM
    when ``use_vllm``), with its sampling settings; ``max_completion_length`` also caps a turn.
    """

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer: Any) -> dict[str, Any]:
        sessions: list[EnvSession] = trainer.environments
        if sessions is None or len(sessions) != len(prompts):
            raise ValueError("TurnRollout needs GRPOTrainer(environment_factory="
                             "turn_environment_class(...)): one env per prompt")
        tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        template = _Template(tokenizer, trainer.chat_template_kwargs)
        eos = {tokenizer.eos_token_id, *trainer.eos_token_ids}
        prompt_ids = [template.ids(p, s.tools, True) for p, s in zip(prompts, sessions,
                                                                     strict=True)]
        completion_ids: list[list[int]] = [[] for _ in prompts]
        env_mask: list[list[int]] = [[] for _ in prompts]
        logprobs: list[list[float]] = [[] for _ in prompts]
        sampled_logprobs = False
        active = [i for i, session in enumerate(sessions) if not session.done]
        while active:
            new_ids, new_logprobs = trainer._generate_single_turn(
                [prompt_ids[i] + completion_ids[i] for i in active], None, {}, 1)
            sampled_logprobs = new_logprobs is not None
            for k, i in enumerate(active):
                ids = list(new_ids[k])
                completion_ids[i] += ids
                env_mask[i] += [1] * len(ids)
                logprobs[i] += list(new_logprobs[k]) if sampled_logprobs else [0.0] * len(ids)
                text = tokenizer.decode(ids, skip_special_tokens=True)
                completion = Completion(text=text, tool_calls=text_tool_calls(text))
                observation = sessions[i]._step(completion.to_action())
                if sessions[i].done:
                    continue
                closing = [] if ids and ids[-1] in eos else [tokenizer.eos_token_id]
                feedback = closing + template.suffix(
                    feedback_messages(completion, sessions[i], observation))
                completion_ids[i] += feedback
                env_mask[i] += [0] * len(feedback)
                logprobs[i] += [0.0] * len(feedback)
            active = [i for i in active if not sessions[i].done]
        limit = trainer.max_completion_length
        return {"prompt_ids": prompt_ids,
                "completion_ids": [ids[:limit] for ids in completion_ids],
                "logprobs": [lp[:limit] for lp in logprobs] if sampled_logprobs else None,
                "env_mask": [mask[:limit] for mask in env_mask]}
