"""GRPO with TRL on an env reached over OpenEnv: an ``agentworld serve`` process, a TRL trainer.

The pattern of TRL's OpenEnv guide: the trainer's ``environment_factory`` is a class whose
tool methods play the served env through OpenEnv's client (here
:class:`agentworld_envs.serve.client.RemoteEnv` under
:func:`agentworld_envs.trl.environment_class`), so the env runs in its own process, or on
another machine. Two commands::

    agentworld serve AgentFloor/A1-v0 --port 8000
    python examples/openenv_trl.py --url http://127.0.0.1:8000 --model /models/Qwen3-1.7B

Without ``--url`` the script starts the server itself on a free loopback port; without
``--model`` it builds a tiny model warm-started on the task's reference solutions (CPU).

Quick check (CPU, one to four minutes; one step): ``python examples/openenv_trl.py
--max-steps 1 --output-dir out``
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_envs.cli import run_command
from agentworld_envs.cli_errors import UsageError
from trainers.common.flags import check_config_values, check_model_folder, parse_args


@dataclass
class Args:
    """Command-line settings (CleanRL style: one flat dataclass)."""

    url: str | None = None
    """A running ``agentworld serve`` of the task; by default one is started here."""
    task: str = "A1"
    """The AgentFloor task the server serves."""
    variants: str = "v0,i1"
    """Comma-separated variants (rows of the dataset)."""
    model: str | None = None
    """A local model directory; by default a tiny model is built and warm-started."""
    max_steps: int = 2
    """GRPO steps to train."""
    num_generations: int = 2
    """Rollouts per prompt (a GRPO group)."""
    per_device_batch: int = 4
    """Rollouts per step (per device); a multiple of ``num_generations``."""
    max_completion_length: int = 160
    """Token limit of a whole episode (all turns and tool results)."""
    temperature: float = 0.5
    """Sampling temperature of the rollouts."""
    learning_rate: float = 1e-3
    """The optimizer's learning rate."""
    output_dir: str = "runs/openenv_trl"
    """TRL's output folder (no checkpoint is saved)."""
    seed: int = 0
    """Seed of the env resets (each row's ``seed``) and of TRL's training and sampling."""


@contextlib.contextmanager
def served(task: str) -> Iterator[str]:
    """``agentworld serve AgentFloor/<task>-v0`` on a free loopback port, until the block ends.

    The server picks the port (``--port 0``) and names it in its ready line: a port picked
    here and freed for it could be taken by another process first. A server that exits first
    is an error ending with the last line it wrote (its one-line error)."""
    command = [sys.executable, "-m", "agentworld_envs.cli", "serve", f"AgentFloor/{task}-v0",
               "--port", "0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    ready = "agentworld serve: ready at "
    said = ""
    try:
        for line in process.stderr:  # the server says when it is ready, and where
            if line.startswith(ready):
                break
            said = line.strip() or said
        else:
            raise RuntimeError(f"agentworld serve exited with code {process.wait()}"
                               f"{f': {said}' if said else ''}")
        # keep reading its stderr, so a chatty server never blocks on a full pipe
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield line.removeprefix(ready).split()[0]
    finally:
        process.terminate()
        process.wait(timeout=60)


def check_served_task(url: str, task: str, variant: str) -> None:
    """Refuse a server that serves another task than ``--task``: the dataset's prompts would be
    played, and scored, on its env."""
    import gymnasium as gym

    env = gym.make("OpenEnv/Remote-v0", base_url=url)
    try:
        _, info = env.reset(options={"variant": variant})
    finally:
        env.close()
    if info.get("task_id") != task:
        raise UsageError(f"--task {task}: the server at {url} serves {info.get('task_id')}; "
                         "pass the task it serves")


def grpo_config(args: Args) -> Any:
    """TRL's ``GRPOConfig`` for ``args``; the settings it refuses (a batch that
    ``num_generations`` does not divide) are a usage error, in one line."""
    from agentworld_envs.trl import import_trl

    GRPOConfig = import_trl().GRPOConfig  # or the install hint, in one line
    settings = {"output_dir": args.output_dir, "max_steps": args.max_steps,
                "per_device_train_batch_size": args.per_device_batch,
                "num_generations": args.num_generations,
                "max_completion_length": args.max_completion_length,
                "temperature": args.temperature, "learning_rate": args.learning_rate,
                "scale_rewards": "group", "report_to": [], "logging_steps": 1,
                "save_strategy": "no", "seed": args.seed, "disable_tqdm": True,
                "use_cpu": not _cuda()}
    check_config_values(settings)  # what TRL leaves unchecked until it trains
    try:
        return GRPOConfig(**settings)
    except ValueError as exc:
        raise UsageError(f"GRPOConfig: {' '.join(str(exc).split())}") from None


def main(argv: list[str] | None = None) -> None:
    args = parse_args(Args, argv, prog=Path(__file__).name)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import gymnasium as gym
    from datasets import Dataset
    from transformers import AutoTokenizer

    from agentworld_envs.trl import (
        build_tiny_chat_model,
        check_batch_fits,
        environment_class,
        environment_reward,
        floor_rows,
        import_trl,
        imprint,
        solution_examples,
    )

    GRPOTrainer = import_trl().GRPOTrainer  # or the install hint, in one line

    check_model_folder(args.model)
    config = grpo_config(args)  # before a server is started or a model built
    gym.register("OpenEnv/Remote-v0", entry_point="agentworld_envs.serve.client:RemoteEnv")
    try:
        rows = floor_rows([args.task], args.variants.split(","), seed=args.seed,
                          system_prompt=None if args.model else "Use the tools, then answer.")
    except ValueError as exc:  # a task or variant that does not exist, named
        raise UsageError(str(exc)) from None
    check_batch_fits(len(rows), config)
    with contextlib.ExitStack() as stack:
        url = args.url or stack.enter_context(served(args.task))
        check_served_task(url, args.task, rows[0]["variant"])
        factory = environment_class("OpenEnv/Remote-v0", base_url=url,
                                    probe_row={"variant": rows[0]["variant"]})
        model = args.model
        if model is None:  # a tiny model that already emits the task's tool calls
            examples = [{**example, "tools": [getattr(factory, t["function"]["name"])
                                              for t in example["tools"]]}
                        for row in rows for example in solution_examples(row)]
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="tiny_openenv_")))
            build_tiny_chat_model(directory, examples)
            model = str(imprint(directory, examples, steps=80, lr=3e-3))
        trainer = GRPOTrainer(
            model=model, args=config, processing_class=AutoTokenizer.from_pretrained(model),
            train_dataset=Dataset.from_list(rows), reward_funcs=[environment_reward],
            environment_factory=factory)
        trainer.train()
    for step, entry in enumerate((h for h in trainer.state.log_history if "reward" in h), 1):
        print(f"step {step}: reward {entry['reward']:.3f} (std {entry['reward_std']:.3f}), loss "
              f"{entry['loss']:.2e}, grad_norm {entry['grad_norm']:.3g} from the env served at "
              f"{url}")
        if not entry["grad_norm"]:
            print(f"step {step} trained nothing: grad_norm 0 (every group's rollouts scored "
                  f"alike)")


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    sys.exit(run_command(main))
