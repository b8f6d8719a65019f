"""What TRL's trainers lack for our runs: a step-or-time budget, a loss hook, and a fault tally
that checkpoints keep.

The learning rate warms up linearly over ``warmup`` steps, then decays along a cosine to a tenth
as the run goes through its budget: ``steps``, or ``minutes`` of training when that runs out
first (Transformers schedules by steps only, and has no time limit). A checkpoint keeps the
training time spent so far (in its ``trainer_state.json``), so a run resumed from it goes on
with the rest of the budget; the step and the scheduler's state come back with the checkpoint.
:class:`KeptTally` keeps the judge faults of an RL run in its checkpoints, so that a resumed run
counts those before its checkpoint too. Imports TRL: load it only to train.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch.optim.lr_scheduler import LambdaLR
from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from trl import SFTTrainer

from agentworld_envs.atomic_write import write_text_atomic
from agentworld_envs.backends.faults import FaultTally

__all__ = ["TALLY_FILE", "BudgetedSFTTrainer", "KeptTally", "LossHook", "TrainingBudget"]

TALLY_FILE = "fault_tally.json"
"""Where a checkpoint keeps the run's :class:`KeptTally`."""


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
    """Keeps a :class:`~agentworld_envs.backends.faults.FaultTally` in each checkpoint
    (:data:`TALLY_FILE`) and takes back the one of the checkpoint a run resumes from.

    A file of its own rather than Transformers' callback state, which
    ``restore_callback_states_from_checkpoint`` would rebuild without the tally."""

    def __init__(self, tally: FaultTally, checkpoint: str | None) -> None:
        self.tally = tally
        kept = Path(checkpoint, TALLY_FILE) if checkpoint else None
        if kept is not None and kept.is_file():
            tally.restore(json.loads(kept.read_text(encoding="utf-8")))

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        folder = Path(args.output_dir, f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
        write_text_atomic(folder / TALLY_FILE, json.dumps(self.tally.counts()))


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
