"""Run a sweep into a run corpus, resuming where an earlier run of it stopped."""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from agentworld_envs.backends import Backend, BackendError
from floor_tasks.harness.agents import as_backend
from floor_tasks.harness.corpus import RunCorpus
from floor_tasks.harness.runner import Job, RunSettings, run_jobs
from floor_tasks.harness.sweep_config import RunSpec, SweepConfig, expand
from floor_tasks.task import load_tasks

__all__ = ["SweepOutcome", "plan", "package_versions", "run_seed", "run_sweep",
           "single_model_config"]


@dataclass
class SweepOutcome:
    """What a sweep run did: records written, runs skipped as done, and failures."""

    corpus: Path
    written: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    probes: dict[str, str] = field(default_factory=dict)


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
    return spec.settings.get("seed", 0) + spec.repeat


def _probe(backend: Backend) -> str:
    """Classify a server model's tool support; non-server backends are taken as native."""
    if backend.name != "openai":
        return "native"
    from agentworld_envs.backends.openai_compat import probe_tool_support

    return probe_tool_support(backend, backend.describe().get("model", ""))


def run_sweep(config: SweepConfig, out_dir: str | Path | None = None, *, progress: bool = True,
              batch_size: int = 16,
              make_agent: Callable[[dict[str, Any]], Backend] = as_backend) -> SweepOutcome:
    """Run every run of ``config`` not yet in the corpus, appending one record per run.

    A backend failure stops that arm (its unfinished runs are logged to ``errors.jsonl`` and
    rerun on resume) and the sweep goes on with the next arm.
    """
    corpus = RunCorpus(out_dir or Path(config.results_dir))
    specs = plan(config)
    done = corpus.done_ids()
    outcome = SweepOutcome(corpus=corpus.dir, skipped=sum(s.run_id in done for s in specs))
    todo = [s for s in specs if s.run_id not in done]
    arms: dict[str, dict[str, Any]] = {}
    bar = tqdm(total=len(todo), desc=config.sweep_name, unit="run", disable=not progress)
    for slug, group in groupby(todo, key=lambda s: s.model_slug):
        runs = list(group)
        settings = RunSettings.from_dict(runs[0].settings)
        backend = make_agent(runs[0].backend)
        jobs = [Job(task_id=s.task_id, variant=s.variant, repeat=s.repeat, model=slug,
                    seed=run_seed(s)) for s in runs]
        pending = {j.run_id for j in jobs}
        arms[slug] = {"backend": backend.describe(), "system_prompt": settings.system_prompt,
                      "settings": settings.to_dict()}
        try:
            if config.probe_before_run:
                outcome.probes[slug] = _probe(backend)
                if outcome.probes[slug] in ("no_tools", "error"):
                    outcome.errors.append(f"{slug}: tool-support probe said "
                                          f"{outcome.probes[slug]!r}; arm skipped")
                    continue
            for record in run_jobs(jobs, backend, settings, batch_size=batch_size):
                corpus.append(record)
                pending.discard(record["run_id"])
                outcome.written += 1
                bar.update()
        except BackendError as exc:
            corpus.log_error(sorted(pending), str(exc))
            outcome.errors.append(f"{slug}: {exc} ({len(pending)} runs left for resume)")
        finally:
            backend.close()
    bar.close()
    corpus.write_metadata({
        "sweep": config.model_dump(mode="json"), "arms": arms, "probes": outcome.probes,
        "versions": package_versions(), "runs_planned": len(specs),
        "batch_size": batch_size, "seeds": {s.run_id: run_seed(s) for s in specs},
    })
    return outcome


def single_model_config(backend: dict[str, Any], *, name: str, tasks: Any = "all",
                        variants: Any = ("v0",), repeats: int = 1,
                        results_dir: str = "runs", **settings: Any) -> SweepConfig:
    """A one-model sweep config, as ``agentworld floor run`` builds it from flags."""
    return SweepConfig.model_validate({
        "sweep_name": name, "results_dir": results_dir, "tasks": tasks,
        "variants": variants if variants == "all" else list(variants), "repeats": repeats,
        "models": [{"name": name, "backend": backend, **{
            k: v for k, v in settings.items() if v is not None}}]})

