"""Play one AgentFloor task by hand with ``gym.make``, then run the oracle on three tasks.

Quick check (CPU, seconds): ``python examples/quickstart.py``
"""

import sys

import gymnasium as gym

import floor_tasks
from agentworld_envs.cli import run_command
from agentworld_envs.cli_errors import UsageParser
from floor_tasks.harness.runner import run_episode


def main(argv: list[str] | None = None) -> None:
    UsageParser(description=__doc__.splitlines()[0]).parse_args(argv)  # no settings: --help
    env = gym.make("AgentFloor/B3-v0")
    prompt, info = env.reset(seed=0, options={"variant": "v0"})
    print(f"{info['task_id']} (tier {info['tier']}, {info['variant']}): {prompt}\n")
    for action in floor_tasks.solution("B3", "v0"):
        obs, reward, terminated, truncated, info = env.step(action)
        print(f"> {action}\n{obs}\n")
    print("reward:", reward, "| failed checks:", info["verdict"]["failure_labels"])

    for task_id in ("C1", "D2", "E5"):
        record = run_episode(task_id, "oracle", variant="v0")
        print(f"oracle on {task_id}: passed={record['passed']} in {record['turns']} turns")


if __name__ == "__main__":
    sys.exit(run_command(main))
