"""Our envs in TRL's ``GRPOTrainer`` (extra ``train``: ``pip install "agentworld[train]"``).

Two adapters, both importable without trl, transformers or torch (they load when used):

* :func:`environment_class` + :func:`environment_reward`: ``environment_factory`` with one method
  per tool; TRL runs the tool loop (one ``env.step`` per tool call).
* :class:`TurnRollout` + :func:`turn_environment_class`: a ``rollout_func`` that plays whole
  assistant turns through ``env.step``, keeping the step budget, hallucinated-tool and
  malformed-call labels, every action format and the verdict as in the harness;
  :func:`vector_environment_class` plays its sessions on the sub-envs of a ``RayVectorEnv``.

See ``docs/trl.md``.
"""

from agentworld_envs.trl.data import check_batch_fits, floor_rows, solution_examples
from agentworld_envs.trl.environment import (
    EnvSession,
    environment_class,
    environment_reward,
    import_trl,
)
from agentworld_envs.trl.rollout import (
    TurnRollout,
    feedback_messages,
    turn_environment_class,
    vector_environment_class,
)
from agentworld_envs.trl.tiny_model import build_tiny_chat_model, imprint

__all__ = ["EnvSession", "TurnRollout", "build_tiny_chat_model", "check_batch_fits",
           "environment_class", "environment_reward", "feedback_messages", "floor_rows",
           "import_trl", "imprint", "solution_examples", "turn_environment_class",
           "vector_environment_class"]
