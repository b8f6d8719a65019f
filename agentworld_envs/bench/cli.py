"""``agentworld wm``: evaluate world models (bench, fidelity) and export training data.

Examples::

    agentworld wm fidelity SAMPLE --backend '{"name": "hf", "model": "runs/wm"}'
    agentworld wm bench items/ --prompts prompts/ --backend '{"name": "openai", ...}' \\
        --judge '{"name": ...}' --out runs/bench     # stopped? the same command, --resume
    agentworld wm export --corpus runs/oracle --corpus runs/explore --out data/

``SAMPLE`` names the shipped AgentWorldBench-format sample. With ``--out``, each world-model
output and judge verdict is kept in a journal as it arrives (:mod:`agentworld_envs.bench.journal`),
so an interrupted run goes on with ``--resume``. The training commands (``sft``, ``rl``) live in
the trainers package; the console script adds them.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from agentworld_envs.atomic_write import write_text_atomic
from agentworld_envs.backends import (
    Backend,
    SamplingParams,
    make_backend,
    parse_backend_arg,
)
from agentworld_envs.backends.faults import DEFAULT_MAX_FAULTS, FaultTally, TooManyFaultsError
from agentworld_envs.backends.progress import WatchedBackend, progress_bar
from agentworld_envs.backends.registry import answering_settings
from agentworld_envs.cli_errors import (
    Interrupted,
    UsageError,
    directory_arg,
    int_at_least,
    number_type,
    seed_number,
)

if TYPE_CHECKING:
    from agentworld_envs.bench.journal import BenchJournal

__all__ = ["add_commands"]

def _watched(config: dict[str, Any], role: str, total: int | None,
             args: argparse.Namespace) -> tuple[Backend, WatchedBackend]:
    """The backend of ``config`` and its watched wrapper, with a progress bar on stderr (unless
    ``--no-progress``), that stops the run after more than ``--max-faults`` failed calls."""
    backend = make_backend(config)
    bar = progress_bar(total, role, "request", show=not args.no_progress)
    return backend, WatchedBackend(backend, bar, FaultTally(args.max_faults, f"{role} calls"))


def _items(paths: list[str]) -> list[Any]:
    """The bench items of ``paths``; none at all is a usage error."""
    from agentworld_envs.bench.items import load_items
    from agentworld_envs.bench.sample import sample_path

    items = load_items(*[sample_path() if p == "SAMPLE" else Path(p) for p in paths])
    if not items:
        raise UsageError(f"{' '.join(paths)}: no bench items to score (empty file(s))")
    return items


def _sampling(flags: str, **settings: Any) -> SamplingParams:
    """Sampling from command-line values; values no backend can honour are a usage error
    naming ``flags``."""
    try:
        return SamplingParams(top_p=None, **settings)
    except ValueError as error:
        raise UsageError(f"{flags}: {error}") from None


@dataclass(frozen=True)
class _Source:
    """Where a run's world-model outputs come from: an earlier run's (``saved``, one per
    item), or the backend of ``config`` with ``sampling``."""

    saved: list[str | None] | None = None
    config: dict[str, Any] | None = None
    sampling: SamplingParams | None = None


def _source(args: argparse.Namespace, items: list[Any]) -> _Source:
    """``--predictions`` read, or ``--backend`` and its sampling checked, before any call."""
    if args.predictions and args.backend:
        raise UsageError("give --backend (run the world model) or --predictions (reuse an "
                         "earlier run's outputs), not both")
    if args.predictions:
        saved = _predictions(Path(args.predictions))
        missing = [item.key for item in items if item.key not in saved]
        if missing:
            raise UsageError(f"{args.predictions} has no prediction for {missing[:5]}: give the "
                             "records.jsonl of a run over the same items")
        return _Source(saved=[saved[item.key] for item in items])
    if not args.backend:
        raise UsageError("give --backend, the world model to run (a name or JSON, e.g. "
                         "'{\"name\": \"hf\", \"model\": \"runs/wm\"}'), or --predictions, "
                         "an earlier run's records.jsonl")
    sampling = _sampling("--temperature/--max-tokens", temperature=args.temperature,
                         max_tokens=args.max_tokens, seed=args.seed)
    return _Source(config=parse_backend_arg(args.backend), sampling=sampling)


def _journal(args: argparse.Namespace, items: list[Any], source: _Source, **settings: Any
             ) -> BenchJournal:
    """The run's journal in ``--out`` (none without it), gone on with under ``--resume``.

    An earlier run's records and report are removed from ``--out`` (this run writes its own at
    its end), so that none passes for this run's if it is stopped, even by a kill; but not the
    ``--predictions`` file the run reads."""
    from agentworld_envs.bench.journal import BenchJournal

    settings = {"command": args.command, "items": [item.to_dict() for item in items],
                "predictions": source.saved, "world_model": answering_settings(source.config),
                "sampling": source.sampling.to_dict() if source.sampling else None, **settings}
    journal = BenchJournal(args.out or None, settings, [item.key for item in items], args.resume)
    if journal.path is not None:
        _remove(Path(args.out), "records.jsonl", "report.json", "report.md",
                keep=args.predictions)
    return journal


@contextmanager
def _resumable(args: argparse.Namespace, journal: BenchJournal) -> Iterator[None]:
    """Ctrl-C, or too many failed calls, in the block says where the results so far are kept
    and how to resume."""
    try:
        yield
    except (KeyboardInterrupt, TooManyFaultsError) as exc:
        if journal.path is None:
            raise
        argv = getattr(args, "argv", None)  # set by the console script
        again = shlex.join(["agentworld", *argv, *([] if "--resume" in argv else ["--resume"])]
                           ) if argv else "the same command and --resume"
        note = f"the outputs and verdicts so far are kept in {journal.path}; resume with: {again}"
        if isinstance(exc, KeyboardInterrupt):
            raise Interrupted(note) from None
        raise TooManyFaultsError(f"{exc}; {note}") from None


def _outputs(args: argparse.Namespace, items: list[Any], source: _Source,
             journal: BenchJournal) -> tuple[list[str | None], FaultTally]:
    """The outputs of ``source`` (the journal's, and fresh ones from the backend for the other
    items, each kept in the journal), and the tally of the world-model calls made."""
    from agentworld_envs.bench.run import predict

    if source.saved is not None:
        return source.saved, FaultTally(None)
    todo = sum(item.key not in journal.outputs for item in items)
    if not todo:
        return [journal.outputs[item.key] for item in items], FaultTally(None)
    backend, watched = _watched(source.config, "world-model", todo, args)
    with backend, watched.bar:
        outputs = predict(watched, items, source.sampling, args.batch_size,
                          done=journal.outputs, on_output=journal.add_output)
    return outputs, watched.tally


def _predictions(path: Path) -> dict[str, str | None]:
    """``key`` -> ``output`` of an earlier run's ``records.jsonl``.

    Raises:
        BenchFormatError: naming ``file:line`` of a line that is not such a record, or that
            repeats a key.
    """
    from agentworld_envs.bench.items import BenchFormatError, read_jsonl

    saved = {}
    for where, record in read_jsonl(path):
        if not (isinstance(record, dict) and isinstance(record.get("key"), str)
                and isinstance(record.get("output"), str | None)):
            raise BenchFormatError(f"{where}: a prediction needs a string key and an output "
                                   "(a string or null)")
        if record["key"] in saved:
            raise BenchFormatError(f"{where}: a second prediction for {record['key']}")
        saved[record["key"]] = record["output"]
    return saved


def _write(out: Path, result: Any, faulted: bool) -> None:
    """The run's files, each written whole or not at all. After failed model calls
    (``faulted``) only the records: a report would score or count the items left unanswered
    as if they had been answered, so none is written, and an earlier run's is removed."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(record, ensure_ascii=False) + "\n" for record in result.records]
    write_text_atomic(folder / "records.jsonl", "".join(lines))
    if faulted:
        _remove(folder, "report.json", "report.md")
        return
    write_text_atomic(folder / "report.json", json.dumps(result.to_dict(), indent=2))
    write_text_atomic(folder / "report.md", result.markdown() + "\n")


def _remove(folder: Path, *names: str, keep: str = "") -> None:
    """Remove an earlier run's files from ``folder``, so that none is read as this run's; but
    not ``keep``, the ``--predictions`` file the run reads (an earlier run's records)."""
    for path in (folder / name for name in names):
        if path.exists() and not (keep and path.samefile(keep)):
            path.unlink()


def _cmd_fidelity(args: argparse.Namespace) -> int:
    from agentworld_envs.bench.run import score_fidelity

    items = _items(args.items)
    source = _source(args, items)
    with _journal(args, items, source) as journal:
        with _resumable(args, journal):
            outputs, faults = _outputs(args, items, source, journal)
        result = score_fidelity(items, outputs)
        if args.out:
            _write(args.out, result, faulted=bool(faults.failed))
        faults.check(_no_table(args))
        journal.close(finished=True)
    print(result.markdown())
    _note_placeholders(args)
    return 0


def _unread(reasons: Iterable[str | None]) -> list[str]:
    """Of the failure reasons of bench records (None: scored), those of unreadable verdicts: a
    failed judge call (counted with the calls) or a missing generation is not one."""
    from agentworld_envs.bench.judge import JUDGE_BACKEND_ERROR
    from agentworld_envs.bench.run import NO_GENERATION

    return [reason for reason in reasons if reason and reason not in (JUDGE_BACKEND_ERROR,
                                                                      NO_GENERATION)]


def _cmd_bench(args: argparse.Namespace) -> int:
    from agentworld_envs.bench.judge import JUDGE_BACKEND_ERROR, JudgePrompts
    from agentworld_envs.bench.run import run_bench

    prompts = JudgePrompts.load(args.prompts)  # a bad prompt directory fails before any call
    items = _items(args.items)
    systems = prompts.systems(item.domain for item in items)  # so does a missing domain's
    source = _source(args, items)
    judge_config = parse_backend_arg(args.judge)
    sampling = _sampling("--judge-temperature/--judge-max-tokens",
                         temperature=args.judge_temperature, max_tokens=args.judge_max_tokens)
    with _journal(args, items, source, judge=answering_settings(judge_config),
                  judge_sampling=sampling.to_dict(), max_retries=args.max_retries,
                  prompts=[prompts.instructions, systems]) as journal:
        # after every check (the journal's too), so that a refused run prints its error alone
        print(f"judge instructions: {prompts.source}")
        with _resumable(args, journal):
            outputs, faults = _outputs(args, items, source, journal)
            # retries make the total unknown
            judge, watched = _watched(judge_config, "judge", None, args)
            with judge, watched.bar:
                result = run_bench(items, outputs, watched, sampling, args.max_retries - 1,
                                   args.batch_size, prompts=prompts, rule_caps=args.rule_caps,
                                   done=journal.verdicts, on_verdict=journal.add_verdict)
        unjudged = sum(record.get("reason") == JUDGE_BACKEND_ERROR for record in result.records)
        if args.out:
            _write(args.out, result, faulted=bool(faults.failed or unjudged))
        faults.check(_no_table(args))
        if unjudged:  # a judge call that failed but was retried with success decides nothing
            watched.tally.check(f"{unjudged} item(s) got no verdict; {_no_table(args)}")
        journal.close(finished=True)
    # unreadable verdicts are faults, as `wm rl` counts them; a verdict is final only after its
    # attempts, so they are counted at the end (with those of a resumed run's journal)
    unread = FaultTally(args.max_faults, "judge verdicts")
    try:
        unread.add(sum(bool(record["output"]) for record in result.records),
                   _unread(record.get("reason") for record in result.records))
    except TooManyFaultsError as error:
        raise TooManyFaultsError(f"{error}; {_no_table(args)}") from None
    print(result.markdown())
    _print_failure_examples(result.records)
    _note_placeholders(args)
    unread.check("the table above leaves those samples out" +
                 (f" (records in {args.out})" if args.out else ""))
    return 0


def _no_table(args: argparse.Namespace) -> str:
    """What a run with failed model calls leaves: no table; its records, if written."""
    return "no table is printed" + (f" (records in {args.out})" if args.out else "")


def _print_failure_examples(records: list[dict[str, Any]]) -> None:
    """Under the summary's failure counts: one example of each reason's error."""
    examples: dict[str, str] = {}
    for record in records:
        if record.get("failed") and record.get("error") not in (None, "", record["reason"]):
            examples.setdefault(record["reason"], str(record["error"]))
    for reason, error in examples.items():
        print(f"  {reason}, e.g. {error[:300]}")


def _note_placeholders(args: argparse.Namespace) -> None:
    """Say which backend is the scripted placeholder, whose outputs are no model's."""
    for flag, role, config in (("--backend", "world model", args.backend),
                               ("--judge", "judge", getattr(args, "judge", ""))):
        backend = parse_backend_arg(config) if config else {}
        if backend.get("name") == "scripted" and not backend.get("rules"):
            print(f"note: the {role} is the scripted placeholder, not a model: its outputs are "
                  f"placeholders (pass a model with {flag})")


def _cmd_export(args: argparse.Namespace) -> int:
    from agentworld_envs.bench.items import write_items
    from agentworld_envs.bench.transitions import (
        corpus_transitions,
        distinct_transitions,
        split_by_task,
    )

    items: list[Any] = []
    for corpus in tqdm(args.corpus, desc="export", unit="corpus", disable=None):
        found = corpus_transitions([corpus], start_id=len(items))
        if not found:
            raise UsageError(f"{corpus}: no transitions to export (the corpus holds no run "
                             "with a tool call)")
        items += found
    kept = distinct_transitions(items)
    train, val = split_by_task(kept, args.val_fraction, args.seed)
    out = Path(args.out)
    write_items(train, out / "train.jsonl")
    write_items(val, out / "val.jsonl")
    print(f"{len(train)} training and {len(val)} validation transitions in {out / 'train.jsonl'} "
          f"and {out / 'val.jsonl'} ({len(items) - len(kept)} repeated transitions left out; "
          f"train on the first: --train {out / 'train.jsonl'})")
    return 0


def _add_prediction_flags(parser: argparse.ArgumentParser, judged: bool) -> None:
    """The flags of the commands that score a world model's outputs; ``judged``: those of
    ``wm bench``, which also asks a judge."""
    parser.add_argument("items", nargs="+",
                        help="bench JSONL files or folders; SAMPLE for the shipped sample")
    parser.add_argument("--backend", default="",
                        help='world model: a backend name or JSON, e.g. \'{"name": "hf", '
                             '"model": "runs/wm"}\'')
    parser.add_argument("--predictions", default="",
                        help="reuse the outputs of an earlier run's records.jsonl")
    parser.add_argument("--max-tokens", type=int, default=32768,
                        help="world model's new tokens (default: AgentWorld's eval.py)")
    parser.add_argument("--temperature", type=float, default=0.6,
                        help="world model's temperature (default: AgentWorld's eval.py)")
    parser.add_argument("--seed", type=seed_number, default=None,
                        help="per-item seeds from this one (default: no seed, as eval.py)")
    parser.add_argument("--batch-size", type=int_at_least(1), default=32,
                        help="requests per backend call")
    parser.add_argument("--out", type=directory_arg,
                        help="folder for records.jsonl and the report, and the journal of the "
                             "outputs and verdicts so far while the run goes on")
    parser.add_argument("--resume", action="store_true",
                        help="go on with the unfinished run in --out (same items and settings; "
                             "--batch-size and --max-faults may differ): only the items it has "
                             f"no output{' or verdict' if judged else ''} for are asked for")
    calls = "failed model calls (world model, then judge)" if judged else \
        "failed world-model calls"
    verdicts = (" Unreadable judge verdicts, counted apart, end it with status 1 after the "
                "table, or past this number with no table.") if judged else ""
    parser.add_argument("--max-faults", type=int_at_least(-1), default=DEFAULT_MAX_FAULTS,
                        help=f"{calls} to go on after; one more stops the run; -1: never "
                             "stop. Any failed call ends the run with status 1 and no table."
                             f"{verdicts} (default: {DEFAULT_MAX_FAULTS})")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")


class _Renamed(argparse.Action):
    """An old flag that users' scripts still pass: a one-line error naming its replacement."""

    def __init__(self, option_strings: list[str], dest: str, new: str, **kwargs: Any):
        super().__init__(option_strings, dest, nargs="?", **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        raise UsageError(f"{option_string} was renamed {self.new}; pass {self.new} instead")


def add_commands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """Add the ``wm`` subcommands to the ``agentworld wm`` parser; return them, so that the
    console script can add the training commands."""
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    bench = commands.add_parser("bench", help="judge a world model as AgentWorldBench does")
    _add_prediction_flags(bench, judged=True)
    bench.add_argument("--judge", required=True, help="judge backend: a name or JSON")
    bench.add_argument("--prompts", default=None,
                       help="prompt directory in the release's layout for the judge's texts "
                            "(default: $AGENTWORLD_PROMPTS, else the built-in set)")
    bench.add_argument("--max-retries", type=int_at_least(1), default=3,
                       help="judge attempts per sample (at least 1), as eval.py's "
                            "--max-retries (default: 3)")
    bench.add_argument("--retries", action=_Renamed, new="--max-retries", help=argparse.SUPPRESS)
    bench.add_argument("--judge-max-tokens", type=int, default=32768,
                       help="judge's new tokens (default: AgentWorld's eval.py)")
    bench.add_argument("--judge-temperature", type=float, default=0.6,
                       help="judge's temperature (default: AgentWorld's eval.py)")
    bench.add_argument("--rule-caps", action="store_true",
                       help="also report our rule-capped scores, beside the compatible ones")
    bench.set_defaults(handler=_cmd_bench)

    fidelity = commands.add_parser("fidelity", help="judge-free fidelity (exact, structural)")
    _add_prediction_flags(fidelity, judged=False)
    fidelity.set_defaults(handler=_cmd_fidelity)

    export = commands.add_parser("export", help="run corpora to train/val transition files")
    export.add_argument("--corpus", action="append", required=True,
                        help="an AgentFloor run corpus folder (repeatable)")
    export.add_argument("--out", type=directory_arg, required=True,
                        help="folder for the train and val transition files")
    export.add_argument("--val-fraction", type=number_type(float, 0, 1, below_high=True),
                        default=0.2, help="share of TASKS held out, in [0, 1)")
    export.add_argument("--seed", type=seed_number, default=0,
                        help="the draw of the held-out tasks")
    export.set_defaults(handler=_cmd_export)
    return commands
