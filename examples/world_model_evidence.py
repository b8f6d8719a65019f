"""Evidence: a world model trained from scratch on AgentFloor transitions, measured on held-out
tasks before and after training (judge-free fidelity), CPU only.

Steps: an oracle corpus (gold steps) and an exploring corpus (random admissible actions) are
run on the real tools; their transitions are split by task (no task on both sides); a tokenizer
and a small Qwen2 are built from the training tasks; the untrained model and the trained one
are scored on the held-out tasks. Writes ``evidence.json`` and ``evidence.md`` to ``--out``.

Run::

    python examples/world_model_evidence.py --out runs/wm_evidence --minutes 8

Quick check (CPU, seconds; too short to learn): ``python examples/world_model_evidence.py
--out wm --minutes 0.02 --explore-repeats 1 --eval-items 4 --max-tokens 8``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from agentworld_envs.backends import SamplingParams, make_backend
from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.progress import WatchedBackend
from agentworld_envs.bench.run import predict, score_fidelity
from agentworld_envs.bench.transitions import corpus_transitions, split_by_task, task_of
from floor_tasks import load_tasks
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.runner import Job, run_jobs
from trainers.world_model.explore import explore_corpus
from trainers.world_model.scratch import build_model, save
from trainers.world_model.sft import SFTArgs, prepare_model, train_sft


def oracle_corpus(out: Path) -> Path:
    """Every variant of every task played by the reference solutions."""
    jobs = [Job(task_id=t.id, variant=v, model="oracle") for t in load_tasks()
            for v in t.variant_names]
    corpus = RunCorpus(out)
    for record in run_jobs(jobs, "oracle", batch_size=32):
        corpus.append(record)
    return out


def fidelity(model_dir: Path, items: list, max_tokens: int) -> dict:
    """Held-out fidelity of a saved model (greedy decoding)."""
    backend = make_backend({"name": "hf", "model": str(model_dir), "batch_size": 16})
    bar = tqdm(total=len(items), desc="held-out predictions", unit="item", disable=None)
    with bar:
        outputs = predict(WatchedBackend(backend, bar), items,
                          SamplingParams(max_tokens=max_tokens, seed=0), batch_size=16)
    result = score_fidelity(items, outputs)
    return {"report": result.to_dict(), "markdown": result.report.markdown(),
            "examples": result.records[:3]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/wm_evidence"))
    parser.add_argument("--minutes", type=float, default=8.0, help="training time budget")
    parser.add_argument("--explore-repeats", type=int, default=4)
    parser.add_argument("--val-fraction", type=float, default=0.2)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--eval-items", type=int, default=96,
                        help="held-out items scored (a seeded draw; 0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--all-turns", action=argparse.BooleanOptionalAction, default=False,
                        help="learn every observation of a trajectory, or only each target")
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    corpora = [oracle_corpus(out / "oracle"),
               explore_corpus(out / "explore", args.explore_repeats, args.seed)]
    items = corpus_transitions(corpora)
    train, val = split_by_task(items, args.val_fraction, args.seed)
    write_items(train, out / "train.jsonl")
    write_items(val, out / "val.jsonl")
    sft = SFTArgs(train=str(out / "train.jsonl"), out=str(out / "model"), steps=100000,
                  batch_size=4, lr=3e-3, layers=3, max_length=1024, max_minutes=args.minutes,
                  seed=args.seed, threads=2, log_every=20, all_turns=args.all_turns)
    _, tokenizer = prepare_model(sft, train)
    save(build_model(tokenizer, sft.spec(), sft.seed), tokenizer, out / "untrained")
    scored = val
    if args.eval_items and len(val) > args.eval_items:
        draw = np.random.default_rng(args.seed).choice(len(val), args.eval_items, replace=False)
        scored = [val[i] for i in sorted(draw)]
    before = fidelity(out / "untrained", scored, args.max_tokens)
    result = train_sft(sft, log=lambda step, loss: print(f"step {step} loss {loss:.3f}",
                                                         flush=True))
    after = fidelity(out / "model", scored, args.max_tokens)
    evidence = {
        "train_items": len(train), "val_items": len(val), "scored_items": len(scored),
        "val_tasks": sorted({task_of(i) for i in val}),
        "train_tasks": sorted({task_of(i) for i in train}),
        "parameters": result.parameters, "steps": result.steps,
        "train_seconds": round(result.train_seconds, 1),
        "tokens_per_second": round(result.tokens_per_second, 1),
        "losses": result.losses, "untrained": before, "trained": after}
    (out / "evidence.json").write_text(json.dumps(evidence, indent=2, default=str))
    (out / "evidence.md").write_text(
        f"## Untrained (held-out tasks)\n\n{before['markdown']}\n\n"
        f"## Trained {result.steps} steps, {result.train_seconds:.0f} s\n\n{after['markdown']}\n")
    print((out / "evidence.md").read_text())


if __name__ == "__main__":
    main()
