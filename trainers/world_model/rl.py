"""RL for a world model: GSPO (or GRPO) with the hybrid rule-and-rubric reward.

One step, CleanRL style:

1. draw ``prompts_per_step`` training items; sample ``group_size`` outputs for each;
2. reward every output (:func:`trainers.world_model.rewards.hybrid_reward`; the rubric judge,
   when given, scores all outputs of the step in one batched bench run);
3. advantage = the reward minus its group's mean, over the group's standard deviation;
4. ``epochs`` updates on the clipped surrogate. GSPO clips the *sequence* importance ratio
   ``exp(mean_t log(pi/pi_old))`` (length-normalised); GRPO clips each token's ratio and
   averages over the output's tokens.

Example (CLI)::

    agentworld wm rl --train data/train.jsonl --model runs/wm --out runs/wm_rl --steps 50
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentworld_envs.backends import make_backend
from agentworld_envs.bench.items import BenchItem, load_items
from agentworld_envs.bench.run import run_bench
from trainers.world_model.rewards import hybrid_reward
from trainers.world_model.scratch import save
from trainers.world_model.sft import _import_torch, encode, load_model

__all__ = ["RLArgs", "RLResult", "train_rl"]


@dataclass
class RLArgs:
    """Settings of one RL run.

    Attributes:
        train: Training items (AgentWorldBench JSONL file or directory).
        model: The world model to improve (a local causal LM, e.g. an SFT output).
        out: Where the improved model is saved.
        algorithm: gspo (sequence-level ratio) or grpo (token-level ratio).
        steps: Sampling-and-update rounds.
        prompts_per_step: Items per round.
        group_size: Outputs sampled per item.
        epochs: Gradient updates per round on the same samples.
        lr: Learning rate (constant).
        clip: Ratio clip range: 1 +/- clip.
        temperature: Sampling temperature.
        max_new_tokens: Longest output.
        max_length: Longest prompt in tokens (oldest tokens dropped).
        judge: Judge backend as JSON (empty: rule reward only).
        judge_weight: The rubric's share of the reward when a judge is given.
        grad_clip: Gradient-norm clip.
        seed: Seeds item draws and sampling.
        threads: torch CPU threads (0: torch's default).
        device: Torch device.
    """

    train: str
    model: str
    out: str
    algorithm: str = "gspo"
    steps: int = 20
    prompts_per_step: int = 4
    group_size: int = 4
    epochs: int = 2
    lr: float = 1e-4
    clip: float = 0.2
    temperature: float = 1.0
    max_new_tokens: int = 256
    max_length: int = 1024
    judge: str = ""
    judge_weight: float = 0.3
    grad_clip: float = 1.0
    seed: int = 0
    threads: int = 0
    device: str = "cpu"


@dataclass
class RLResult:
    """Mean reward (and its parts) per step."""

    out: str
    history: list[dict[str, float]] = field(default_factory=list)


def _sample(torch: Any, model: Any, tokenizer: Any, prompts: list[list[int]], args: RLArgs
            ) -> list[list[int]]:
    """``group_size`` sampled continuations of each prompt (token ids, EOS kept)."""
    width = max(len(p) for p in prompts)
    pad = tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=args.device)
    mask = (torch.arange(width, device=args.device)[None, :]
            >= torch.tensor([width - len(p) for p in prompts], device=args.device)[:, None])
    with torch.no_grad():
        output = model.generate(input_ids=ids, attention_mask=mask.long(), do_sample=True,
                                temperature=args.temperature, top_p=1.0, top_k=0,
                                max_new_tokens=args.max_new_tokens,
                                num_return_sequences=args.group_size, pad_token_id=pad,
                                eos_token_id=tokenizer.eos_token_id)
    continuations = []
    for row in output[:, width:].tolist():
        cut = row.index(tokenizer.eos_token_id) + 1 if tokenizer.eos_token_id in row else None
        continuations.append([t for t in row[:cut] if t != pad] or [tokenizer.eos_token_id])
    return continuations


def _token_logprobs(torch: Any, model: Any, prompts: list[list[int]],
                    outputs: list[list[int]], pad: int, device: str) -> tuple[Any, Any]:
    """Per-token log-probabilities of each output given its prompt, and the output mask."""
    width = max(len(p) + len(o) for p, o in zip(prompts, outputs, strict=True))
    ids = torch.full((len(outputs), width), pad, dtype=torch.long, device=device)
    target = torch.zeros((len(outputs), width), dtype=torch.bool, device=device)
    attention = torch.zeros((len(outputs), width), dtype=torch.long, device=device)
    for row, (p, o) in enumerate(zip(prompts, outputs, strict=True)):
        ids[row, :len(p) + len(o)] = torch.tensor(p + o, device=device)
        target[row, len(p):len(p) + len(o)] = True
        attention[row, :len(p) + len(o)] = 1
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    logprobs = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    return logprobs, target[:, 1:].float()


def surrogate_loss(torch: Any, new: Any, old: Any, mask: Any, advantages: Any,
                   algorithm: str, clip: float) -> Any:
    """The clipped policy-gradient loss (to minimise) of GSPO or GRPO."""
    lengths = mask.sum(-1).clamp(min=1)
    if algorithm == "gspo":
        ratio = torch.exp(((new - old) * mask).sum(-1) / lengths)
        clipped = ratio.clamp(1 - clip, 1 + clip)
        return -torch.minimum(ratio * advantages, clipped * advantages).mean()
    if algorithm == "grpo":
        ratio = torch.exp(new - old)
        per_token = torch.minimum(ratio * advantages[:, None],
                                  ratio.clamp(1 - clip, 1 + clip) * advantages[:, None])
        return -((per_token * mask).sum(-1) / lengths).mean()
    raise ValueError(f"unknown algorithm {algorithm!r}: use gspo or grpo")


def _judge_totals(args: RLArgs, items: list[BenchItem], texts: list[str]) -> list[float | None]:
    if not args.judge:
        return [None] * len(texts)
    with make_backend(json.loads(args.judge)) as judge:
        records = run_bench(items, texts, judge, retries=1).records
    return [record.get("total") for record in records]


def train_rl(args: RLArgs, log: Any = None) -> RLResult:
    """Run the loop, save the model to ``args.out`` and return the reward history.

    Args:
        args: The run's settings.
        log: Called as ``log(step, stats)`` after each step (None: silent).
    """
    torch = _import_torch()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    items = load_items(args.train)
    model, tokenizer = load_model(args.model, args.device)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr)
    result = RLResult(out=args.out)
    for step in range(args.steps):
        started = time.perf_counter()
        chosen = [items[rng.randrange(len(items))] for _ in range(args.prompts_per_step)]
        prompts = [encode(tokenizer, item, False, args.max_length)[0] for item in chosen]
        model.eval()
        outputs = _sample(torch, model, tokenizer, prompts, args)
        expanded = [item for item in chosen for _ in range(args.group_size)]
        expanded_prompts = [p for p in prompts for _ in range(args.group_size)]
        texts = tokenizer.batch_decode(outputs, skip_special_tokens=True)
        totals = _judge_totals(args, expanded, texts)
        scored = [hybrid_reward(text, item.ground_truth, total, args.judge_weight)
                  for text, item, total in zip(texts, expanded, totals, strict=True)]
        rewards = torch.tensor([r for r, _ in scored], device=args.device).view(
            args.prompts_per_step, args.group_size)
        advantages = ((rewards - rewards.mean(1, keepdim=True))
                      / (rewards.std(1, keepdim=True) + 1e-4)).flatten()
        pad = tokenizer.pad_token_id
        with torch.no_grad():
            old, mask = _token_logprobs(torch, model, expanded_prompts, outputs, pad,
                                        args.device)
        model.train()
        for _ in range(args.epochs):
            new, _ = _token_logprobs(torch, model, expanded_prompts, outputs, pad, args.device)
            loss = surrogate_loss(torch, new, old, mask, advantages, args.algorithm, args.clip)
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
            optimiser.step()
        stats = {"step": step, "reward": float(rewards.mean()), "loss": loss.item(),
                 "seconds": time.perf_counter() - started}
        for key in ("rule", "facts", "format", "closure", "json", "judge"):
            values = [b[key] for _, b in scored if key in b and b[key] == b[key]]
            if values:
                stats[key] = sum(values) / len(values)
        result.history.append(stats)
        if log is not None:
            log(step, stats)
    model.eval()
    save(model, tokenizer, args.out)
    Path(args.out, "rl_args.json").write_text(json.dumps(
        {"rl": asdict(args), "history": result.history}, indent=2), encoding="utf-8")
    return result
