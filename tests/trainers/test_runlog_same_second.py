"""A run resumed within the second its last TensorBoard file was opened still logs each point
once.

TensorBoard reads a run's event files in name order; names opened in one second sort by host,
process and a per-process counter, as text, so a process's tenth writer sorted before its ninth
and the resumed file was read before the one it purges: the run's old final point stayed and
its new points were lost.
"""

from __future__ import annotations

import time
from pathlib import Path

from trainers.common.args import TeamArgs
from trainers.common.runlog import RunLogger


def points(run_dir: str) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)]
            for tag in events.Tags()["scalars"]}


def test_a_run_resumed_in_the_second_of_its_last_file_logs_each_point_once(
        tmp_path: Path) -> None:
    args = TeamArgs(log_dir=str(tmp_path))
    first = RunLogger(args)
    for step in (0, 256, 512):
        first.log({"episodes": step, "charts/reward": float(step)}, step)
    first.log({"episodes": 512, "charts/final_eval": 512.0}, 512)
    first.close()
    (old,) = Path(first.run_dir).glob("events.out.tfevents.*")
    # opened this second by this process, its counter past the next writer's (as text)
    name = old.name.split(".")
    name[3], name[-1] = f"{int(time.time()):010d}", "99999999"
    old.rename(old.with_name(".".join(name)))

    resumed = RunLogger(args, first.run_dir, first.history[:-2])
    resumed.log(first.history[-2], 512)  # as a resumed run logs its last saved stage again
    resumed.log({"episodes": 768, "charts/reward": 768.0}, 768)
    resumed.log({"episodes": 768, "charts/final_eval": 768.0}, 768)
    resumed.close()
    assert points(first.run_dir) == {
        "charts/reward": [(0, 0.0), (256, 256.0), (512, 512.0), (768, 768.0)],
        "charts/final_eval": [(768, 768.0)]}
