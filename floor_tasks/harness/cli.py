"""``agentworld floor``: list tasks, run agents and sweeps, report, compare and re-score corpora."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentworld_envs.backends.registry import parse_backend_arg
from agentworld_envs.cli_errors import (
    UnknownNameError,
    UsageError,
    directory_arg,
    int_at_least,
    name_of,
    number_type,
    on_interrupt,
)

if TYPE_CHECKING:
    from floor_tasks.harness.record import RunRecord

__all__ = ["add_commands", "backend_arg", "check_task_ids", "fraction", "positive_int",
           "task_selector"]


def backend_arg(value: str) -> dict[str, Any]:
    """An argparse type: a backend given as a name (``oracle``) or as a JSON object.

    A file the backend reads that is not there (a ``replay`` path) stays a
    ``FileNotFoundError``, which the console script reports as one line, exit status 2,
    before the command makes anything."""
    try:
        return parse_backend_arg(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


positive_int = int_at_least(1)
"""An argparse type: an integer of at least 1."""
fraction = number_type(float, 0, 1)
"""An argparse type: a number from 0 to 1 (0.1 is 10 percentage points)."""


def _tiers() -> tuple[str, ...]:
    from floor_tasks.task import TIERS

    return tuple(TIERS)


def _selector(value: str) -> str | list[str]:
    """Keep "all" and "tier:..." selectors; split anything else on commas."""
    if value == "all" or value.startswith("tier:"):
        return value
    return [v.strip() for v in value.split(",") if v.strip()]


def check_task_ids(task_ids: Iterable[str]) -> None:
    """Raise :class:`UnknownNameError` (naming the nearest ids) for an id that is no task's."""
    from floor_tasks import TASK_IDS

    for task_id in task_ids:
        if task_id not in TASK_IDS:
            raise UnknownNameError("task id", task_id, TASK_IDS, listing="agentworld floor list")


def task_selector(value: str) -> str | list[str]:
    """An argparse type for ``--tasks``: ``"all"``, ``"tier:A,B"`` naming known tiers, or
    comma-separated task ids that all exist, each once; anything else is one line."""
    from floor_tasks.harness.sweep_config import check_task_selector

    selected = _selector(value)
    try:
        check_task_ids(selected if isinstance(selected, list) else ())
        check_task_selector(selected)
    except ValueError as exc:  # UnknownNameError too
        raise argparse.ArgumentTypeError(str(exc)) from None
    return selected


def _cmd_list(args: argparse.Namespace) -> int:
    from floor_tasks.task import TIER_NAMES, load_tasks

    print(f"{'id':<4} {'tier':<4} {'steps':>5} {'variants':>8}  title (tools)")
    for task in load_tasks():
        if args.tier and task.tier not in args.tier:
            continue
        tools = ", ".join(task.tools) or "no tools"
        print(f"{task.id:<4} {task.tier:<4} {task.max_steps:>5} {len(task.variant_names):>8}  "
              f"{task.title} ({tools})")
    print("\ntiers: " + "; ".join(f"{t} = {n}" for t, n in TIER_NAMES.items()))
    return 0


def _described_arm(arm: Any) -> str:
    """What an arm runs, in words: the oracle is said to be no model."""
    backend = arm.backend
    if backend["name"] == "oracle":
        return "the reference solutions (oracle), not a model"
    model = backend.get("model")
    return f"{arm.slug} ({backend['name']}{f', {model}' if model else ''})"


def _resume_command(args: argparse.Namespace) -> str:
    argv = getattr(args, "argv", None)  # set by the console script
    return shlex.join(["agentworld", *argv]) if argv else "the same command"


def _resumable(args: argparse.Namespace, corpus: Path, sweep: Callable[[], Any]) -> Any:
    """Run ``sweep``; Ctrl-C says where the finished runs are and how to resume them."""
    with on_interrupt(f"finished runs are saved in {corpus}; "
                      f"resume with: {_resume_command(args)}"):
        return sweep()


def _finish(outcome: Any, report_dir: Path | None, config: Any,
            args: argparse.Namespace) -> int:
    """Print the ladder, then two lines: what ran and what the tiers are; where it all went.

    A sweep with failed model calls prints no ladder: it raises
    :class:`~agentworld_envs.backends.faults.TooManyFaultsError`, one line that counts them,
    says why and how many runs are recorded. Other failed runs print one line each on stderr
    and, in place of the ladder, how many planned runs are recorded; the status is then 1.
    """
    from agentworld_envs.backends.faults import TooManyFaultsError
    from floor_tasks.harness.corpus import ERRORS_FILE
    from floor_tasks.harness.corpus_io import read_records
    from floor_tasks.harness.report import render_ladder_text, write_report
    from floor_tasks.task import TIER_NAMES

    where = (f"{outcome.recorded} of {outcome.planned} planned runs recorded, {outcome.failed} "
             f"failed (errors in {outcome.corpus / ERRORS_FILE}); resume with: "
             f"{_resume_command(args)}")
    if outcome.faults.failed:
        raise TooManyFaultsError(f"{outcome.faults.summary()}; no ladder is printed; {where}")
    if outcome.status != "finished":
        for error in outcome.errors:
            print(f"error: {error}", file=sys.stderr)
        print(f"incomplete: {where}; no ladder is printed")
        return 1
    records = read_records(outcome.corpus)
    print(render_ladder_text(records))
    ran = "; ".join(dict.fromkeys(_described_arm(arm) for arm in config.arms()))
    tiers = ", ".join(f"{tier} {name}" for tier, name in TIER_NAMES.items())
    print(f"\nran: {ran}. tiers: {tiers}.")
    if report_dir is not None:
        write_report(records, report_dir)
        report = f"report: {report_dir / 'report.md'}"
    else:
        report = f"report: none (write one with: agentworld floor report {outcome.corpus})"
    print(f"corpus: {outcome.corpus} ({outcome.written} new runs, "
          f"{outcome.skipped} already done); {report}")
    return 0


def _default_name(model: str) -> str:
    """A run name from a model id or path: its last component, in the characters names allow.

    Example:
        >>> _default_name("/work/models/Qwen3-1.7B/"), _default_name("Qwen/Qwen3-8B")
        ('Qwen3-1.7B', 'Qwen3-8B')
    """
    last = model.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._:@-]", "_", last).lstrip("._:@-") or "model"


def _cmd_run(args: argparse.Namespace) -> int:
    from floor_tasks.harness.sweep import run_sweep, single_model_config

    name = args.name or _default_name(args.backend.get("model") or args.backend["name"])
    config = single_model_config(
        args.backend, name=name, tasks=args.tasks, variants=_selector(args.variants),
        repeats=args.repeats, results_dir=str(args.out or Path("runs") / name),
        system_prompt_suffix=args.system_prompt_suffix, max_steps_override=args.max_steps,
        thinking=args.thinking, max_tokens=args.max_tokens)
    outcome = _resumable(args, Path(config.results_dir), lambda: run_sweep(
        config, progress=not args.no_progress, batch_size=args.batch_size))
    return _finish(outcome, args.report, config, args)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from floor_tasks.harness.sweep import run_sweep
    from floor_tasks.harness.sweep_config import load_sweep

    config = load_sweep(args.config)
    outcome = _resumable(args, Path(args.out or config.results_dir), lambda: run_sweep(
        config, args.out, progress=not args.no_progress, batch_size=args.batch_size))
    return _finish(outcome, args.report, config, args)


def _read_corpora(paths: Sequence[str]) -> list[RunRecord]:
    """The records of the corpora at ``paths``, checked.

    Raises:
        UsageError: when a run id is in two of them, or they hold no record.
    """
    from floor_tasks.harness.corpus_io import read_records

    records: list[RunRecord] = []
    seen: dict[str, str] = {}
    for path in paths:
        for record in read_records(path):
            if record.run_id in seen:
                raise UsageError(f"run {record.run_id!r} is in both {seen[record.run_id]} and "
                                 f"{path}: name each corpus once, and give the runs of different "
                                 "corpora different model names (--name)")
            seen[record.run_id] = path
            records.append(record)
    if not records:
        raise UsageError(f"no run records in {', '.join(paths)}")
    return records


def _cmd_report(args: argparse.Namespace) -> int:
    from floor_tasks.harness.corpus_io import runs_file
    from floor_tasks.harness.report import render_ladder_text, write_report
    from floor_tasks.harness.sweep_config import load_sweep

    records = _read_corpora(args.corpus)
    prices = params = None
    if args.sweep:
        config = load_sweep(args.sweep)
        prices, params = config.price_table(), config.param_table()
    print(render_ladder_text(records))
    out = args.out or runs_file(args.corpus[0]).parent / "report"
    write_report(records, out, prices=prices, params=params)
    print(f"\nreport: {out / 'report.md'}")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from floor_tasks.harness.compare import compare_corpora
    from floor_tasks.harness.corpus_io import read_records

    result = compare_corpora(read_records(args.base), read_records(args.new),
                             threshold=args.threshold, allow_missing=args.allow_missing)
    print(result.render())
    return 0 if result.ok else 1


def _cmd_rescore(args: argparse.Namespace) -> int:
    from floor_tasks.harness.corpus import RunCorpus, read_metadata, write_records
    from floor_tasks.harness.corpus_io import RUNS_FILE, runs_file
    from floor_tasks.harness.rescore import UnfinishedRunError, rescore

    records = _read_corpora([args.corpus])
    source = runs_file(args.corpus)
    metadata = {**read_metadata(source.parent), "rescored_from": str(source)}
    out = args.out or source.parent / "rescored"
    if (out / RUNS_FILE).resolve() == source.resolve():
        raise UsageError(f"--out {out} is the corpus being re-scored; name another directory")
    try:
        rescored, changed = rescore(records)
    except UnfinishedRunError as exc:
        raise UsageError(f"{source}: cannot re-score {exc}; nothing was written") from None
    write_records(out, rescored)
    RunCorpus(out).write_metadata(metadata)  # the source's (an older one in --out is stale)
    print(f"re-scored {len(rescored)} runs into {out}; {len(changed)} changed pass/fail")
    for run_id in changed:
        print(f"  changed: {run_id}")
    return 0


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=directory_arg,
                        help="corpus directory (resumed if it exists)")
    parser.add_argument("--report", type=directory_arg,
                        help="also write report.md and ladder.png here")
    parser.add_argument("--batch-size", type=positive_int, default=16,
                        help="episodes advanced together in one batched model call")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def add_commands(parser: argparse.ArgumentParser) -> None:
    """Add the ``floor`` subcommands to ``parser``."""
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = commands.add_parser("list", help="list the 30 tasks")
    p.add_argument("--tier", nargs="*", type=name_of("tier", _tiers), help="only these tiers")
    p.set_defaults(handler=_cmd_list)

    p = commands.add_parser("run", help="run one agent over tasks (default: the oracle, all 30)")
    p.add_argument("--backend", type=backend_arg, default={"name": "oracle"},
                   help='backend name or JSON, e.g. \'{"name": "openai", "model": "qwen3-8b", '
                        '"base_url": "http://127.0.0.1:8000/v1"}\' (default: oracle)')
    p.add_argument("--name", help="model slug for the records (default: from the backend)")
    p.add_argument("--tasks", default="all", type=task_selector,
                   help='"all", "tier:A,B" or comma-separated ids')
    p.add_argument("--variants", default="v0", help='"all" or comma-separated names (v0,i1)')
    p.add_argument("--repeats", type=int, default=1, help="runs of each task and variant")
    p.add_argument("--max-steps", type=int, help="override every task's step budget")
    p.add_argument("--max-tokens", type=int, help="completion token limit per turn")
    p.add_argument("--system-prompt-suffix", help="text appended to the system prompt")
    p.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=None,
                   help="turn the model's thinking mode on or off (chat template flag)")
    _add_run_options(p)
    p.set_defaults(handler=_cmd_run)

    p = commands.add_parser("sweep", help="run a YAML sweep config")
    p.add_argument("config", type=Path, help="the sweep's YAML file (see examples/sweeps/)")
    _add_run_options(p)
    p.set_defaults(handler=_cmd_sweep)

    p = commands.add_parser("report", help="tier ladder, failures, cost and routing of corpora")
    p.add_argument("corpus", nargs="+", help="corpus directories or runs.jsonl files")
    p.add_argument("--out", type=directory_arg,
                   help="report directory (default: report/ beside the first corpus's runs.jsonl)")
    p.add_argument("--sweep", type=Path, help="sweep config with prices and model sizes")
    p.set_defaults(handler=_cmd_report)

    p = commands.add_parser("compare", help="exit 1 if NEW regressed against BASE or lacks "
                            "some of its cases")
    p.add_argument("base", help="the reference corpus (a directory or its runs.jsonl)")
    p.add_argument("new", help="the corpus checked against it")
    p.add_argument("--threshold", type=fraction, default=0.10,
                   help="largest tolerated drop of a task or tier pass rate, from 0 to 1")
    p.add_argument("--allow-missing", action="store_true",
                   help="pass although some BASE cases have no run in NEW")
    p.set_defaults(handler=_cmd_compare)

    p = commands.add_parser("rescore", help="re-score a corpus without calling any model")
    p.add_argument("corpus", help="a corpus directory or its runs.jsonl")
    p.add_argument("--out", type=directory_arg,
                   help="corpus for the re-scored runs, its runs.jsonl replaced "
                        "(default: rescored/ beside the corpus's runs.jsonl)")
    p.set_defaults(handler=_cmd_rescore)
