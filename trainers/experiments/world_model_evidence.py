"""Evidence for the embedded world model: data, LoRA fine-tuning and held-out fidelity.

The embedded world model is SmolLM2-135M-Instruct (``agentworld_envs.models``) with one LoRA
adapter, ``tools``, trained on the two domains that have ground truth: ``floor`` (the real
AgentFloor tools) and ``mcp`` (the generated servers' executable twin). Three steps, each
run on its own:

``data``
    Real transitions. Floor: every variant of the 30 tasks played by the reference solutions,
    and an exploring agent (uniform admissible actions with distractors, 30% of them made into
    mistakes: unknown tools, wrongly typed, missing or unknown arguments, repeated calls),
    split by task (seed 0: A5, C1, C2, D5, E5 held out, as for the retired
    ``floor_wm``). MCP: generated servers played by an exploring agent, with the twin's answer
    as ground truth, split by server family (``--mcp-val-family``, default ``tickets``). The
    distinct answers of both training splits are the draft corpus. A transition that several
    runs reach (same chat, same answer) is kept once.
``train``
    ``agentworld wm sft`` with a LoRA adapter on the base, through the compact view, on the
    training splits of both domains only; the draft corpus goes into the adapter's folder.
``eval``
    Greedy predictions on a seeded draw of held-out transitions, for the untrained base (on
    the domain's full built-in prompt, the layout it gets without an adapter), the fine-tuned
    model (compact view), and, for floor, the old ``floor_wm`` when its folder is given:
    exact, structural, values and calls (right tool, status and error kind), the exact-match
    rate's 95% Wilson interval over the items (one adapter, greedy: no seed varies), and the
    wall and CPU seconds per env-step of the default env alone and in a vector of 16.
``agree``
    Whether another dtype keeps the embedded model's greedy answers: the shipped ``tools``
    adapter (or ``--adapter``) in float32, the default, and in ``--dtype``, batch by batch on
    every held-out transition of both domains (``--items`` per domain to draw fewer): the
    items whose answers differ, with the first differing character, and each one's CPU seconds.

Run (CPU; about an hour in all on two cores)::

    python examples/world_model_evidence.py data --out runs/wm13
    python examples/world_model_evidence.py train --out runs/wm13 --minutes 60
    python examples/world_model_evidence.py eval --out runs/wm13 --domain floor --items 64
    python examples/world_model_evidence.py eval --out runs/wm13 --domain mcp --items 64

    python examples/world_model_evidence.py agree --out runs/wm13 --dtype bfloat16 --items 0

They write ``<out>/{train,val}/<domain>.jsonl``, ``<out>/draft_corpus.jsonl``,
``<out>/adapter``, ``<out>/evidence_train.json``, ``<out>/evidence_eval_<domain>.json`` and
``<out>/agreement_<dtype>.json``.

Quick check (the data step only, seconds): ``python examples/world_model_evidence.py data
--out wm --explore-repeats 1 --mcp-episodes 4``
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

import agentworld_envs  # noqa: F401 - registers the envs
from agentworld_envs.backends import Backend, SamplingParams, make_backend
from agentworld_envs.backends.embedded import EMBEDDED_SAMPLING, embedded_backend
from agentworld_envs.backends.faults import FaultTally, TalliedBackend, TooManyFaultsError
from agentworld_envs.backends.progress import WatchedBackend
from agentworld_envs.bench.items import BenchItem, load_items, write_items
from agentworld_envs.bench.run import predict, score_fidelity
from agentworld_envs.bench.transitions import (
    corpus_transitions,
    distinct_transitions,
    simulated_transitions,
    split_by_task,
    task_of,
)
from agentworld_envs.cli_errors import UnknownNameError, UsageError
from agentworld_envs.domains.mcp.servers import FAMILIES
from agentworld_envs.models import DRAFT_CORPUS
from floor_tasks import load_tasks
from floor_tasks.harness.corpus import write_records
from floor_tasks.harness.runner import Job, run_jobs
from floor_tasks.harness.stats import wilson_interval
from trainers.common.flags import parse_args
from trainers.world_model.examples import target_text
from trainers.world_model.explore import explore_corpus, mistaken
from trainers.world_model.sft import SFTArgs, sft_config, train_sft

_FAMILY = re.compile(r"MCP server \S+-(\w+) \(")
SHIPPED = "shipped"
"""``--adapter``'s name for the ``tools`` adapter this package ships."""


def oracle_corpus(out: Path) -> Path:
    """Every variant of every task played by the reference solutions (seconds), written at
    once: a step interrupted before leaves no corpus, and a rerun writes the same one."""
    jobs = [Job(task_id=t.id, variant=v, model="oracle") for t in load_tasks()
            for v in t.variant_names]
    write_records(out, run_jobs(jobs, "oracle", batch_size=32))
    return out


def family_of(item: BenchItem) -> str:
    """The MCP server family of a transition, read from its World Notes."""
    found = _FAMILY.search(item.prompt[0])
    return found.group(1) if found else "unknown"


def mcp_policy(env: Any, rng: np.random.Generator) -> str:
    """An exploring MCP agent: candidate calls, calls with arguments drawn from the records'
    values (other ids, other filters), mistakes, and now and then a final answer."""
    episode = env.unwrapped.episode
    scenario = episode.scenario
    draw = rng.random()
    calls = [a for a in episode.candidates if a.lstrip().startswith("{")]
    answers = [a for a in episode.candidates if a not in calls]
    if draw < 0.08:
        return answers[int(rng.integers(len(answers)))]
    if draw < 0.45:
        action = calls[int(rng.integers(len(calls)))]
    else:
        tool = scenario.tools[int(rng.integers(len(scenario.tools)))]["function"]
        action = json.dumps({"name": tool["name"], "arguments": _arguments(tool, scenario, rng)})
    if rng.random() < 0.3:
        previous = episode.log.actions[-1] if episode.log.actions else None
        action = mistaken(action, previous if isinstance(previous, str) else None, rng)
    return action


def _arguments(tool: dict[str, Any], scenario: Any, rng: np.random.Generator) -> dict[str, Any]:
    records = scenario.mcp.records
    arguments = {}
    for name, spec in tool["parameters"].get("properties", {}).items():
        if name not in tool["parameters"].get("required", []) and rng.random() < 0.5:
            continue
        seen = [r[name] for r in records if name in r]
        if spec.get("type") == "integer":
            arguments[name] = int(rng.integers(-20, 50))
        elif seen:
            arguments[name] = seen[int(rng.integers(len(seen)))]
        else:
            arguments[name] = f"{name.replace('_', ' ')} {int(rng.integers(1, 99))}"
    return arguments


def make_data(out: Path, explore_repeats: int, mcp_episodes: int, val_family: str) -> None:
    """Write ``<out>/{train,val}/{floor,mcp}.jsonl``.

    Raises:
        UnknownNameError: ``val_family`` is no MCP server family.
        UsageError: the MCP episodes hold no transition of the held-out family, or none of
            the others (raise ``mcp_episodes``).
    """
    if val_family not in FAMILIES:  # else nothing is held out and every family trains
        raise UnknownNameError("MCP server family (--mcp-val-family)", val_family, FAMILIES)
    corpora = [oracle_corpus(out / "corpora" / "oracle"),
               explore_corpus(out / "corpora" / "explore", explore_repeats, 0, mistakes=0.3)]
    train, val = split_by_task(distinct_transitions(corpus_transitions(corpora)), 0.2, 0)
    write_items(train, out / "train" / "floor.jsonl")
    write_items(val, out / "val" / "floor.jsonl")
    env = gym.make("AgentWorld/MCP-v0", scenarios="generated", backend="scripted",
                   mode="hybrid", max_steps=8)
    items = simulated_transitions(env, mcp_episodes, seed=0, policy=mcp_policy)
    items = distinct_transitions([i for i in items
                                  if i.source.get("ground_truth") == "real"])
    held_out = [i for i in items if family_of(i) == val_family]
    if not held_out or len(held_out) == len(items):
        split = "held-out" if not held_out else "training"
        raise UsageError(f"{mcp_episodes} MCP episodes gave no {split} transition (family "
                         f"{val_family} held out): raise --mcp-episodes")
    write_items([i for i in items if family_of(i) != val_family], out / "train" / "mcp.jsonl")
    write_items(held_out, out / "val" / "mcp.jsonl")
    write_draft_corpus(out)
    print({"floor_train": len(train), "floor_val": len(val),
           "floor_val_tasks": sorted({task_of(i) for i in val}), "mcp": len(items),
           "mcp_val_family": val_family})


def write_draft_corpus(out: Path) -> None:
    """``<out>/draft_corpus.jsonl``: the distinct answers of both training splits, in order,
    one JSON string a line (what the ``hf`` backend's ``draft_corpus`` reads)."""
    answers = {target_text(item, reasoning=False): None for domain in ("floor", "mcp")
               for item in load_items(out / "train" / f"{domain}.jsonl")}
    (out / DRAFT_CORPUS).write_text("".join(json.dumps(a) + "\n" for a in answers))


def _adapter_config(folder: Path) -> dict[str, Any]:
    """The embedded model's config with the adapter in ``folder`` and its draft corpus, if it
    has one."""
    corpus = folder / DRAFT_CORPUS
    return {**embedded_backend("tools"), "adapter": str(folder),
            "draft_corpus": str(corpus) if corpus.is_file() else None}


def train(out: Path, minutes: float) -> None:
    """The LoRA adapter, on the training splits, with the draft corpus beside it."""
    args = SFTArgs(train=str(out / "train"), model="smollm2", lora_rank=8, lora_alpha=16,
                   lora_layers=15, view="compact", max_minutes=minutes, drop_overlong=True,
                   threads=2)
    config = sft_config(output_dir=str(out / "adapter"), max_steps=100000,
                        per_device_train_batch_size=2, max_length=1024, learning_rate=1e-3,
                        warmup_steps=5, logging_steps=5)
    result = train_sft(args, config,
                       log=lambda step, loss: print(f"step {step} loss {loss:.3f}", flush=True))
    if (out / DRAFT_CORPUS).is_file():
        shutil.copy(out / DRAFT_CORPUS, out / "adapter" / DRAFT_CORPUS)
    (out / "evidence_train.json").write_text(json.dumps({
        "steps": result.steps, "train_seconds": round(result.train_seconds, 1),
        "tokens": result.tokens, "tokens_per_second": round(result.tokens_per_second, 1),
        "train_items": len(load_items(args.train)), "losses": result.losses}, indent=2))


def _fidelity(backend: dict[str, Any], items: list[BenchItem], label: str,
              max_tokens: int) -> dict[str, Any]:
    model = make_backend(backend)
    bar = tqdm(total=len(items), desc=label, unit="item", disable=None)
    start = time.process_time()
    watched = WatchedBackend(model, bar)
    with bar:
        outputs = predict(watched, items,
                          SamplingParams(**{**EMBEDDED_SAMPLING, "max_tokens": max_tokens},
                                         seed=0), batch_size=16)
    cpu = time.process_time() - start
    model.close()
    watched.tally.check(f"no {label} fidelity is reported")
    result = score_fidelity(items, outputs)
    return {"report": result.to_dict(), "markdown": result.report.markdown(),
            "exact_wilson95": exact_interval(result.records),
            "cpu_seconds_per_item": round(cpu / len(items), 2), "records": result.records}


def exact_interval(records: list[dict[str, Any]]) -> list[float]:
    """The 95% Wilson interval (0-100) of the exact-match rate over the scored items: the
    items alone, as one trained adapter decoded greedily has no other source of variation
    here (another training run's is not measured)."""
    exact = sum(bool(record["fidelity"]["exact"]) for record in records)
    return [round(100 * bound, 1) for bound in wilson_interval(exact, len(records))]


def _draw(out: Path, domain: str, count: int) -> list[BenchItem]:
    """The domain's held-out items, or a seeded draw of ``count`` of them (0: all)."""
    items = load_items(out / "val" / f"{domain}.jsonl")
    if count and len(items) > count:
        draw = np.random.default_rng(0).choice(len(items), count, replace=False)
        items = [items[i] for i in sorted(draw)]
    return items


def first_difference(a: str, b: str) -> int | None:
    """The first position where two answers differ (None where they are equal)."""
    return None if a == b else len(os.path.commonprefix([a, b]))


def agreement(backends: dict[str, Backend], items: list[BenchItem], max_tokens: int,
              batch_size: int = 16) -> dict[str, Any]:
    """Greedy answers of the first backend and each other one on the same items, batch by batch
    in turn (so that a busy moment costs each alike): per other backend, the items whose answer
    differs from the first's, and every backend's CPU seconds. A failed request stops it
    (:class:`TooManyFaultsError`): it has no answer to compare."""
    models = {label: TalliedBackend(backend, FaultTally(0, setting=""))
              for label, backend in backends.items()}
    sampling = SamplingParams(**{**EMBEDDED_SAMPLING, "max_tokens": max_tokens}, seed=0)
    answers: dict[str, list[str | None]] = {label: [] for label in models}
    cpu = dict.fromkeys(models, 0.0)
    for start in tqdm(range(0, len(items), batch_size), desc="agree", unit="batch",
                      disable=None):
        for label, model in models.items():
            clock = time.process_time()
            answers[label] += predict(model, items[start:start + batch_size], sampling,
                                      batch_size)
            cpu[label] += time.process_time() - clock
    reference, *others = models
    result: dict[str, Any] = {"items": len(items), "reference": reference,
                              "cpu_seconds": {k: round(v, 1) for k, v in cpu.items()}}
    for label in others:
        differ = [{"key": item.key, "position": position,
                   reference: answers[reference][i], label: answers[label][i]}
                  for i, item in enumerate(items)
                  if (position := first_difference(answers[reference][i],
                                                   answers[label][i])) is not None]
        result[label] = {"identical": len(items) - len(differ), "differ": differ}
    return result


def agree(out: Path, dtype: str, count: int, adapter: str | None, max_tokens: int) -> None:
    """``agreement`` of the embedded model in ``dtype`` with float32 on both domains."""
    model = adapter_model(adapter)
    backends = {"float32": make_backend({**model, "dtype": "float32"}),
                dtype: make_backend({**model, "dtype": dtype})}
    evidence = {}
    try:
        for domain in ("floor", "mcp"):
            evidence[domain] = agreement(backends, _draw(out, domain, count), max_tokens)
            print(domain, {k: v for k, v in evidence[domain].items() if k != dtype},
                  f"{dtype} identical: {evidence[domain][dtype]['identical']}", flush=True)
    finally:
        for backend in backends.values():
            backend.close()
    (out / f"agreement_{dtype}.json").write_text(json.dumps(evidence, indent=2))


def _step_seconds(domain: str, envs: int, steps: int) -> dict[str, float]:
    """Wall and CPU seconds per env-step of the default env, alone (``envs`` 1) or in a vector,
    each env playing a call (a submission only where there is nothing else) among its own
    scenario's candidates."""
    env_id = f"AgentWorld/{'Floor' if domain == 'floor' else 'MCP'}-v0"
    kwargs = {} if domain == "floor" else {"scenarios": "generated"}
    env = gym.make(env_id, **kwargs) if envs == 1 else gym.make_vec(env_id, num_envs=envs,
                                                                      **kwargs)
    _, info = env.reset(seed=0)
    candidates = [info["candidate_actions"]] if envs == 1 else list(info["candidate_actions"])
    calls = [next((a for a in c if a.lstrip()[:1] in "{[" and "submit_decision" not in a),
                  c[0]) for c in candidates]
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        env.step(calls[0] if envs == 1 else calls)
    done = steps * envs
    seconds = {"wall": (time.perf_counter() - wall) / done,
               "cpu": (time.process_time() - cpu) / done}
    env.close()
    return {k: round(v, 2) for k, v in seconds.items()}


def adapter_model(adapter: str | None, trained: Path | None = None) -> dict[str, Any]:
    """The embedded model with ``adapter``: a folder, or :data:`SHIPPED` (the ``tools`` adapter
    the package ships); None: the adapter ``train`` wrote in ``trained``, or the shipped one
    where no ``trained`` folder is named."""
    if adapter == SHIPPED or (adapter is None and trained is None):
        return embedded_backend("tools")
    folder = Path(adapter) if adapter else trained
    if not folder.is_dir():
        hint = (f"run the train step first (train --out {folder.parent}) or score the shipped "
                f"adapter (--adapter {SHIPPED})" if adapter is None else "no such folder")
        raise UsageError(f"{folder}: no trained adapter; {hint}")
    return _adapter_config(folder)


def unseen_answers_exact(records: list[dict[str, Any]], items: list[BenchItem],
                         seen: set[str]) -> dict[str, Any]:
    """The exact-match rate (0-100, with its 95% Wilson interval) over the items whose true
    answer occurs in no training transition: the held-out figure that memorised generic
    answers (an empty search result, a rate limit) cannot lift."""
    unseen = {item.key for item in items if item.ground_truth not in seen}
    kept = [record for record in records if record["key"] in unseen]
    exact = sum(bool(record["fidelity"]["exact"]) for record in kept)
    return {"items": len(kept), "exact": round(100 * exact / len(kept), 2) if kept else None,
            "exact_wilson95": exact_interval(kept)}


def evaluate(out: Path, domain: str, count: int, floor_wm: str | None, max_tokens: int,
             base_items: int = 24, adapter: str | None = None) -> None:
    """Held-out fidelity of the base, the fine-tuned model (and floor_wm), and step costs."""
    fine_tuned = adapter_model(adapter, out / "adapter")
    items = _draw(out, domain, count)
    seen = {item.ground_truth for item in load_items(out / "train" / f"{domain}.jsonl")}
    models = {"fine-tuned": fine_tuned, "base (built-in prompt)": embedded_backend()}
    if floor_wm and domain == "floor":
        models["floor_wm"] = {"name": "hf", "model": floor_wm, "batch_size": 16}
    evidence: dict[str, Any] = {"items": len(items), "max_tokens": max_tokens,
                                "tasks": sorted({task_of(i) for i in items})}
    for label, backend in models.items():
        scored = items[:base_items] if label.startswith("base") and base_items else items
        evidence[label] = _fidelity(backend, scored, label, max_tokens)
        evidence[label]["unseen_answers"] = unseen_answers_exact(
            evidence[label]["records"], scored, seen)
        print(label, evidence[label]["markdown"], "answers no training transition holds:",
              evidence[label]["unseen_answers"], flush=True)
    evidence["seconds_per_env_step"] = {"single": _step_seconds(domain, 1, 3),
                                        "vector_of_16": _step_seconds(domain, 16, 1)}
    print(evidence["seconds_per_env_step"])
    (out / f"evidence_eval_{domain}.json").write_text(json.dumps(evidence, indent=2,
                                                                default=str))


STEPS = ("data", "train", "eval", "agree")


@dataclass
class Args:
    """The settings of one step (``data``, ``train``, ``eval`` or ``agree``, given first)."""

    out: Path = Path("runs/wm13")
    """where the data, the trained model and the scores go"""
    domain: Literal["floor", "mcp"] = "floor"
    """the domain scored by eval"""
    dtype: str = "bfloat16"
    """agree: the dtype compared with float32"""
    adapter: str | None = None
    """eval and agree: the adapter's folder, or ``shipped`` (the ``tools`` adapter this package
    ships); default: eval the one train wrote in --out, agree the shipped one"""
    minutes: float = 30.0
    """training time budget"""
    explore_repeats: int = 4
    """data: how many times each floor variant is explored"""
    mcp_episodes: int = 240
    """data: MCP episodes played on generated servers"""
    mcp_val_family: str = "tickets"
    """data: the MCP family held out for validation"""
    items: int = 64
    """held-out items scored per domain (0: all)"""
    floor_wm: str | None = None
    """folder of the old floor_wm model"""
    base_items: int = 24
    """the base reads the long built-in prompt: only the first N (0: all)"""
    max_tokens: int = 400
    """new tokens per prediction (the longest held-out answer is 295)"""


def main(argv: list[str] | None = None) -> None:
    """Run one step: ``world_model_evidence.py data|train|eval [--flags]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    step = argv[0] if argv else ""
    usage = (f"usage: world_model_evidence.py {{{','.join(STEPS)}}} [flags] (a step's flags: "
             "world_model_evidence.py <step> --help)")
    if step in ("-h", "--help"):
        print(usage)
        return
    if step not in STEPS:
        raise UsageError(f"{f'unknown step {step!r}' if step else 'no step given'}; {usage}")
    args = parse_args(Args, argv[1:], prog=f"world_model_evidence.py {step}")
    try:
        if step == "data":
            make_data(args.out, args.explore_repeats, args.mcp_episodes, args.mcp_val_family)
        elif step == "train":
            train(args.out, args.minutes)
        elif step == "agree":
            agree(args.out, args.dtype, args.items, args.adapter, args.max_tokens)
        else:
            evaluate(args.out, args.domain, args.items, args.floor_wm, args.max_tokens,
                     args.base_items, args.adapter)
    except TooManyFaultsError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
