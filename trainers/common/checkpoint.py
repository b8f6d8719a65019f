"""Per-agent checkpoints, written after every stage, and resuming from the latest one.

Layout under ``checkpoint_dir``::

    stage_000012/agent_0.pt ... agent_{n-1}.pt   # spec, trainable weights, optimiser, beta
    stage_000012/agent_0/ ...                    # LoRA policies: the agent's own peft adapter
                                                 # instead of the weights (save_pretrained, also
                                                 # when the team shares one base)
    stage_000012/trainer.pt                      # stage, history, settings, RNG states, budget
    latest.json                                  # {"stage_dir": "stage_000012"}

A LoRA agent's adapter folder is what ``peft.PeftModel.from_pretrained(base, folder)`` and
vLLM's LoRA serving (``--lora-modules agent_0=folder``) load on the base model.

A stage directory is complete before ``latest.json`` points at it, so a run killed at any moment
resumes from its last finished stage. A shared policy is saved once, as ``shared.pt``. Files
are read back as plain data (``weights_only``); a damaged or foreign checkpoint is one
``ConfigError``.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import torch

from agentworld_envs.atomic_write import write_text_atomic
from trainers.common.args import ConfigError, TeamArgs
from trainers.common.team import Team, make_optimizer

__all__ = ["save_checkpoint", "load_checkpoint", "has_checkpoint", "saved_stages",
           "resume_settings", "RESUMABLE"]

_LATEST = "latest.json"
_ADAPTER_FILE = "adapter_model.safetensors"
_STAGE_DIR = re.compile(r"stage_\d{6}")
_TRAINER_KEYS = ("state", "numpy_rng", "torch_rng", "episodes", "collections")
_UNIT_KEYS = ("agents", "spec", "optimizer", "betas")
RESUMABLE = ("total_episodes", "resume", "checkpoint_dir", "log_dir", "torch_threads")
"""Settings a resumed run may change (a longer budget, where files go, threads); any other
setting that differs from the checkpoint's is refused."""


def resume_settings(args: TeamArgs) -> dict[str, Any]:
    """What a resumed run must share with its checkpoint: every setting but :data:`RESUMABLE`."""
    return {k: v for k, v in dataclasses.asdict(args).items() if k not in RESUMABLE}


def _units(team: Team) -> list[tuple[str, list[int]]]:
    if team.shared:
        return [("shared", list(range(team.n_agents)))]
    return [(f"agent_{agent}", [agent]) for agent in range(team.n_agents)]


def _trainable_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters() if p.requires_grad}


def _is_adapter(module: torch.nn.Module) -> bool:
    """Whether ``module`` is a peft model (a LoRA policy), saved as its adapter."""
    return hasattr(module, "peft_config") and hasattr(module, "save_pretrained")


def save_checkpoint(directory: str | Path, team: Team, state: dict[str, Any]) -> Path:
    """Write a complete checkpoint for the finished stage ``state["stage"]``; returns its path."""
    root = Path(directory)
    stage_dir = root / f"stage_{state['stage']:06d}"
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    stage_dir.mkdir(parents=True)
    for name, agents in _units(team):
        policy = team.policies[agents[0]]
        unit = {"agents": agents, "spec": policy.spec(),
                "optimizer": team.optimizers[agents[0]].state_dict(),
                "betas": [team.betas[a] for a in agents]}
        if _is_adapter(policy.module):
            policy.save_adapter(stage_dir / name)
        else:
            unit["params"] = _trainable_state(policy.module)
        torch.save(unit, stage_dir / f"{name}.pt")
    torch.save({"state": state, "numpy_rng": team.rng.bit_generator.state,
                "torch_rng": team.generator.get_state(), "episodes": team.episodes,
                "collections": team.collections}, stage_dir / "trainer.pt")
    write_text_atomic(root / _LATEST, json.dumps({"stage_dir": stage_dir.name}))
    for old in root.glob("stage_*"):
        if old != stage_dir and old.is_dir():
            shutil.rmtree(old)
    return stage_dir


def _check_settings(saved: dict[str, Any] | None, settings: dict[str, Any] | None) -> None:
    if saved is None or settings is None:
        return
    # the trainer (exp_name) first: another trainer's checkpoint differs in many fields
    for name in sorted(set(saved) | set(settings), key=lambda n: (n != "exp_name", n)):
        if saved.get(name) != settings.get(name):
            raise ConfigError(name, f"{settings.get(name)!r} differs from the checkpoint's "
                                    f"{saved.get(name)!r}: resume with the run's own settings "
                                    f"(only {', '.join(RESUMABLE)} may change)")


def has_checkpoint(directory: str | Path) -> bool:
    """Whether ``directory`` holds a complete checkpoint."""
    return (Path(directory) / _LATEST).is_file()


def saved_stages(directory: str | Path) -> int:
    """How many stages the checkpoint in ``directory`` has finished (0 without a readable one)."""
    try:
        return int(_stage_dir(Path(directory)).name.removeprefix("stage_"))
    except ConfigError:
        return 0


def _unreadable(root: Path, problem: str) -> ConfigError:
    return ConfigError("resume", f"checkpoint_dir {str(root)!r} holds no checkpoint this trainer "
                                 f"can resume: {problem}")


def _read(root: Path, path: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    """A checkpoint file, as the dict with ``keys`` that :func:`save_checkpoint` wrote."""
    name = path.relative_to(root)
    if not path.is_file():
        raise _unreadable(root, f"{name} is missing")
    try:
        saved = torch.load(path, weights_only=True)  # plain data: a foreign pickle runs nothing
    except pickle.UnpicklingError as exc:
        raise _unreadable(root, f"{name} holds more than tensors and plain data") from exc
    except Exception as exc:  # torch's reader on a cut or foreign file (OSError, RuntimeError)
        raise _unreadable(root, f"{name} is cut short or not a torch file") from exc
    if not isinstance(saved, dict) or not set(keys) <= set(saved):
        raise _unreadable(root, f"{name} is not one of its files")
    return saved


def _read_adapter(root: Path, folder: Path) -> dict[str, torch.Tensor]:
    """A LoRA unit's adapter weights, as ``save_pretrained`` wrote them into ``folder``."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = folder / _ADAPTER_FILE
    if not path.is_file():
        raise _unreadable(root, f"{folder.relative_to(root)} holds no adapter")
    try:
        return load_file(path)
    except (SafetensorError, OSError) as exc:
        raise _unreadable(root, f"{path.relative_to(root)} is cut short or not a safetensors "
                                "file") from exc


def _stage_dir(root: Path) -> Path:
    """The folder ``latest.json`` names: one ``stage_N`` folder of ``root``."""
    try:
        name = json.loads((root / _LATEST).read_text(encoding="utf-8")).get("stage_dir")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
        raise _unreadable(root, f"{_LATEST} cannot be read ({exc})") from exc
    if not isinstance(name, str) or not _STAGE_DIR.fullmatch(name):
        raise _unreadable(root, f"{_LATEST} names no stage folder ({name!r})")
    if not (root / name).is_dir():
        raise _unreadable(root, f"{_LATEST} names {name}, which is missing")
    return root / name


def load_checkpoint(directory: str | Path, team: Team,
                    settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load the latest checkpoint into ``team`` (rebuilding replaced agents); returns its state.

    Every file is read before ``team`` changes.

    Raises:
        ConfigError: ``settings`` differ from those the checkpoint was written with (checked
            before anything loads; checkpoints written before settings were kept are not
            checked); a checkpoint that is damaged, incomplete or not one of ours.
    """
    root = Path(directory)
    stage_dir = _stage_dir(root)
    trainer = _read(root, stage_dir / "trainer.pt", _TRAINER_KEYS)
    _check_settings(trainer["state"].get("settings"), settings)
    units = []
    for name, agents in _units(team):
        saved = _read(root, stage_dir / f"{name}.pt", _UNIT_KEYS)
        adapter = None if "params" in saved else _read_adapter(root, stage_dir / name)
        units.append((name, agents, saved, adapter))
    for name, agents, saved, adapter in units:
        policy = team.policies[agents[0]]
        if policy.spec() != saved["spec"]:
            policy = team.factory(agents[0], saved["spec"])
            optimizer = make_optimizer(policy, team.learning_rate, team.weight_decay)
            for agent in agents:  # a shared policy plays every agent
                team.policies[agent], team.optimizers[agent] = policy, optimizer
        if adapter is None:
            policy.module.load_state_dict(saved["params"], strict=False)
        else:
            policy.load_adapter(adapter, stage_dir / name)
        team.optimizers[agents[0]].load_state_dict(saved["optimizer"])
        for agent, beta in zip(agents, saved["betas"], strict=True):
            team.betas[agent] = beta
    team.rng.bit_generator.state = trainer["numpy_rng"]
    team.generator.set_state(trainer["torch_rng"])
    team.episodes = trainer["episodes"]
    team.collections = trainer["collections"]
    return trainer["state"]
