"""A turn-level ``rollout_func`` for TRL's ``GRPOTrainer`` that keeps our env semantics.

Each assistant turn is generated whole, decoded and played through one ``env.step``, exactly as
the harness does (``Completion.to_action``: the text, or a server's structured calls), so the
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

Past one machine, :func:`vector_environment_class` makes the sessions the sub-envs of one
:class:`~agentworld_envs.distributed.RayVectorEnv` (``group_size`` = ``num_generations``): each
turn is then one step of the vector env, its sub-envs in Ray actors.
"""

from __future__ import annotations

from typing import Any

from gymnasium.vector import VectorEnv

from agentworld_envs.backends import Completion
from agentworld_envs.backends.replies import text_tool_calls
from agentworld_envs.distributed.slots import SlotEnv, VectorSlots
from agentworld_envs.protocol.tool_results import call_answers, tool_results_message
from agentworld_envs.trl.environment import EnvSession, import_trl

__all__ = ["TurnRollout", "turn_environment_class", "vector_environment_class",
           "feedback_messages"]


def turn_environment_class(env_id: str, **make_kwargs: Any) -> type[EnvSession]:
    """The env class for :class:`TurnRollout`: ``reset(**row)`` only, no tool methods."""
    return type("Turn" + env_id.replace("/", "_").replace("-", "_"), (EnvSession,),
                {"env_id": env_id, "make_kwargs": dict(make_kwargs)})


def vector_environment_class(envs: VectorEnv) -> type[EnvSession]:
    """The env class for :class:`TurnRollout` whose k-th instance plays sub-env k of ``envs``.

    ``envs`` is typically ``RayVectorEnv(env_id, n, group_size=num_generations, ...)`` with
    ``n`` the sessions TRL makes (the generation batch; the probe instance TRL makes first is
    sub-env 0, reused in the first batch). Each row's reset resets its sub-env alone; each turn
    steps all of them at once (:class:`~agentworld_envs.distributed.slots.VectorSlots`). The
    caller closes ``envs``.
    """
    slots = VectorSlots(envs)

    def __init__(self: EnvSession) -> None:
        EnvSession.__init__(self, slots.claim())

    return type(f"{type(envs).__name__}Session", (EnvSession,),
                {"env_id": getattr(envs, "env_id", type(envs).__name__), "__init__": __init__})


def feedback_messages(completion: Completion, session: EnvSession,
                      observation: str) -> list[dict[str, Any]]:
    """The messages that carry a step's observation back to the model, as the harness adds them.

    A turn whose text held tool calls gets one ``tool`` message per call with its own envelope
    (:func:`~agentworld_envs.protocol.tool_results.call_answers`), then the env's notes about the
    turn (calls it could not read) as a ``Tool results:`` user message
    (:func:`~agentworld_envs.protocol.tool_results.tool_results_message`); any other turn gets
    the observation (if any) as a user message, ``Tool results:`` first for envs that report
    tool results.
    """
    envelopes = session.last_info.get("tool_results")
    if completion.tool_calls and envelopes is not None:
        calls = completion.tool_calls
        contents, notes = call_answers(len(calls), envelopes)
        messages = [{"role": "tool", "name": call.name, "content": content}
                    for call, content in zip(calls, contents, strict=True)]
        return messages + ([tool_results_message(*notes)] if notes else [])
    if not observation:
        return []
    return [tool_results_message(observation) if envelopes is not None
            else {"role": "user", "content": observation}]


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


def _play(sessions: list[EnvSession], actions: list[str]) -> list[str]:
    """Each session's observation after its action; sessions on sub-envs of one vector env
    (:func:`vector_environment_class`) step it once, together."""
    together: dict[int, tuple[VectorSlots, dict[int, str]]] = {}
    for session, action in zip(sessions, actions, strict=True):
        if isinstance(session.env, SlotEnv):
            slots = session.env.slots
            together.setdefault(id(slots), (slots, {}))[1][session.env.index] = action
    for slots, slot_actions in together.values():
        slots.step_together(slot_actions)
    return [session._step(action) for session, action in zip(sessions, actions, strict=True)]


def _check_groups(sessions: list[EnvSession], num_generations: int) -> None:
    """Sessions whose info names a group (a ``RayVectorEnv``'s sub-envs): each of TRL's training
    generation groups (``num_generations`` consecutive rollouts of one row) must be one group
    of the vector env, so that its members sample the world model in their own streams."""
    groups = [session.last_info.get("group") for session in sessions]
    if any(group is None for group in groups):
        return
    trl_groups = [groups[start:start + num_generations]
                  for start in range(0, len(groups), num_generations)]
    if any(len(set(g)) != 1 for g in trl_groups) or len({g[0] for g in trl_groups}) != len(
            trl_groups):
        raise ValueError(f"TRL's generation groups of {num_generations} rollouts fall on the "
                         f"vector env's groups {groups}: make the RayVectorEnv with "
                         f"group_size={num_generations} (num_generations)")


def _context_tokens(trainer: Any) -> float:
    """The longest sequence the trainer's model may read: its config's
    ``max_position_embeddings`` (unbounded without one), or vLLM's ``vllm_max_model_length``
    when that is set and smaller."""
    config = getattr(trainer.model, "config", None)
    limit = float(getattr(config, "max_position_embeddings", None) or float("inf"))
    vllm_limit = getattr(trainer.args, "vllm_max_model_length", None)
    if getattr(trainer, "use_vllm", False) and vllm_limit:
        limit = min(limit, float(vllm_limit))
    return limit


def _check_room(prompt_ids: list[list[int]], context: float, turn: int) -> None:
    """Raise when a prompt leaves no room in ``context`` for a first turn of ``turn`` tokens:
    its episode could play nothing, and TRL cannot take an empty completion."""
    longest = max((len(ids) for ids in prompt_ids), default=0)
    if longest + turn > context:
        raise ValueError(f"a prompt of {longest} tokens leaves no room for a turn of "
                         f"max_completion_length {turn} in the model's context of {context:.0f} "
                         f"tokens: shorten the prompts or lower max_completion_length")


def _kept(ids: list[int], limit: int, ends: set[int]) -> int:
    """How many of an episode's tokens to keep: all that fit in ``limit``; an episode cut there
    also loses the end tokens it would end on, since TRL reads a completion ending in one as
    finished (not truncated: ``mask_truncated_completions``, ``clipped_ratio``)."""
    if len(ids) <= limit:
        return len(ids)
    kept = limit
    while kept > 1 and ids[kept - 1] in ends:
        kept -= 1
    return kept


class TurnRollout:
    """``rollout_func`` playing whole assistant turns through ``env.step``.

    Use with an ``environment_factory`` from :func:`turn_environment_class` (a single class or
    TRL's dict of classes), or :func:`vector_environment_class` for sub-envs in Ray actors, and
    ``reward_funcs=[environment_reward]``. Episodes are played to their end (final answer,
    submission or step budget), or until the next turn could not fit the model's context (its
    ``max_position_embeddings``, or ``vllm_max_model_length`` with vLLM): such an episode is
    left unfinished (:attr:`~agentworld_envs.trl.environment.EnvSession.cut_short`: the reward
    plays no final turn) and scored as TRL scores one it cut short, rather than decoded past the
    positions the model knows (``generate``) or refused (vLLM); a prompt that leaves no room
    for a first turn raises ``ValueError``. ``max_completion_length`` bounds the whole episode,
    turns and feedback, as it bounds TRL's own tool loop: a turn that would end past it is cut
    there and played as cut, and an episode still open at the budget is left unfinished
    likewise, so that the reward judges the tokens the training sequence holds. That sequence
    is cut there (before any end token, so that TRL reads it as truncated).

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
        if trainer.model.training:  # evaluation may group rollouts otherwise
            _check_groups(sessions, trainer.num_generations)
        context = _context_tokens(trainer)
        budget = trainer.max_completion_length
        _check_room(prompt_ids, context, budget)
        room = context - budget  # a turn's own budget
        active = [i for i, session in enumerate(sessions) if not session.done]
        while active := [i for i in active if len(prompt_ids[i]) + len(completion_ids[i])
                         <= room and len(completion_ids[i]) < budget]:
            new_ids, new_logprobs = trainer._generate_single_turn(
                [prompt_ids[i] + completion_ids[i] for i in active], None, {}, 1)
            sampled_logprobs = new_logprobs is not None
            turns = []
            for k, i in enumerate(active):
                ids = list(new_ids[k])[:budget - len(completion_ids[i])]  # as TRL cuts a turn
                completion_ids[i] += ids
                env_mask[i] += [1] * len(ids)
                logprobs[i] += list(new_logprobs[k])[:len(ids)] if sampled_logprobs \
                    else [0.0] * len(ids)
                text = tokenizer.decode(ids, skip_special_tokens=True)
                turns.append((ids, Completion(text=text, tool_calls=text_tool_calls(text))))
            observations = _play([sessions[i] for i in active],
                                 [completion.to_action() for _, completion in turns])
            for i, (ids, completion), observation in zip(active, turns, observations,
                                                         strict=True):
                if sessions[i].done:
                    continue
                closing = [] if ids and ids[-1] in eos else [tokenizer.eos_token_id]
                feedback = closing + template.suffix(
                    feedback_messages(completion, sessions[i], observation))
                completion_ids[i] += feedback
                env_mask[i] += [0] * len(feedback)
                logprobs[i] += [0.0] * len(feedback)
            active = [i for i in active if not sessions[i].done]
        for session in sessions:
            session.cut_short = not session.done
        ends = {*eos, tokenizer.pad_token_id}
        kept = [_kept(ids, budget, ends) for ids in completion_ids]
        return {"prompt_ids": prompt_ids,
                "completion_ids": [ids[:n] for ids, n in zip(completion_ids, kept, strict=True)],
                "logprobs": [lp[:n] for lp, n in zip(logprobs, kept, strict=True)]
                if sampled_logprobs else None,
                "env_mask": [mask[:n] for mask, n in zip(env_mask, kept, strict=True)]}
