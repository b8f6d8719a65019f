"""floor_tasks: AgentFloor's 30 deterministic tool-use tasks as Gymnasium envs.

Importing the package registers ``AgentFloor/<ID>-v0`` for every task, e.g.
``gym.make("AgentFloor/C3-v0")``, with ``max_episode_steps`` set to the task's step budget.
Task data credit: AgentFloor (Karmakar & Chatterjee), CC-BY 4.0.
"""

from gymnasium.envs.registration import WrapperSpec, register, registry

from floor_tasks.solutions import solution
from floor_tasks.task import TIER_NAMES, TIERS, Task, load_task, load_tasks
from floor_tasks.verifier import check_names

__all__ = ["TASK_IDS", "TIERS", "TIER_NAMES", "Task", "env_id", "load_task", "load_tasks",
           "register_env", "solution"]


def env_id(task_id: str) -> str:
    """The Gymnasium id of a task, e.g. ``"AgentFloor/C3-v0"``."""
    return f"AgentFloor/{task_id}-v0"


_BUDGET_SYNC = WrapperSpec(name="StepBudgetSync", entry_point="floor_tasks.env:StepBudgetSync",
                           kwargs={})


def register_env(task: Task) -> None:
    """Register ``AgentFloor/<ID>-v0`` for a task (once), its budget as ``max_episode_steps``."""
    check_names(task)
    if env_id(task.id) not in registry:
        register(id=env_id(task.id), entry_point="floor_tasks.env:FloorEnv",
                 kwargs={"task_id": task.id}, max_episode_steps=task.max_steps,
                 additional_wrappers=(_BUDGET_SYNC,))


TASK_IDS: tuple[str, ...] = tuple(t.id for t in load_tasks())
for _task in load_tasks():
    register_env(_task)
del _task
