"""Run logging: TensorBoard scalars (CleanRL layout) plus an in-memory history of every stage.

TensorBoard (``torch.utils.tensorboard``) is imported only when ``log_dir`` is set.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from pathlib import Path
from typing import Any

from trainers.common.args import TeamArgs

__all__ = ["RunLogger", "run_name"]

_EVENT_FILE = re.compile(r"events\.out\.tfevents\.(\d+)\.")
"""A TensorBoard event file's name, from the second it was opened in."""


def run_name(args: TeamArgs) -> str:
    """``{env}__{exp_name}__{seed}__{unix time}``, as CleanRL names runs."""
    return f"{args.env_id.replace('/', '_')}__{args.exp_name}__{args.seed}__{int(time.time())}"


def _wait_for_a_later_second(run_dir: str) -> None:
    """Wait, if a file in ``run_dir`` was opened in this second of the clock, for the next.

    TensorBoard reads a run's event files in name order, which is the order they were opened
    in only across seconds: within one, names sort by host, process and a counter, as text
    ("...10" before "...9"). A resumed run's file read before the older one it purges would
    leave the purged points in and lose its own."""
    now = time.time()
    opened = {int(match[1]) for path in Path(run_dir).glob("events.out.tfevents.*")
              if (match := _EVENT_FILE.match(path.name))}
    if int(now) in opened:
        time.sleep(int(now) + 1 - now)


class RunLogger:
    """Writes each stage's flat record of scalars to TensorBoard and keeps it in ``history``.

    Args:
        args: The run's settings (written as a hyperparameter table).
        run_dir: The TensorBoard directory; a new ``{log_dir}/{run_name}`` when None.
        history: Records of earlier stages (when resuming).
    """

    def __init__(self, args: TeamArgs, run_dir: str | None = None,
                 history: list[dict[str, Any]] | None = None) -> None:
        self.history: list[dict[str, Any]] = list(history or [])
        self.run_dir = run_dir or (str(Path(args.log_dir) / run_name(args)) if args.log_dir
                                   else None)
        self.writer = None
        if self.run_dir:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:
                raise ImportError("TensorBoard logging needs tensorboard: pip install "
                                  "tensorboard (or pass --log-dir '')") from exc
            _wait_for_a_later_second(self.run_dir)  # this file must sort after the run's others
            # on resume, drop what a killed run wrote after its last saved stage (later steps)
            self.writer = SummaryWriter(self.run_dir, purge_step=self.history[-1]["episodes"] + 1
                                        if self.history else None)
            if not self.history:
                table = "\n".join(f"|{key}|{value}|"
                                  for key, value in dataclasses.asdict(args).items())
                self.writer.add_text("hyperparameters", f"|param|value|\n|-|-|\n{table}")

    def log(self, record: dict[str, Any], step: int) -> None:
        """Keep ``record`` and write its finite numbers at ``step`` (episodes used), and its
        ``transcript`` (a sampled episode) as text."""
        self.history.append(record)
        if self.writer is None:
            return
        if isinstance(record.get("transcript"), str):
            self.writer.add_text("transcript", f"```\n{record['transcript']}\n```", step)
        for key, value in record.items():
            if isinstance(value, bool | int | float) and "/" in key and math.isfinite(value):
                self.writer.add_scalar(key, float(value), step)

    def close(self) -> None:
        """Flush and close TensorBoard."""
        if self.writer is not None:
            self.writer.close()
