"""The layers of ``agentworld_envs`` import one way (README, "Architecture").

sim → domains → world → protocol, and sim → backends → protocol: a domain never imports the
env runtime, a backend never imports a world, a domain or the runtime. Every import counts,
including those inside functions and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agentworld_envs"
SHARED = {"protocol", "errors"}
ALLOWED = {
    "protocol": SHARED,
    "world": SHARED | {"world"},
    "domains": SHARED | {"world", "domains"},
    "models": SHARED | {"models"},
    "backends": SHARED | {"backends", "models", "cli_errors"},
}
"""Layer -> the layers of ``agentworld_envs`` it may import (the runtime ``sim`` and what sits
above it may import them all)."""
FLOOR_TASKS_USERS = ("domains.floor",)
"""The only lower-layer modules that may import ``floor_tasks``: the floor domain."""


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports, absolute, with its line."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.append((".".join(base + [node.module] if node.module else base),
                              node.lineno))
            else:
                found.append((node.module or "", node.lineno))
    return found


def _violations() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).with_suffix("")
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


def test_every_import_follows_the_layers() -> None:
    assert _violations() == []


def test_the_checker_sees_a_violation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A domain that imports the runtime is caught (the check above can fail)."""
    fake = tmp_path / "agentworld_envs"
    (fake / "domains").mkdir(parents=True)
    (fake / "domains" / "bad.py").write_text(
        "def f():\n    from agentworld_envs.sim.env import AgentWorldEnv\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert _violations() == ["domains.bad:2 imports agentworld_envs.sim.env"]


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
