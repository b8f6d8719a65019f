"""What TRL's trainers lack for our runs: a step-or-time budget, a loss hook, a fault tally that
checkpoints keep, and a check that a resumed run keeps the settings its checkpoint was trained
with.

The learning rate warms up linearly over ``warmup`` steps, then decays along a cosine to a tenth
as the run goes through its budget: ``steps``, or ``minutes`` of training when that runs out
first (Transformers schedules by steps only, and has no time limit). A checkpoint keeps the
training time spent so far (in its ``trainer_state.json``), so a run resumed from it goes on
with the rest of the budget; the step and the scheduler's state come back with the checkpoint.
:class:`KeptTally` keeps the judge faults of an RL run in its checkpoints (in their
``trainer_state.json`` too), so that a resumed run counts those before its checkpoint as well.
:class:`KeptSettings` writes a run's settings (:func:`run_settings`) to its output folder and
into each checkpoint, and :func:`keep_settings` refuses to resume a checkpoint with others.
The budget, the tally and the settings take back their state from the checkpoint themselves:
a trainer made by :func:`keeping_callbacks` keeps the run's when
``restore_callback_states_from_checkpoint`` would replace them. Imports TRL: load it only to
train.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch.optim.lr_scheduler import LambdaLR
from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState
from trl import SFTTrainer

from agentworld_envs.atomic_write import write_text_atomic
from agentworld_envs.backends.faults import FaultTally
from agentworld_envs.protocol.file_digest import file_sha256
from agentworld_envs.protocol.shown import shown
from trainers.common.args import ConfigError

__all__ = ["RESUMABLE", "SETTINGS_FILE", "TALLY_KEY", "BudgetedSFTTrainer", "KeptSettings",
           "KeptTally", "LossHook", "TrainingBudget", "UncheckedResumeWarning", "data_digest",
           "keep_settings", "keeping_callbacks", "resumable", "run_settings"]

TALLY_KEY = "fault_tally"
"""Where a checkpoint's ``trainer_state.json`` keeps the run's :class:`KeptTally`, among its
``stateful_callbacks`` (a name of no callback, so that Transformers rebuilds none from it)."""

SETTINGS_FILE = "run_settings.json"
"""Where a run writes its :func:`run_settings` in its output folder."""

RESUMABLE = frozenset({
    "output_dir", "resume_from_checkpoint", "run_name", "project", "report_to", "push_to_hub",
    "disable_tqdm", "skip_memory_metrics", "debug", "include_num_input_tokens_seen",
    "include_tokens_per_second", "include_for_metrics", "num_completions_to_print",
    "do_train", "do_eval", "do_predict", "per_device_eval_batch_size", "prediction_loss_only",
    "batch_eval_metrics", "load_best_model_at_end", "metric_for_best_model",
    "greater_is_better", "num_generations_eval", "bf16_full_eval", "fp16_full_eval",
    "restore_callback_states_from_checkpoint", "ignore_data_skip",
    "bf16", "fp16", "tf32", "use_cpu", "local_rank", "threads", "dataset_num_proc",
    "dataloader_num_workers", "dataloader_pin_memory", "dataloader_persistent_workers",
    "dataloader_prefetch_factor", "dataloader_multiprocessing_context",
    "gradient_checkpointing", "gradient_checkpointing_kwargs", "activation_checkpointing",
    "activation_checkpointing_kwargs", "activation_offloading", "torch_compile",
    "torch_compile_backend", "torch_compile_mode", "torch_empty_cache_steps",
    "enable_jit_checkpoint", "ds3_gather_for_generation", "vllm_gpu_memory_utilization",
    "vllm_enable_sleep_mode", "vllm_group_port", "max_faults"})
"""Settings a resumed run may change, besides those named ``logging_``, ``log_``, ``save_``,
``eval_``, ``hub_``, ``trackio_``, ``ddp_`` and ``vllm_server_`` (:func:`resumable`): where
files go, what is logged, saved and evaluated, the device, precision, memory and speed, how
a checkpoint is resumed (``ignore_data_skip`` then trains the rows before it again), and how
many judge faults to go on after. ``max_minutes`` may change too, but not between 0 and a time
budget (which replaces ``lr_scheduler_type``)."""

_RESUMABLE_PREFIXES = ("logging_", "log_", "save_", "eval_", "hub_", "trackio_", "ddp_",
                       "vllm_server_")


def resumable(name: str) -> bool:
    """Whether a resumed run may change the setting ``name`` (:data:`RESUMABLE`)."""
    return name in RESUMABLE or name.startswith(_RESUMABLE_PREFIXES)


class UncheckedResumeWarning(UserWarning):
    """A checkpoint saved without its run's settings (by an older agentworld): a run resumed
    from it goes on unchecked."""


class TrainingBudget(TrainerCallback, ExportableState):
    """Schedules the learning rate over the budget and stops training when it is spent."""

    def __init__(self, steps: int, minutes: float, warmup: int) -> None:
        self.steps, self.minutes, self.warmup = steps, minutes, warmup
        self.started: float | None = None

    def spent_s(self) -> float:
        """Seconds of training so far, those before the checkpoint resumed from included."""
        return 0.0 if self.started is None else time.perf_counter() - self.started

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps (Transformers' ``ExportableState``)."""
        return {"args": {"steps": self.steps, "minutes": self.minutes, "warmup": self.warmup},
                "attributes": {"spent": self.spent_s()}}

    def progress(self, step: int) -> float:
        """How far the run is through its budget (1.0: spent)."""
        by_steps = step / max(1, self.steps)
        if not self.minutes or self.started is None:
            return by_steps
        return max(by_steps, (time.perf_counter() - self.started) / (60 * self.minutes))

    def lr_factor(self, step: int) -> float:
        """The learning rate's multiplier at ``step``."""
        if step < self.warmup:
            return (step + 1) / self.warmup
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, self.progress(step))))

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        saved = (getattr(state, "stateful_callbacks", None) or {}).get(type(self).__name__)
        spent = saved["attributes"]["spent"] if isinstance(saved, dict) else 0.0
        self.started = time.perf_counter() - spent

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.progress(state.global_step) >= 1.0:
            control.should_training_stop = True


class KeptTally(TrainerCallback):
    """Keeps a :class:`~agentworld_envs.backends.faults.FaultTally` in each checkpoint's
    ``trainer_state.json`` (its ``stateful_callbacks``, under :data:`TALLY_KEY`), so that a
    checkpoint holds its trainer state and tally together, and takes back the one of the
    checkpoint a run resumes from.

    Not an ``ExportableState``: ``restore_callback_states_from_checkpoint`` would rebuild it
    from its saved state, without the tally the judge's reward counts into."""

    def __init__(self, tally: FaultTally) -> None:
        self.tally = tally

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        saved = state.stateful_callbacks.get(TALLY_KEY)
        if saved is not None:
            self.tally.restore(saved)

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # once the step's samples are judged and before any checkpoint of it (Transformers'
        # checkpoint on SIGTERM saves at on_step_end, before our callbacks get it)
        state.stateful_callbacks[TALLY_KEY] = self.tally.counts()


class LossHook(TrainerCallback):
    """Calls ``log(step, loss)`` whenever the trainer logs the training loss."""

    def __init__(self, log: Callable[[int, float], None]) -> None:
        self.log = log

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        if logs and "loss" in logs:
            self.log(state.global_step, float(logs["loss"]))


class BudgetedSFTTrainer(SFTTrainer):
    """TRL's ``SFTTrainer`` with the learning rate scheduled by a :class:`TrainingBudget`."""

    def __init__(self, *args: Any, budget: TrainingBudget, **kwargs: Any) -> None:
        self.budget = budget
        super().__init__(*args, **kwargs)
        self.add_callback(budget)

    def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
        """The budget's schedule, over the steps the trainer makes (``max_steps``, or the epochs'
        steps when it is -1) and its warm-up (``warmup_steps``, a share of them below 1)."""
        if self.lr_scheduler is None:
            self.budget.steps = num_training_steps
            self.budget.warmup = self.args.get_warmup_steps(num_training_steps)
            self.lr_scheduler = LambdaLR(optimizer or self.optimizer, self.budget.lr_factor)
        return self.lr_scheduler


def data_digest(path: str) -> str:
    """``sha256:`` and the SHA-256 of the training data at ``path``: a file's bytes, or the names
    and bytes of a folder's ``*.jsonl`` files, in the order they are read (so the data may move,
    and a lone file be renamed)."""
    root = Path(path)
    if not root.is_dir():
        return f"sha256:{file_sha256(root)}"
    listing = "".join(f"{file.name}\t{file_sha256(file)}\n"
                      for file in sorted(root.glob("*.jsonl")))
    return f"sha256:{hashlib.sha256(listing.encode()).hexdigest()}"


def run_settings(config: Any, **ours: Any) -> dict[str, Any]:
    """The settings a run's result depends on, in JSON form: TRL's ``config`` and ``ours`` (with
    ``train`` by its :func:`data_digest` and a local ``model`` by its absolute path), less those
    a resume may change (:func:`resumable`)."""
    model = Path(ours["model"]).expanduser()
    fields = {**json.loads(config.to_json_string()), **ours, "train": data_digest(ours["train"]),
              "model": str(model.resolve()) if ours["model"] and model.exists() else ours["model"]}
    return json.loads(json.dumps({k: v for k, v in sorted(fields.items()) if not resumable(k)}))


class KeptSettings(TrainerCallback, ExportableState):
    """Keeps a run's :func:`run_settings` in each checkpoint's ``trainer_state.json``, which
    Transformers writes last, so that every whole checkpoint holds them; writes them to the
    output folder (:data:`SETTINGS_FILE`) when training begins."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps (Transformers' ``ExportableState``)."""
        return {"args": {"settings": self.settings}, "attributes": {}}

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # the state of a checkpoint saved without them: Transformers' saving looks them up
        state.stateful_callbacks.setdefault(type(self).__name__, self.state())
        if state.is_world_process_zero:
            Path(args.output_dir).mkdir(parents=True, exist_ok=True)
            write_text_atomic(Path(args.output_dir, SETTINGS_FILE),
                              json.dumps(self.settings, indent=1))


def keeping_callbacks(trainer_cls: type) -> type:
    """``trainer_cls`` keeping the run's :class:`TrainingBudget` and :class:`KeptSettings` when
    ``restore_callback_states_from_checkpoint`` resumes it (they take back what they keep from
    the checkpoint themselves, as :class:`KeptTally` does).

    Transformers would replace each with one rebuilt from the checkpoint's state: a budget with
    the checkpoint's ``max_minutes`` (not the run's), which the learning-rate schedule never
    read (it read the run's budget, never started: by steps only), and the checkpoint's
    settings in the run's files; and it warned that the fault tally was ignored."""
    ours = {TrainingBudget.__name__, KeptSettings.__name__, TALLY_KEY}

    class KeepingCallbacks(trainer_cls):  # type: ignore[valid-type, misc]
        def _load_callback_state(self) -> None:
            saved = self.state.stateful_callbacks
            self.state.stateful_callbacks = {name: state for name, state in saved.items()
                                             if name not in ours}
            super()._load_callback_state()
            self.state.stateful_callbacks = saved

    KeepingCallbacks.__name__ = KeepingCallbacks.__qualname__ = trainer_cls.__name__
    return KeepingCallbacks


def _saved_settings(checkpoint: str) -> dict[str, Any] | None:
    """The settings ``checkpoint`` was trained with; None for one saved without them."""
    path = Path(checkpoint, "trainer_state.json")
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError("resume_from_checkpoint", f"{path} cannot be read ({exc})") from None
    kept = (state.get("stateful_callbacks") or {}).get(KeptSettings.__name__) \
        if isinstance(state, dict) else None
    saved = (kept.get("args") or {}).get("settings") if isinstance(kept, dict) else None
    return saved if isinstance(saved, dict) else None


def _changes(saved: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """Each setting both hold (one a version of TRL lacks is not compared) that differs, as
    ``name: old -> new``; ``max_minutes`` differs only between 0 and a time budget."""
    def compared(name: str, value: Any) -> Any:
        return bool(value) if name == "max_minutes" else value

    return [f"{name}: {shown(saved[name])} -> {shown(settings[name])}"
            for name in sorted(saved.keys() & settings.keys())
            if compared(name, saved[name]) != compared(name, settings[name])]


def keep_settings(checkpoint: str | None, settings: dict[str, Any]) -> KeptSettings:
    """Check that a run resumed from ``checkpoint`` keeps the ``settings``
    (:func:`run_settings`) it was trained with; return the callback that keeps them.

    Raises:
        ConfigError: naming each setting that differs from the checkpoint's (old -> new).

    Warns:
        UncheckedResumeWarning: for a checkpoint saved without its settings.
    """
    saved = _saved_settings(checkpoint) if checkpoint else settings
    if saved is None:
        warnings.warn(f"{checkpoint} was saved without its run's settings (by an older "
                      "agentworld), so they cannot be checked: resuming it with these",
                      UncheckedResumeWarning, stacklevel=3)
    elif changes := _changes(saved, settings):
        raise ConfigError("resume_from_checkpoint",
                          f"{checkpoint} was trained with other settings ({'; '.join(changes)})"
                          ": resume with the same ones, or train afresh into another "
                          "--output_dir")
    return KeptSettings(settings)
