"""``gym.make`` of a suite id in a fresh interpreter (issue 30, item 6).

Gymnasium 1.x loads no plugins (the ``gymnasium.envs`` entry-point group of 0.x is gone), so a
bare ``gym.make("AgentWorld/MCP-v0")`` with nothing of ours imported fails with Gymnasium's own
``NamespaceNotFound``, before any code of ours can run. The id's module prefix imports the
package for the caller, in the same one line; the docs show both forms.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PREFIXED = {
    "agentworld_envs:AgentWorld/Search-v0": "gym.make(ID, backend='scripted')",
    "floor_tasks:AgentFloor/C3-v0": "gym.make(ID)",
}


def fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("env_id", PREFIXED)
def test_the_module_prefix_makes_the_env_with_nothing_imported(env_id: str) -> None:
    done = fresh(f"import gymnasium as gym; ID = {env_id!r}; env = {PREFIXED[env_id]}; "
                 "print(env.spec.id, type(env.unwrapped).__name__)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == env_id.split(":")[1]


def test_a_bare_id_with_nothing_imported_is_gymnasiums_namespace_error() -> None:
    """Pinned so that the docs change if Gymnasium ever loads plugins again."""
    done = fresh("import gymnasium as gym; gym.make('AgentWorld/MCP-v0')")
    assert done.returncode != 0 and "NamespaceNotFound: Namespace AgentWorld not found" \
        in done.stderr
