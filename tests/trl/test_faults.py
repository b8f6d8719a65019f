"""A vector env's sub-env whose step raised (``FaultGuard``, as in ``RayVectorEnv``'s actors)
stops TRL training, as a lone env's raising step does, instead of being scored 0.0."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("trl", reason="the TRL adapters need trl: pip install 'agentworld[train]'")

from agentworld_envs.distributed.fault_guard import FaultGuard  # noqa: E402
from agentworld_envs.trl import (  # noqa: E402
    TurnRollout,
    environment_reward,
    floor_rows,
    vector_environment_class,
)
from agentworld_envs.trl.environment import ENDED  # noqa: E402
from tests.trl.test_env import SYSTEM, _LookupForever  # noqa: E402


class StepRaises(gym.Wrapper):
    """A1 whose backend is down: every step raises."""

    def step(self, action: str) -> tuple:
        raise ConnectionError("the tool backend is unreachable")


gym.register("Trl3Test/A1Down-v0", disable_env_checker=True,
             entry_point=lambda: StepRaises(gym.make("AgentFloor/A1-v0")))


def _sessions(count: int) -> tuple[list[Any], Any]:
    """``count`` sessions on the sub-envs of a vector env of FaultGuard-wrapped A1Down envs."""
    envs = gym.vector.SyncVectorEnv([lambda: FaultGuard(gym.make("Trl3Test/A1Down-v0"))
                                     for _ in range(count)])
    session_class = vector_environment_class(envs)
    return [session_class() for _ in range(count)], envs


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # FaultGuard warns of the fault
def test_a_faulted_sub_env_step_stops_the_turn_rollout(tiny_lm_dir: Path) -> None:
    """Before, the sub-env's truncated step with ``info["fault"]`` ended the episode, the
    rollout returned and ``environment_reward`` scored it 0.0: GRPO trained on the fault."""
    from transformers import AutoTokenizer

    rows = floor_rows(["A1"], ["v0"], system_prompt=SYSTEM) * 2
    sessions, envs = _sessions(len(rows))
    prompts = [[*row["prompt"][:-1], {"role": "user", "content": session.reset(**row)}]
               for row, session in zip(rows, sessions, strict=True)]
    trainer = _LookupForever(AutoTokenizer.from_pretrained(tiny_lm_dir), 4096, 64)
    trainer.environments = sessions
    fault = "the env's step failed: ConnectionError: the tool backend is unreachable"
    with pytest.raises(RuntimeError, match=fault):
        TurnRollout()(prompts, trainer)
    with pytest.raises(RuntimeError, match=fault):
        environment_reward(["The status is active."] * 2, sessions)
    assert sessions[0].done and sessions[0].actions == []
    envs.close()


def test_a_faulted_sub_env_step_raises_from_the_tool_method() -> None:
    """The same session played by TRL's tool loop (a tool method's ``env.step``): the fault is
    raised there (TRL shows it to the model) and again by the reward, which stops training."""
    [session], envs = _sessions(1)
    session.reset(variant="v0", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(RuntimeError, match="ConnectionError: the tool backend"):
            session._call_tool("lookup_record", {"record_id": "P104"})
    assert session.done and session._step("anything") == ENDED  # no further step
    with pytest.raises(RuntimeError, match="ConnectionError: the tool backend"):
        environment_reward(["The status is active."], [session])
    envs.close()
