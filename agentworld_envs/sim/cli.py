"""``agentworld sim``: list domains and scenarios, generate scenarios, show the world model's
request, measure world-model fidelity.

``request`` prints, as JSON, the request that one action sends to the world model (messages and
sampling), so that a prompt set (``--prompts DIR``) can be checked against the release's layout.

``fidelity`` plays the AgentFloor reference solutions through ``AgentWorld/Floor-v0`` with a
world-model backend, all task variants as one vector env (one batched call per turn), and
reports how often the predicted observations agree with the real ones.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from typing import Any

from agentworld_envs.backends.faults import DEFAULT_MAX_FAULTS
from agentworld_envs.cli_errors import UsageError, int_at_least, name_of

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
                    max_faults: int | None = None) -> dict[str, Any]:
    """Play each floor scenario's reference solution; summarise fidelity per task and overall.

    Args:
        backend: The world model's backend config.
        scenario_ids: Floor scenario ids such as ``"C3/v0"``.
        mode: ``simulated`` or ``hybrid``.
        seed: Reset seed (sub-env i gets ``seed + i``).
        sampling: World-model sampling fields.
        prompts: The prompt set (the floor domain always uses its own prompt).
        progress: Show a progress bar of the turns (on stderr).
        max_faults: Failed world-model calls to go on after (None: never stop).

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
    from tqdm.auto import tqdm

    from agentworld_envs.sim.vector import AgentWorldVectorEnv
    from agentworld_envs.world.fidelity import Fidelity, summarise

    envs = AgentWorldVectorEnv("floor", num_envs=len(scenario_ids), autoreset_mode="disabled",
                               backend=backend, mode=mode, sampling=sampling or {},
                               prompts=prompts, max_faults=max_faults)
    try:
        envs.reset(seed=seed, options={"scenario": scenario_ids})
        plans = [episode.scenario.solution_actions for episode in envs.episodes]
        turns = max(len(plan) for plan in plans)
        bar = tqdm(range(turns), desc="fidelity", unit="turn",
                   disable=None if progress else True)  # None: only on a terminal
        for turn in bar:
            envs.step([plan[turn] if turn < len(plan) else "" for plan in plans])
    finally:
        envs.close()
    steps = {sid: [Fidelity.from_dict(entry["fidelity"]) for entry in episode.transcript
                   if entry["fidelity"]]
             for sid, episode in zip(scenario_ids, envs.episodes, strict=True)}
    return {"overall": summarise(f for found in steps.values() for f in found),
            "scenarios": {sid: summarise(found) for sid, found in steps.items()},
            "placeholder_steps": sum(episode.counts["placeholder"] for episode in envs.episodes),
            "fallback_steps": envs.sim.sources["fallback"], "faults": envs.sim.faults}


def _floor_tasks(value: str) -> str | list[str]:
    """``--tasks`` as ``agentworld floor run`` reads it (imported when parsed)."""
    from floor_tasks.harness.cli import task_selector

    return task_selector(value)


def _floor_scenarios(tasks: str | list[str], variants: str) -> list[str]:
    from floor_tasks import TASK_IDS, load_task, load_tasks
    from floor_tasks.harness.sweep_config import resolve_tasks

    chosen = resolve_tasks(tasks, TASK_IDS, {task.id: task.tier for task in load_tasks()})
    ids = []
    for task_id in chosen:
        names = load_task(task_id).variant_names
        ids += [f"{task_id}/{name}" for name in
                (names if variants == "all" else variants.split(","))]
    return ids


def _number(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def _cmd_fidelity(args: argparse.Namespace) -> int:
    from agentworld_envs.backends import parse_backend_arg

    if not args.backend:
        raise UsageError("sim fidelity needs --backend, the world model to score (a name or JSON,"
                         " e.g. '{\"name\": \"openai\", ...}'); --backend scripted scores the"
                         " scripted placeholder")
    backend = parse_backend_arg(args.backend)
    scenarios = _floor_scenarios(args.tasks, args.variants)
    with warnings.catch_warnings():  # each step's fault warning: the tally's one line says it
        warnings.filterwarnings("ignore", "the world model", RuntimeWarning)
        # the placeholder's warning: the note below says it, after a run that used it
        warnings.filterwarnings("ignore", "this AgentWorld env runs on", UserWarning)
        report = fidelity_report(backend, scenarios, args.mode, args.seed,
                                 {"max_tokens": args.max_tokens}, args.prompts, progress=True,
                                 max_faults=args.max_faults)
    report.pop("faults").check("no table is printed")
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


def _known_domains() -> list[str]:
    from agentworld_envs.domains import DOMAINS

    return list(DOMAINS)


_domain_name = name_of("domain", _known_domains, listing="agentworld sim list")


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
    scenarios.add_argument("domain", type=_domain_name, help="a simulated domain (see list)")
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
    request.add_argument("domain", type=_domain_name, help="a simulated domain (see list)")
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
    fidelity.add_argument("--max-faults", type=int_at_least(-1), default=DEFAULT_MAX_FAULTS,
                          help="failed world-model calls to go on after; one more stops the run;"
                               " -1: never stop. Any failed call ends the run with status 1 and "
                               f"no table (default: {DEFAULT_MAX_FAULTS})")
    _prompts_option(fidelity)
    fidelity.set_defaults(handler=_cmd_fidelity)
