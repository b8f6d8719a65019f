"""floor_tasks: AgentFloor's 30 deterministic tool-use tasks as Gymnasium envs.

Importing the package registers ``AgentFloor/<ID>-v0`` for every task, e.g.
``gym.make("AgentFloor/C3-v0")``, with ``max_episode_steps`` set to the task's step budget.
Task data credit: AgentFloor (Karmakar & Chatterjee), CC-BY 4.0.
"""

from gymnasium.envs.registration import WrapperSpec, register

from floor_tasks.solutions import solution
from floor_tasks.task import TIER_NAMES, TIERS, Task, load_task, load_tasks
from floor_tasks.verifier import check_names

__all__ = ["TASK_IDS", "TIERS", "TIER_NAMES", "Task", "env_id", "load_task", "load_tasks",
           "solution"]


def env_id(task_id: str) -> str:
    """The Gymnasium id of a task, e.g. ``"AgentFloor/C3-v0"``."""
    return f"AgentFloor/{task_id}-v0"


_BUDGET_SYNC = WrapperSpec(name="StepBudgetSync", entry_point="floor_tasks.env:StepBudgetSync",
                           kwargs={})
TASK_IDS: tuple[str, ...] = tuple(t.id for t in load_tasks())
# Without Gymnasium's PassiveEnvChecker: when an env's first reset raises (a bad variant), the
# checker (Gymnasium 1.4) has nothing to compare the first step with and raises TypeError on
# every later first step. The suite's tests run Gymnasium's full check_env on each id instead.
for _task in load_tasks():
    check_names(_task)
    register(id=env_id(_task.id), entry_point="floor_tasks.env:FloorEnv",
             kwargs={"task_id": _task.id}, max_episode_steps=_task.max_steps,
             additional_wrappers=(_BUDGET_SYNC,), disable_env_checker=True)
del _task
