"""An LLM agent playing AgentFloor tasks through any OpenAI-compatible chat server.

The loop is the plain Gymnasium one: the prompt comes from ``reset``, each model reply is one
``step`` (tool calls or a final answer), and tool results go back to the model as the next user
turn. Serve a model first, e.g. ``vllm serve Qwen/Qwen3-1.7B``, or a local directory offline
with ``transformers serve /path/to/model`` (then pass ``--model /path/to/model``: requests must
name the model by its path), then::

    python examples/llm_agent_floor.py --base-url http://127.0.0.1:8000/v1 \\
        --model Qwen/Qwen3-1.7B --tasks A1,B3,C3

For sweeps, corpora and reports use ``agentworld floor run --backend ...`` instead.
"""

from __future__ import annotations

import sys

import gymnasium as gym

import floor_tasks
from agentworld_envs.backends import (
    Backend,
    BackendError,
    ChatRequest,
    SamplingParams,
    make_backend,
)
from agentworld_envs.backends.registry import check_backend_config
from agentworld_envs.cli import run_command
from agentworld_envs.cli_errors import UsageParser, int_at_least
from agentworld_envs.protocol.tool_results import tool_results_message
from floor_tasks.harness.cli import check_task_ids
from floor_tasks.harness.runner import SYSTEM_PROMPT


def play(backend: Backend, task_id: str, variant: str, sampling: SamplingParams) -> dict:
    """Play one episode; return its task, variant, turns, reward and failed checks."""
    env = gym.make(floor_tasks.env_id(task_id))
    prompt, info = env.reset(options={"variant": variant})
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
    turns, done = 0, False
    while not done:
        completion = backend.complete([ChatRequest(messages, info["tools"], sampling)])[0]
        action = completion.to_action()
        observation, reward, terminated, truncated, step_info = env.step(action)
        messages.append({"role": "assistant", "content": action})
        if observation:
            messages.append(tool_results_message(observation))
        turns, done = turns + 1, terminated or truncated
    env.close()
    return {"task": task_id, "variant": variant, "turns": turns, "reward": reward,
            "failed": step_info["verdict"]["failure_labels"]}


def main(argv: list[str] | None = None) -> None:
    parser = UsageParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="server URL including /v1")
    parser.add_argument("--model", required=True, help="model name the server expects")
    parser.add_argument("--tasks", default="A1,B3,C3", type=lambda s: s.split(","),
                        help="comma-separated AgentFloor task ids")
    parser.add_argument("--variant", default="v0", help="the variant every task plays")
    parser.add_argument("--max-tokens", type=int_at_least(1), default=512,
                        help="completion token limit per turn")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="environment variable holding the API key, if the server needs one")
    args = parser.parse_args(argv)
    check_task_ids(args.tasks)  # before any episode: a typo is not found after minutes of play
    for task_id in args.tasks:
        names = floor_tasks.load_task(task_id).variant_names
        if args.variant not in names:
            parser.error(f"task {task_id} has no variant {args.variant!r}; it has "
                         f"{', '.join(names)}")
    sampling = SamplingParams(temperature=0.0, max_tokens=args.max_tokens, seed=0)
    config = {"name": "openai", "model": args.model, "base_url": args.base_url,
              "api_key_env": args.api_key_env}
    check_backend_config(config)
    backend = make_backend(config)
    solved = 0
    try:
        with backend:
            for task_id in args.tasks:  # each result as it comes: a later failure keeps it
                result = play(backend, task_id, args.variant, sampling)
                print(f"{result['task']} {result['variant']}: reward {result['reward']} in "
                      f"{result['turns']} turns; failed checks: {result['failed'] or 'none'}",
                      flush=True)
                solved += result["reward"] == 1.0
    except BackendError as exc:
        raise SystemExit(f"llm_agent_floor: the model server failed: {exc}") from None
    print(f"solved {solved}/{len(args.tasks)}")


if __name__ == "__main__":
    sys.exit(run_command(main))
