"""Run a sweep into a run corpus, resuming where an earlier run of it stopped.

A corpus holds each arm's runs under one set of settings: ``metadata.json`` keeps the
:func:`fingerprint` of every arm that ran into it, and a sweep whose arm has runs there under
another fingerprint is refused before it writes anything.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import platform
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentworld_envs.backends import Backend
from agentworld_envs.backends.faults import FaultTally, TalliedBackend
from agentworld_envs.backends.progress import progress_bar
from agentworld_envs.backends.redaction import redact
from agentworld_envs.cli_errors import refused_value
from agentworld_envs.protocol.shown import shown
from floor_tasks.harness.agents import as_backend
from floor_tasks.harness.corpus import RunCorpus, read_metadata, writer_lock
from floor_tasks.harness.runner import Job, RunSettings, run_jobs
from floor_tasks.harness.sweep_config import (
    Arm,
    RunSpec,
    SweepConfig,
    SweepConfigError,
    expand,
)
from floor_tasks.task import load_tasks

__all__ = ["SettingsMismatchError", "SweepOutcome", "UnfingerprintedRunsWarning", "fingerprint",
           "plan", "package_versions", "run_seed", "run_sweep", "single_model_config"]


class SettingsMismatchError(SweepConfigError):
    """An arm's settings differ from those its runs in the corpus were recorded with."""


class UnfingerprintedRunsWarning(UserWarning):
    """The corpus holds runs of an arm recorded before fingerprints (by an older agentworld):
    they resume without a check that the settings are the same."""


@dataclass
class SweepOutcome:
    """What a sweep run did: its status (as ``metadata.json`` says it), runs planned, records
    written, runs skipped as done, runs failed (no record: a run error, or left by a failed
    arm), the agent's model calls and failures, and the error messages."""

    corpus: Path
    status: str = "running"
    planned: int = 0
    written: int = 0
    skipped: int = 0
    failed: int = 0
    faults: FaultTally = field(default_factory=lambda: FaultTally(None, "agent model calls"))
    errors: list[str] = field(default_factory=list)
    probes: dict[str, str] = field(default_factory=dict)

    @property
    def recorded(self) -> int:
        """Planned runs with a record: those written now and those done before."""
        return self.written + self.skipped


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages that shape a run, for ``metadata.json``."""
    versions = {"python": platform.python_version()}
    for name in ("agentworld", "gymnasium", "numpy", "pydantic", "transformers", "torch", "vllm"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def plan(config: SweepConfig) -> list[RunSpec]:
    """Every run of the sweep, in order."""
    tasks = load_tasks()
    return expand(config, [t.id for t in tasks], {t.id: t.tier for t in tasks},
                  {t.id: t.variant_names for t in tasks})


def run_seed(spec: RunSpec) -> int:
    """The seed of one run (env reset and sampling): the arm's seed plus the repeat index."""
    return spec.settings.seed + spec.repeat


def fingerprint(arm: Arm) -> dict[str, Any]:
    """What the runs of one arm in a corpus share, in JSON form: the backend config (secrets
    redacted), the system prompt's SHA-256, the sampling and the step budget."""
    settings = arm.settings.run_settings().to_dict()
    return json.loads(json.dumps(redact({"backend": arm.backend, **settings}), default=str))


class _Absent:
    def __repr__(self) -> str:
        return "absent"


_ABSENT = _Absent()
"""A setting one of two fingerprints does not have."""


def _differences(old: Any, new: Any, where: str = "") -> list[str]:
    """Each leaf where ``old`` and ``new`` differ, as ``path: old -> new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [change for key in sorted(old.keys() | new.keys())
                for change in _differences(old.get(key, _ABSENT), new.get(key, _ABSENT),
                                           f"{where}.{key}" if where else key)]
    return [] if old == new else [f"{where}: {shown(old)} -> {shown(new)}"]


def _check_fingerprints(corpus: RunCorpus, recorded: Mapping[str, Any],
                        fingerprints: Mapping[str, Any]) -> None:
    """Refuse an arm with runs in the corpus whose fingerprint differs from the one recorded
    under its name; warn of one with runs but no recorded fingerprint."""
    with_runs = {run_id.split("|", 1)[0] for run_id in corpus.done_ids()} & fingerprints.keys()
    for slug in sorted(with_runs & recorded.keys()):
        if recorded[slug] != fingerprints[slug]:
            raise SettingsMismatchError(
                f"{corpus.dir}: the runs of {slug} there were made with other settings "
                f"({'; '.join(_differences(recorded[slug], fingerprints[slug]))}); resume with "
                "the same settings, or run these under another model name (--name) or into "
                "another corpus (--out)")
    if unchecked := sorted(with_runs - recorded.keys()):
        warnings.warn(f"{corpus.dir}: the runs of {', '.join(unchecked)} there were recorded by "
                      "an older agentworld, without settings fingerprints; resuming them "
                      "without checking that the backend and settings are the same",
                      UnfingerprintedRunsWarning, stacklevel=4)


def _probe(backend: Backend) -> str:
    """Classify a server model's tool support; non-server backends are taken as native."""
    if backend.name != "openai":
        return "native"
    from agentworld_envs.backends.openai_compat import probe_tool_support

    return probe_tool_support(backend, backend.describe().get("model", ""))


def _server(backend: Backend) -> str:
    """The model and server URLs of a backend, for messages."""
    described = backend.describe()
    urls = ", ".join(described.get("base_urls", ())) or "its server"
    return f"{described.get('model', backend.name)} at {urls}"


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _described(exc: BaseException) -> tuple[str, str]:
    """``Type: message`` and the formatted traceback of ``exc``."""
    return f"{type(exc).__name__}: {exc}", "".join(traceback.format_exception(exc))


class _Arm:
    """One arm's runs into the corpus: records appended, failures logged, counts kept."""

    def __init__(self, corpus: RunCorpus, outcome: SweepOutcome, runs: list[RunSpec],
                 bar: Any) -> None:
        self.corpus, self.outcome, self.bar = corpus, outcome, bar
        self.spec = runs[0]
        self.slug = self.spec.model_slug
        self.jobs = {s.run_id: Job(task_id=s.task_id, variant=s.variant, repeat=s.repeat,
                                   model=self.slug, seed=run_seed(s)) for s in runs}
        self.pending = set(self.jobs)

    def run_failed(self, job: Job, exc: Exception) -> None:
        """One run raised: log it with its identity; it reruns on resume."""
        error, trace = _described(exc)
        self.corpus.log_error([job.run_id], error, kind="run", traceback=trace,
                              timestamp_utc=_now())
        self.pending.discard(job.run_id)
        self.outcome.failed += 1
        self.outcome.errors.append(f"{job.run_id}: {error} (rerun on resume)")
        self.bar.update()

    def arm_failed(self, exc: Exception) -> None:
        """The backend (or the arm's set-up) failed: log the runs it left unfinished."""
        error, trace = _described(exc)
        self.corpus.log_error(sorted(self.pending), error, kind="arm", traceback=trace,
                              timestamp_utc=_now())
        self.skip(f"{error} ({len(self.pending)} runs left for resume)")

    def skip(self, why: str) -> None:
        """The arm's unfinished runs fail, for ``why``."""
        self.outcome.failed += len(self.pending)
        self.outcome.errors.append(f"{self.slug}: {why}")
        self.pending.clear()

    def run(self, backend: Backend, settings: RunSettings, batch_size: int) -> None:
        """Run the arm's jobs, appending each record as it ends; the calls are counted in the
        outcome's ``faults``."""
        for record in run_jobs(list(self.jobs.values()), TalliedBackend(backend,
                                                                        self.outcome.faults),
                               settings, batch_size=batch_size, on_error=self.run_failed):
            job = self.jobs[record.run_id]
            try:
                self.corpus.append(record)
            except (TypeError, ValueError) as exc:  # a record that cannot be written
                self.run_failed(job, exc)
                continue
            self.pending.discard(job.run_id)
            self.outcome.written += 1
            self.bar.update()


def run_sweep(config: SweepConfig, out_dir: str | Path | None = None, *, progress: bool = True,
              batch_size: int = 16,
              make_agent: Callable[[dict[str, Any]], Backend] = as_backend) -> SweepOutcome:
    """Run every run of ``config`` not yet in the corpus, appending one record per run.

    ``metadata.json`` is written first (``"status": "running"``) and rewritten when the sweep
    ends: ``"finished"`` when every planned run has a record, else ``"incomplete"``, or
    ``"interrupted"`` when an exception (Ctrl-C) escapes; with the counts ``runs_planned``,
    ``runs_recorded`` and ``runs_failed``. Records are appended as runs end, so those complete
    before Ctrl-C are kept, and the backend's calls in flight are cancelled. A run that raises is
    logged to ``errors.jsonl`` (``"kind": "run"``, with its run id and traceback) and the other
    runs go on; a backend failure (any exception from the backend) stops that arm, its
    unfinished runs are logged (``"kind": "arm"``) and the sweep goes on with the next arm.
    Failed runs have no record, so a resumed sweep runs them again (and logs them again if they
    fail again).

    The corpus's :func:`~floor_tasks.harness.corpus.writer_lock` is held throughout. The
    :func:`fingerprint` of each arm with runs in the corpus is checked against
    ``metadata.json``'s ``fingerprints`` before anything is written (an arm without runs there
    takes its new settings); its ``fingerprints``, ``arms``, ``probes`` and ``seeds`` keep the
    entries of earlier sweeps. Runs of an arm recorded before fingerprints are resumed
    unchecked, with an :class:`UnfingerprintedRunsWarning`.

    Raises:
        SweepConfigError: for tasks or variants that do not exist; a
            :class:`SettingsMismatchError` naming what differs, for an arm whose runs in the
            corpus were made with other settings.
        CorpusLockedError: when another sweep or rescore is writing the corpus.
        CorruptCorpusError: when the corpus to resume fails its integrity checks.
    """
    specs = plan(config)
    with writer_lock(out_dir or Path(config.results_dir)) as directory:
        corpus, metadata = _open(directory, config, specs, batch_size)
        return _run(corpus, specs, config, metadata, progress, batch_size, make_agent)


def _open(directory: Path, config: SweepConfig, specs: list[RunSpec],
          batch_size: int) -> tuple[RunCorpus, dict[str, Any]]:
    """The corpus to resume, its arms' fingerprints checked, and the sweep's ``metadata.json``
    with the maps of earlier sweeps merged in."""
    previous = read_metadata(directory)
    corpus = RunCorpus(directory)
    fingerprints = {arm.slug: fingerprint(arm) for arm in config.arms()}
    _check_fingerprints(corpus, previous.get("fingerprints", {}), fingerprints)
    maps = {"fingerprints": fingerprints, "arms": {}, "probes": {},
            "seeds": {s.run_id: run_seed(s) for s in specs}}
    return corpus, {
        "status": "running", "started_utc": _now(), "sweep": config.model_dump(mode="json"),
        "versions": package_versions(), "runs_planned": len(specs), "batch_size": batch_size,
        **{key: {**previous.get(key, {}), **new} for key, new in maps.items()}}


def _run(corpus: RunCorpus, specs: list[RunSpec], config: SweepConfig, metadata: dict[str, Any],
         progress: bool, batch_size: int,
         make_agent: Callable[[dict[str, Any]], Backend]) -> SweepOutcome:
    """Run the planned runs not yet recorded, writing ``metadata`` first and again at the
    end."""
    done = corpus.done_ids()
    outcome = SweepOutcome(corpus=corpus.dir, planned=len(specs),
                           skipped=sum(s.run_id in done for s in specs))
    todo = [s for s in specs if s.run_id not in done]
    corpus.write_metadata(metadata)
    bar = progress_bar(len(todo), config.sweep_name, "run", show=progress)
    outcome.status = "interrupted"
    try:
        for _, group in groupby(todo, key=lambda s: s.model_slug):
            _run_arm(_Arm(corpus, outcome, list(group), bar), config, metadata["arms"],
                     make_agent, batch_size)
        outcome.status = "finished" if outcome.recorded == len(specs) else "incomplete"
    finally:
        bar.close()
        corpus.write_metadata({**metadata, "probes": {**metadata["probes"], **outcome.probes},
                               "status": outcome.status, "ended_utc": _now(),
                               "runs_recorded": outcome.recorded, "runs_failed": outcome.failed,
                               "errors": len(outcome.errors),
                               "model_calls": outcome.faults.calls,
                               "model_calls_failed": outcome.faults.failed})
    return outcome


def _run_arm(arm: _Arm, config: SweepConfig, arms: dict[str, Any],
             make_agent: Callable[[dict[str, Any]], Backend], batch_size: int) -> None:
    """Make the arm's backend, probe it if asked and run the arm; a failure is logged."""
    try:
        settings = arm.spec.settings.run_settings()
        backend = make_agent(arm.spec.backend)
    except Exception as exc:
        arm.arm_failed(exc)
        return
    try:
        arms[arm.slug] = {"backend": backend.describe(), "system_prompt": settings.system_prompt,
                          "settings": settings.to_dict()}
        if config.probe_before_run:
            probe = arm.outcome.probes[arm.slug] = _probe(backend)
            if probe == "no_tools":
                arm.skip(f"{_server(backend)} calls no tools (tool-support probe); arm "
                         f"skipped, {len(arm.pending)} runs left")
                return
        arm.run(backend, settings, batch_size)
    except KeyboardInterrupt:
        backend.cancel()  # the server must not go on working for nothing
        raise
    except Exception as exc:
        arm.arm_failed(exc)
    finally:
        backend.close()


def single_model_config(backend: dict[str, Any], *, name: str, tasks: Any = "all",
                        variants: Any = ("v0",), repeats: int = 1,
                        results_dir: str = "runs", **settings: Any) -> SweepConfig:
    """A one-model sweep config, as ``agentworld floor run`` builds it from flags.

    Raises:
        SweepConfigError: a setting that does not fit, one line each, named by the flag that
            sets it (``--max-steps: must be greater than 0, got 0``).
    """
    try:
        return SweepConfig.model_validate({
            "sweep_name": name, "results_dir": results_dir, "tasks": tasks,
            "variants": variants if variants == "all" else list(variants), "repeats": repeats,
            "models": [{"name": name, "backend": backend, **{
                k: v for k, v in settings.items() if v is not None}}]})
    except ValidationError as exc:
        raise SweepConfigError(_flag_errors(exc)) from None


_RUN_FLAGS = {"sweep_name": "--name", "results_dir": "--out", "max_steps_override": "--max-steps"}
"""The ``agentworld floor run`` flags not named after the config field they set (the others
are its name in dashes: ``max_tokens`` is ``--max-tokens``)."""


def _flag_errors(exc: ValidationError) -> str:
    """``exc``'s errors, one line each, under the ``agentworld floor run`` flag that set the
    field (the model's own fields too: ``models.0.max_tokens`` is ``--max-tokens``)."""
    lines = []
    for error in exc.errors():
        loc = error["loc"][2:] if error["loc"][:1] == ("models",) else error["loc"]
        field = str(loc[0]) if loc else ""
        flag = _RUN_FLAGS.get(field, f"--{field.replace('_', '-')}")
        lines.append(f"{flag}: {refused_value(error)}" if loc else refused_value(error))
    return "\n".join(dict.fromkeys(lines))  # --name sets two fields

