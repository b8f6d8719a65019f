"""The layers of ``agentworld_envs``, and the packages, import one way (README, "Architecture").

sim → domains → world → protocol, and sim → backends → protocol: a domain never imports the
env runtime, a backend never imports a world, a domain or the runtime. Across packages,
``floor_tasks`` and ``team_envs`` import only the protocol, the backends, the error types and
``atomic_write`` of ``agentworld_envs``, and nothing imports ``trainers`` but ``trainers``
itself (the CLI names its command group by string; the examples sit outside the packages).
Every import counts, including those inside functions and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agentworld_envs"
PACKAGES = ("agentworld_envs", "floor_tasks", "team_envs", "trainers")
SHARED = {"protocol", "errors", "cli_errors"}
ALLOWED = {
    "protocol": SHARED,
    "world": SHARED | {"world"},
    "domains": SHARED | {"world", "domains"},
    "models": SHARED | {"models"},
    "backends": SHARED | {"backends", "models"},
}
"""Layer -> the layers of ``agentworld_envs`` it may import (the runtime ``sim`` and what sits
above it may import them all)."""
FLOOR_TASKS_USERS = ("domains.floor",)
"""The only lower-layer modules that may import ``floor_tasks``: the floor domain."""
OPEN_TO_PACKAGES = tuple(f"agentworld_envs.{part}" for part in (
    "protocol", "backends", "errors", "cli_errors", "atomic_write"))
PACKAGE_IMPORTS = {
    "floor_tasks": ("floor_tasks", *OPEN_TO_PACKAGES),
    "team_envs": ("team_envs", "floor_tasks", *OPEN_TO_PACKAGES),
}
"""Package -> the project modules it may import (and those below them)."""


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports, absolute, with its line: ``from agentworld_envs import
    sim`` counts as ``agentworld_envs.sim``, and ``importlib.import_module("name")`` too."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    parts = (module if path.name == "__init__.py" else module.rpartition(".")[0]).split(".")
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = parts[: len(parts) - node.level + 1] if node.level else []
            source = ".".join(base + [node.module] if node.module else base)
            found += [(f"{source}.{alias.name}" if source in PACKAGES else source, node.lineno)
                      for alias in node.names]
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module")
              and node.args and isinstance(node.args[0], ast.Constant)):
            found.append((str(node.args[0].value), node.lineno))
    return found


def _python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _violations() -> list[str]:
    out = []
    for path in _python_files("agentworld_envs"):
        relative = path.relative_to(ROOT / "agentworld_envs").with_suffix("")
        layer = relative.parts[0]
        if layer not in ALLOWED:
            continue
        dotted = ".".join(relative.parts).removesuffix(".__init__")
        for target, line in _imports(path):
            top, _, rest = target.partition(".")
            if top == "floor_tasks" and not dotted.startswith(FLOOR_TASKS_USERS):
                out.append(f"{dotted}:{line} imports {target}")
            elif top == "agentworld_envs" and rest:
                if rest.partition(".")[0] not in ALLOWED[layer]:
                    out.append(f"{dotted}:{line} imports {target}")
    return out


def _within(target: str, allowed: tuple[str, ...]) -> bool:
    return any(target == module or target.startswith(f"{module}.") for module in allowed)


def _package_violations() -> list[str]:
    out = []
    for package in PACKAGES:
        for path in _python_files(package):
            where = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for target, line in _imports(path):
                top = target.partition(".")[0]
                if (top == "trainers" and package != "trainers") or (
                        top in PACKAGES and package in PACKAGE_IMPORTS
                        and not _within(target, PACKAGE_IMPORTS[package])):
                    out.append(f"{where}:{line} imports {target}")
    return out


def test_every_import_follows_the_layers() -> None:
    assert _violations() == []


def test_every_import_across_packages_goes_one_way() -> None:
    assert _package_violations() == []


def test_the_checkers_see_a_violation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A domain that imports the runtime, a floor task that imports the runtime or the world,
    a team env that imports the bench and an env that imports the trainers are caught (the
    checks above can fail)."""
    bad = {"agentworld_envs/domains/bad.py": "from agentworld_envs.sim.env import AgentWorldEnv",
           "agentworld_envs/bench/bad.py": "importlib.import_module('trainers.cli')",
           "floor_tasks/bad.py": "from agentworld_envs import sim, protocol",
           "floor_tasks/harness/bad.py": "from agentworld_envs.world.step import StepResult",
           "team_envs/bad.py": "import agentworld_envs.bench.run",
           "trainers/fine.py": "import trainers.common, agentworld_envs.sim"}
    for name, line in bad.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"def f():\n    {line}\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert _violations() == ["domains.bad:2 imports agentworld_envs.sim.env"]
    assert _package_violations() == [
        "agentworld_envs.bench.bad:2 imports trainers.cli",
        "floor_tasks.bad:2 imports agentworld_envs.sim",
        "floor_tasks.harness.bad:2 imports agentworld_envs.world.step",
        "team_envs.bad:2 imports agentworld_envs.bench.run"]


def test_a_simulated_env_without_the_floor_domain_loads_no_floor_task() -> None:
    """Making and stepping ``AgentWorld/MCP-v0`` loads nothing of ``floor_tasks`` (run in a
    fresh interpreter, so other tests' imports do not count)."""
    code = (
        "import sys, warnings, gymnasium as gym, agentworld_envs\n"
        "warnings.simplefilter('ignore')\n"
        "env = gym.make('AgentWorld/MCP-v0', backend='scripted')\n"
        "env.reset(seed=0); env.step('{\"name\": \"x\", \"arguments\": {}}')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'floor_tasks'))\n"
        "print(sorted(k for k in gym.registry if k.startswith('AgentFloor/')))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=PACKAGE.parent)
    assert result.stdout.split("\n")[:2] == ["[]", "[]"]


ENV_RUNTIME = ("env.py", "episode.py", "simulator.py", "config.py", "vector.py",
               "model_client.py")
"""The modules of ``sim/`` that run an env (the ``sim`` command line may name backends)."""


def test_no_env_names_a_backend() -> None:
    """No env module compares with, or builds from, a built-in backend's name: a backend
    says what the env needs to know (its declared sampling, its placeholders)."""
    from agentworld_envs.backends.registry import _BUILTIN

    named = [f"sim/{name}:{node.lineno} names {node.value!r}" for name in ENV_RUNTIME
             for node in ast.walk(ast.parse((PACKAGE / "sim" / name).read_text()))
             if isinstance(node, ast.Constant) and node.value in _BUILTIN]
    assert named == []
