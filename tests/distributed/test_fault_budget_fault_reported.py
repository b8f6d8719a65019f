"""A spent fault budget (an env's ``max_faults``) stops a run of sub-envs in Ray actors or under
``FaultGuard``, as it stops one process: it is not a sub-env fault that costs one episode.

Before, the actor turned ``TooManyFaultsError`` into truncated sub-envs with ``info["fault"]``
and rebuilt its vector env, whose new tally started again at 0: with a dead world-model server
and ``max_faults=0`` the run went on for ever on fallback observations."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.distributed import RayVectorEnv
from agentworld_envs.distributed.fault_guard import FaultGuard
from tests.helpers.ray_cluster import ray_runtime  # noqa: F401 - the module's Ray runtime

DOWN = {"name": "scripted", "rules": [{"match": "", "error": "server down"}]}
"""A world model whose every call fails."""
SPENT = r"stopped after more than 0 \(max_faults\)"
pytestmark = [pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'"),
              pytest.mark.filterwarnings("ignore:the world model:RuntimeWarning")]


def first_call(candidates: list[str]) -> str:
    """The first candidate action that is a tool call (which asks the world model)."""
    return next(c for c in candidates if c.startswith("{"))


def test_a_guarded_sub_env_raises_its_spent_fault_budget() -> None:
    env = FaultGuard(gym.make("AgentWorld/MCP-v0", backend=DOWN, max_faults=0))
    _, info = env.reset(seed=0)
    with pytest.raises(TooManyFaultsError, match=SPENT):
        env.step(first_call(info["candidate_actions"]))
    env.close()


@pytest.mark.usefixtures("ray_runtime")
def test_a_ray_vector_env_raises_a_spent_fault_budget_naming_the_actor() -> None:
    envs = RayVectorEnv("AgentWorld/MCP-v0", 4, num_actors=2, backend=DOWN, max_faults=0)
    try:
        _, infos = envs.reset(seed=2)
        with pytest.raises(TooManyFaultsError, match=rf"^actor 0 \(sub-envs 0-1\), step\(\): "
                                                     rf"TooManyFaultsError: .*{SPENT}"):
            envs.step([first_call(c) for c in infos["candidate_actions"]])
    finally:
        envs.close()
