"""TRL's GRPOTrainer with TurnRollout on the sub-envs of a RayVectorEnv (a real local Ray
runtime): each turn is one step of the vector env, TRL's generation groups are its groups."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("ray")
pytest.importorskip("trl", reason="the TRL adapters need trl: pip install 'agentworld[train]'")

from agentworld_envs.distributed import RayVectorEnv  # noqa: E402
from agentworld_envs.distributed.slots import FILLER  # noqa: E402
from agentworld_envs.trl import TurnRollout, vector_environment_class  # noqa: E402
from agentworld_envs.trl.rollout import _check_groups  # noqa: E402
from tests.helpers.ray_cluster import ray_runtime  # noqa: E402, F401 - the module's runtime
from tests.trl.test_env import _train, tiny_model  # noqa: E402, F401 - the imprinted model


class CountingRayVectorEnv(RayVectorEnv):
    """Remembers how many sub-envs played a real action (not the filler) in each step."""

    def step(self, actions: Any) -> Any:
        self.played = [*getattr(self, "played", []), sum(a != FILLER for a in actions)]
        return super().step(actions)


@pytest.mark.usefixtures("ray_runtime")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_grpo_with_the_turn_level_rollout_on_a_ray_vector_env(tiny_model: Path,  # noqa: F811
                                                              tmp_path: Path) -> None:
    envs = CountingRayVectorEnv("AgentFloor/A1-v0", 4, num_actors=2, group_size=2)
    try:
        trainer, seen = _train(tiny_model, vector_environment_class(envs), tmp_path,
                               rollout_func=TurnRollout())
    finally:
        envs.close()
    assert len(seen) == 2 and all(len(r) == 4 for r in seen)
    assert {r for batch in seen for r in batch} == {0.0, 1.0}  # v0 passes, i1 fails
    sessions = trainer.environments
    assert [s.env.index for s in sessions] == [0, 1, 2, 3]
    assert [s.last_info["group"] for s in sessions] == [0, 0, 1, 1]
    assert all(s.done and s.actions for s in sessions)
    assert envs.played[0] == 4  # a turn steps every session at once: one step of the vector

def test_trl_groups_must_be_the_vector_env_groups() -> None:
    def sessions(groups: list[int]) -> list[Any]:
        return [SimpleNamespace(last_info={"group": g}) for g in groups]

    _check_groups(sessions([0, 0, 1, 1]), 2)
    _check_groups([SimpleNamespace(last_info={})] * 4, 2)  # not on a vector env: no groups
    for wrong in ([0, 1, 2, 3], [0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1]):
        with pytest.raises(ValueError, match="group_size=2"):
            _check_groups(sessions(wrong), 2)
