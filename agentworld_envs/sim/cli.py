"""``agentworld sim``: list domains and scenarios, generate scenarios, show the world model's
request, measure world-model fidelity.

``request`` prints, as JSON, the request that one action sends to the world model (messages and
sampling), so that a prompt set (``--prompts DIR``) can be checked against the release's layout.

``fidelity`` plays the AgentFloor reference solutions through ``AgentWorld/Floor-v0`` with a
world-model backend, all task variants as one vector env (one batched call per turn), and
reports how often the predicted observations agree with the real ones. With ``--out`` each
scenario's measures are kept as soon as it is played (:mod:`agentworld_envs.sim.fidelity_journal`),
so that an interrupted run goes on with ``--resume``, playing only the others.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import shlex
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld_envs.atomic_write import write_text_atomic
from agentworld_envs.backends.faults import DEFAULT_MAX_FAULTS, FaultTally
from agentworld_envs.cli_errors import (
    UnknownNameError,
    UsageError,
    directory_arg,
    int_at_least,
    on_interrupt,
)
from agentworld_envs.sim.fidelity_journal import JOURNAL, REPORT, FidelityJournal

__all__ = ["add_commands"]


def _cmd_list(args: argparse.Namespace) -> int:
    from agentworld_envs.domains import DOMAINS, get_domain
    from agentworld_envs.registration import env_id

    print(f"{'env id':<24} {'steps':>5} {'scenarios':>9}  generator")
    for key, entry in DOMAINS.items():
        domain = get_domain(key)
        try:
            domain.generate(0)
            generator = "yes"
        except ValueError:
            generator = "no"
        print(f"{env_id(key):<24} {entry.max_steps:>5} {len(domain.builtin):>9}  {generator}")
    return 0


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from agentworld_envs.domains import get_domain

    for scenario in get_domain(args.domain).builtin.values():
        if args.json:
            print(scenario.model_dump_json(exclude_defaults=True))
        else:
            print(f"{scenario.id:<40} {scenario.instruction[:80]}")
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from agentworld_envs.domains import generate_scenario

    for seed in range(args.seed, args.seed + args.count):
        print(generate_scenario(args.domain, seed).model_dump_json(exclude_defaults=True))
    return 0


def first_request(domain: str, action: str, scenario: str | None = None,
                  prompts: str | None = None, seed: int = 0) -> dict[str, Any]:
    """The world-model request that ``action`` sends first in an episode (no model is called).

    Raises:
        UsageError: when the action needs no world-model call (it is invalid or ends the
            episode).
    """
    import numpy as np

    from agentworld_envs.sim.config import SimConfig
    from agentworld_envs.sim.simulator import Simulator

    with warnings.catch_warnings():  # no model is called: the placeholder warning is moot
        warnings.simplefilter("ignore", UserWarning)
        sim = Simulator(SimConfig(domain=domain, prompts=prompts, backend="scripted"))
    episode = sim.episode(np.random.default_rng(seed), {"scenario": scenario},
                          sim.domain.max_steps)
    request = episode.begin(action)
    sim.close()
    if request is None:
        raise UsageError("this action needs no world-model call: it is invalid or ends the "
                         "episode")
    return request.to_dict()


def _cmd_request(args: argparse.Namespace) -> int:
    print(json.dumps(first_request(args.domain, args.action, args.scenario, args.prompts,
                                   args.seed), indent=2, ensure_ascii=False))
    return 0


def fidelity_report(backend: dict[str, Any], scenario_ids: list[str], mode: str = "simulated",
                    seed: int = 0, sampling: dict[str, Any] | None = None,
                    prompts: str | None = None, progress: bool = False,
                    max_faults: int | None = None,
                    done: dict[int, dict[str, Any]] | None = None,
                    keep: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Play each floor scenario's reference solution; summarise fidelity per task and overall.

    Args:
        backend: The world model's backend config.
        scenario_ids: Floor scenario ids such as ``"C3/v0"``.
        mode: ``simulated`` or ``hybrid``.
        seed: Reset seed (scenario i gets ``seed + i``).
        sampling: World-model sampling fields.
        prompts: The prompt set (the floor domain always uses its own prompt).
        progress: Show a progress bar of the turns (on stderr).
        max_faults: Failed world-model calls to go on after (None: never stop).
        done: Records of scenarios already played, by their index in ``scenario_ids`` (a
            resumed run's): not played again, their measures and calls counted as played.
        keep: Called with each scenario's record (:func:`_scenario_record`) as soon as its
            solution has been played.

    Returns:
        ``{"overall": summary, "scenarios": {id: summary}, "placeholder_steps": n,
        "fallback_steps": f, "faults": tally}``, each summary from
        :func:`agentworld_envs.world.fidelity.summarise`; ``n`` counts the steps that the
        scripted placeholder answered, not a world model, ``f`` those that got a fallback
        observation (the model failed, gave nothing or was cut off); ``tally`` is the
        :class:`~agentworld_envs.backends.faults.FaultTally` of the model calls.

    Raises:
        TooManyFaultsError: once more than ``max_faults`` calls failed.
    """
    from agentworld_envs.world.fidelity import Fidelity, summarise

    records = dict(done or {})
    tally = FaultTally(max_faults, "model calls")
    for record in records.values():
        tally.add(record["calls"], record["failures"])

    def finished(record: dict[str, Any]) -> None:
        records[record["index"]] = record
        if keep is not None:
            keep(record)

    if todo := [i for i in range(len(scenario_ids)) if i not in records]:
        _play(backend, scenario_ids, todo, mode, seed, sampling or {}, prompts, progress, tally,
              finished)
    ordered = [records[i] for i in range(len(scenario_ids))]
    steps = {record["scenario"]: [Fidelity.from_dict(entry) for entry in record["fidelity"]]
             for record in ordered}
    return {"overall": summarise(f for found in steps.values() for f in found),
            "scenarios": {sid: summarise(found) for sid, found in steps.items()},
            "placeholder_steps": sum(record["placeholder_steps"] for record in ordered),
            "fallback_steps": sum(record["fallback_steps"] for record in ordered),
            "faults": tally}


def _play(backend: dict[str, Any], scenario_ids: list[str], todo: list[int], mode: str,
          seed: int, sampling: dict[str, Any], prompts: str | None, progress: bool,
          tally: FaultTally, finished: Callable[[dict[str, Any]], None]) -> None:
    """Play the reference solutions of the scenarios at ``todo`` as one vector env (one
    batched call per turn), scenario i reset with ``seed + i``; the model calls are added to
    ``tally``, and each scenario's record goes to ``finished`` once its solution is played."""
    from tqdm.auto import tqdm

    from agentworld_envs.sim.vector import AgentWorldVectorEnv
    from agentworld_envs.sim.vector_info import info_at

    envs = AgentWorldVectorEnv("floor", num_envs=len(todo), autoreset_mode="disabled",
                               backend=backend, mode=mode, sampling=sampling, prompts=prompts,
                               max_faults=tally.max_faults)
    envs.sim.faults.restore(tally.counts())  # the budget counts the kept scenarios' failures
    envs.sim.faults.setting = tally.setting  # spent, it names the command's flag
    played = [{"calls": 0, "failures": [], "fallback_steps": 0} for _ in todo]
    try:
        envs.reset(seed=[seed + i for i in todo],
                   options={"scenario": [scenario_ids[i] for i in todo]})
        plans = [episode.scenario.solution_actions for episode in envs.episodes]
        left = set(range(len(todo)))
        for turn in tqdm(range(max(len(plan) for plan in plans)), desc="fidelity", unit="turn",
                         disable=None if progress else True):  # None: only on a terminal
            infos = envs.step([plan[turn] if turn < len(plan) else "" for plan in plans])[-1]
            for k in sorted(left):
                _count(played[k], info_at(infos, k))
                if turn + 1 >= len(plans[k]) or envs.episodes[k].ended:
                    left.remove(k)
                    finished(_scenario_record(todo[k], scenario_ids[todo[k]], envs.episodes[k],
                                              played[k]))
        for k in sorted(left):  # an empty solution: nothing to play
            finished(_scenario_record(todo[k], scenario_ids[todo[k]], envs.episodes[k],
                                      played[k]))
    finally:
        envs.close()
        tally.restore(envs.sim.faults.counts())


def _count(played: dict[str, Any], info: dict[str, Any]) -> None:
    """Add one step's world-model call, its failure and its fallback observation to
    ``played``."""
    model = info.get("world_model", {})
    played["calls"] += bool(model.get("called"))
    if model.get("fault"):
        played["failures"].append(f"{model['fault']}: {model['fault_message']}")
    played["fallback_steps"] += info.get("observation_source") == "fallback"


def _scenario_record(index: int, scenario: str, episode: Any, played: dict[str, Any]
                     ) -> dict[str, Any]:
    """What a played scenario adds to the report: its fidelity per step, its placeholder and
    fallback steps, and its world-model calls and their failures (the journal's line)."""
    return {"index": index, "scenario": scenario,
            "fidelity": [entry["fidelity"] for entry in episode.transcript if entry["fidelity"]],
            "placeholder_steps": episode.counts["placeholder"], **played}


def _floor_tasks(value: str) -> str | list[str]:
    """``--tasks`` as ``agentworld floor run`` reads it (imported when parsed)."""
    from floor_tasks.harness.cli import task_selector

    return task_selector(value)


def _floor_scenarios(tasks: str | list[str], variants: str) -> list[str]:
    """The scenario ids of ``--tasks`` and ``--variants``, checked before any model loads; as
    ``agentworld floor run`` reads them, a named variant plays on each task that has it.

    Raises:
        UsageError: a variant that no selected task has, or one named twice.
    """
    from floor_tasks import TASK_IDS, load_task, load_tasks
    from floor_tasks.harness.sweep_config import resolve_tasks

    chosen = resolve_tasks(tasks, TASK_IDS, {task.id: task.tier for task in load_tasks()})
    names = {task_id: load_task(task_id).variant_names for task_id in chosen}
    wanted = variants.split(",")
    if variants != "all":
        unknown = [v for v in wanted if not any(v in found for found in names.values())]
        repeated = sorted({v for v in wanted if wanted.count(v) > 1})
        if unknown:
            known = dict.fromkeys(v for found in names.values() for v in found)
            raise UsageError(f"--variants: no selected task has variant(s) "
                             f"{', '.join(map(repr, unknown))} (they have: {', '.join(known)})")
        if repeated:
            raise UsageError(f"--variants: {', '.join(repeated)} named twice")
    return [f"{task_id}/{name}" for task_id, found in names.items()
            for name in (found if variants == "all" else [v for v in wanted if v in found])]


def _number(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def _cmd_fidelity(args: argparse.Namespace) -> int:
    from agentworld_envs.backends import parse_backend_arg
    from agentworld_envs.backends.registry import answering_settings

    if not args.backend:
        raise UsageError("sim fidelity needs --backend, the world model to score (a name or JSON,"
                         " e.g. '{\"name\": \"openai\", ...}'); --backend scripted scores the"
                         " scripted placeholder")
    backend = parse_backend_arg(args.backend)
    scenarios = _floor_scenarios(args.tasks, args.variants)
    settings = {"backend": answering_settings(backend), "scenarios": scenarios,
                "mode": args.mode, "seed": args.seed, "max_tokens": args.max_tokens,
                "prompts": args.prompts}
    with FidelityJournal(args.out or None, settings, args.resume) as journal, \
            _resumable(args, journal), warnings.catch_warnings():
        # each step's fault warning: the tally's one line says it
        warnings.filterwarnings("ignore", "the world model", RuntimeWarning)
        # the placeholder's warning: the note below says it, after a run that used it
        warnings.filterwarnings("ignore", "this AgentWorld env runs on", UserWarning)
        report = fidelity_report(backend, scenarios, args.mode, args.seed,
                                 {"max_tokens": args.max_tokens}, args.prompts, progress=True,
                                 max_faults=args.max_faults, done=journal.done,
                                 keep=journal.keep)
    report.pop("faults").check("no table is printed")
    if args.out:
        write_text_atomic(Path(args.out) / REPORT, json.dumps(report, indent=2))
    placeholders = report["placeholder_steps"]
    if placeholders:
        print(f"note: {placeholders} of {int(report['overall']['steps'])} steps were answered by "
              "the scripted placeholder, not a world model: their scores are the placeholder's "
              "(pass a model with --backend)",
              file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{'scenario':<10} {'steps':>5} {'exact':>7} {'struct':>7} {'values':>7}")
    for name, summary in [*report["scenarios"].items(), ("overall", report["overall"])]:
        print(f"{name:<10} {int(summary['steps']):>5} {_number(summary['exact']):>7} "
              f"{_number(summary['structural']):>7} {_number(summary['values']):>7}")
    print(f"fallback observations: {report['fallback_steps']} of "
          f"{int(report['overall']['steps'])} steps (the model gave nothing usable; scored as "
          "they are)")
    return 0


def _resumable(args: argparse.Namespace, journal: FidelityJournal) -> Any:
    """Ctrl-C in the block says where the finished scenarios are kept and how to resume."""
    if journal.path is None:
        return contextlib.nullcontext()
    argv = getattr(args, "argv", None)  # set by the console script
    again = (shlex.join(["agentworld", *argv, *([] if "--resume" in argv else ["--resume"])])
             if argv else "the same command and --resume")
    return on_interrupt(f"the finished scenarios are kept in {journal.path}; resume with: "
                        f"{again}")


def _domain_name(value: str) -> str:
    """An argparse type: a domain (``mcp``) or its env id (``AgentWorld/MCP-v0``, as ``list``
    prints it), as the domain; anything else is one line naming the nearest ones."""
    from agentworld_envs.domains import DOMAINS
    from agentworld_envs.registration import ENV_IDS, domain_of

    domain = domain_of(value)
    if domain is None:
        raise argparse.ArgumentTypeError(str(UnknownNameError(
            "domain", value, [*DOMAINS, *ENV_IDS], listing="agentworld sim list")))
    return domain


def _prompts_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompts", metavar="DIR", default=None,
                        help="a prompt directory in the release's layout (<domain>/"
                             "system_prompt.txt), or 'builtin'; default: $AGENTWORLD_PROMPTS, "
                             "else the built-in prompts")


def add_commands(parser: argparse.ArgumentParser) -> None:
    """Add the ``sim`` subcommands to the ``agentworld sim`` parser."""
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = commands.add_parser("list", help="the simulated domains and their scenarios")
    listing.set_defaults(handler=_cmd_list)

    scenarios = commands.add_parser("scenarios", help="a domain's hand-written scenarios")
    scenarios.add_argument("domain", type=_domain_name,
                           help="a simulated domain or its env id (see list)")
    scenarios.add_argument("--json", action="store_true", help="one JSON scenario per line")
    scenarios.set_defaults(handler=_cmd_scenarios)

    generate = commands.add_parser("generate", help="procedurally generated scenarios (JSONL)")
    generate.add_argument("domain", choices=["search", "mcp"],
                          help="a domain with a scenario generator")
    generate.add_argument("--seed", type=int_at_least(0), default=0, help="first seed")
    generate.add_argument("--count", type=int_at_least(1), default=1,
                          help="scenarios, one per seed from --seed")
    generate.set_defaults(handler=_cmd_generate)

    request = commands.add_parser(
        "request", help="the world-model request one action sends (JSON), without a model")
    request.add_argument("domain", type=_domain_name,
                         help="a simulated domain or its env id (see list)")
    request.add_argument("action", help="the agent's action, e.g. a JSON tool call")
    request.add_argument("--scenario", help="a scenario id (default: drawn from --seed)")
    request.add_argument("--seed", type=int_at_least(0), default=0,
                         help="the reset seed (it draws the scenario and the request's seed)")
    _prompts_option(request)
    request.set_defaults(handler=_cmd_request)

    fidelity = commands.add_parser(
        "fidelity", help="world-model fidelity against the real AgentFloor tools")
    fidelity.add_argument("--backend", default="",
                          help='the world model: a backend name or JSON, e.g. \'{"name": '
                               '"openai", ...}\' (required; "scripted" is a placeholder)')
    fidelity.add_argument("--tasks", default="all", type=_floor_tasks,
                          help='"all", "tier:A,B" or task ids: C3,E4')
    fidelity.add_argument("--variants", default="v0", help="all, or variant names: v0,i1")
    fidelity.add_argument("--mode", choices=["simulated", "hybrid"], default="simulated",
                          help="simulated: the world model answers every call; hybrid: the "
                               "real tools answer the deciding ones (submit_decision)")
    fidelity.add_argument("--seed", type=int_at_least(0), default=0,
                          help="the reset seed: sub-env i (a task variant) gets seed + i")
    fidelity.add_argument("--max-tokens", type=int_at_least(1), default=8192,
                          help="the world model's new tokens per observation")
    fidelity.add_argument("--json", action="store_true", help="the table as JSON")
    fidelity.add_argument("--out", type=directory_arg,
                          help=f"folder for the report as JSON ({REPORT}) and the journal of "
                               f"the scenarios played ({JOURNAL}, each kept as it finishes), so "
                               "that an interrupted run goes on with --resume")
    fidelity.add_argument("--resume", action="store_true",
                          help="go on with the run in --out (the same settings; --max-faults "
                               "and the backend's transport settings may differ): only the "
                               "scenarios it has not finished are played, and the report is "
                               "rewritten from all of them")
    fidelity.add_argument("--max-faults", type=int_at_least(-1), default=DEFAULT_MAX_FAULTS,
                          help="failed world-model calls to go on after; one more stops the run;"
                               " -1: never stop. Any failed call ends the run with status 1 and "
                               f"no table (default: {DEFAULT_MAX_FAULTS})")
    _prompts_option(fidelity)
    fidelity.set_defaults(handler=_cmd_fidelity)
