"""One TeamTR stage of a language-model team and the floor under it, in this process.

``python -m tests.bench.lm_stage_floor '<teamtr.Args as JSON>'`` trains one stage, then
measures, on the same team and the same prompts:

* ``prefill_s``: the forward passes over the prompts of the stage's ``generate`` calls (the
  active adapter on, one logit kept), as ``generate`` starts each call;
* ``linears_s``: one decode step's matrix products alone: every base linear layer (the
  output layer included, the adapters left out) applied to as many rows as the calls had,
  the least a decode step can read (the median of 5);
* ``decode_steps``: the decode steps of the stage's calls (each call's longest message);
* ``prefill_gflop_per_s``: the prefill's rate in the products of its layers (2 flops per
  weight and token, the output layer left out: it runs on one position a row).

``floor_s`` is the stage with its rollouts cut to the prefill plus ``decode_steps`` times
``linears_s``: the stage if decoding (and the env, and the chat template) cost nothing but the
weight reads, the scoring and update passes and the prefill as they are. It prints the stage's
``time/`` figures and these as one JSON line.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

import torch

from trainers import teamtr
from trainers.common.team import build_team
from trainers.policies.lm import CausalLMPolicy


def _recorded_calls(team: Any) -> list[tuple[CausalLMPolicy, list[list[int]], int]]:
    """Wraps ``_generated`` so that calls made by ``team.collect`` (the stage's rollouts, not
    its evaluations) are kept with their prompts and decode steps."""
    calls: list[tuple[CausalLMPolicy, list[list[int]], int]] = []
    generated, collect = CausalLMPolicy._generated, team.collect
    collecting = False

    def recording(self: CausalLMPolicy, prompts: list[list[int]], greedy: bool, seed: int):
        rows, logprobs = generated(self, prompts, greedy, seed)
        if collecting:
            calls.append((self, prompts, max(len(row) for row in rows)))
        return rows, logprobs

    def collect_recorded(*args: Any, **kwargs: Any) -> Any:
        nonlocal collecting
        collecting = True
        try:
            return collect(*args, **kwargs)
        finally:
            collecting = False

    CausalLMPolicy._generated = recording
    team.collect = collect_recorded
    return calls


@torch.no_grad()
def _prefill_s(calls: list[tuple[CausalLMPolicy, list[list[int]], int]]) -> float:
    total = 0.0
    for policy, prompts, _ in calls:
        width = max(len(p) for p in prompts)
        ids, attention = policy._padded([(p, ()) for p in prompts], width, width)
        policy.activate()
        start = time.perf_counter()
        policy.module(input_ids=ids, attention_mask=attention, logits_to_keep=1)
        total += time.perf_counter() - start
    return total


def _base_linears(policy: CausalLMPolicy) -> list[torch.nn.Linear]:
    """The model's linear layers, the output layer included, the adapters' left out."""
    return [module for name, module in policy.module.named_modules()
            if isinstance(module, torch.nn.Linear) and "lora_" not in name]


@torch.no_grad()
def _linears_s(policy: CausalLMPolicy, rows: int) -> float:
    """Seconds of one decode step's base matrix products at ``rows`` rows."""
    weights = [module.weight for module in _base_linears(policy)]
    inputs = {w.shape[1]: torch.randn(rows, w.shape[1], dtype=w.dtype) for w in weights}

    def step() -> float:
        start = time.perf_counter()
        for weight in weights:
            torch.nn.functional.linear(inputs[weight.shape[1]], weight)
        return time.perf_counter() - start

    step()
    return statistics.median(step() for _ in range(5))


def main(settings: dict[str, Any]) -> dict[str, float]:
    args = teamtr.Args(**settings)
    team = build_team(args)
    calls = _recorded_calls(team)
    stage = teamtr.train(args, team=team).history[1]
    figures = {k: v for k, v in stage.items() if k.startswith("time/")}
    prefill = _prefill_s(calls)
    policy = calls[0][0]
    linears = _linears_s(policy, max(len(prompts) for _, prompts, _ in calls))
    steps = sum(step for _, _, step in calls)
    padded = sum(len(prompts) * max(map(len, prompts)) for _, prompts, _ in calls)
    head = policy.module.get_output_embeddings()
    products = sum(m.weight.numel() for m in _base_linears(policy) if m is not head)
    figures.update({
        "floor/prefill_s": prefill, "floor/linears_s": linears, "floor/decode_steps": steps,
        "floor/generate_calls": len(calls), "floor/prefill_tokens": padded,
        "floor/prefill_gflop_per_s": 2 * products * padded / prefill / 1e9,
        "floor/floor_s": (figures["time/stage_s"] - figures["time/rollout_s"] + prefill
                          + steps * linears)})
    return figures


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
