"""Sim-to-real: does an agent trained in a simulated task do better in the real one?

The task is a branching AgentFloor one (:func:`floor_tasks.task_sets.branching_tasks`, default
C1): the right submission depends on the status the lookup returns, so a policy must read
observations. Or ``--task mcp:<family>``: generated MCP servers of one family, whose answers
live in their records; the real env is their executable twin (``AgentWorld/MCP-v0`` with
``mode="real"``), and held-out servers have other records, items and questions.
Two agents (``--agent``). ``linear`` (the default) is a linear softmax policy over the
candidate actions, trained with REINFORCE and an entropy bonus (CleanRL-style, one file). Its
features are hashed pairs of (a word of a value the latest tool result holds, a word of the
candidate), the candidate's words by turn, and whether each record id in the candidate appears
in the prompt or in the latest observation, so that what it learns carries over to records it
never saw. ``ppo`` is Stable-Baselines3 PPO with
:class:`~agentworld_envs.wrappers.CandidateScoringPolicy` over byte-level token ids of the
prompt, the latest observation and each candidate (:func:`~agentworld_envs.wrappers.wrap_for_sb3`
on both envs, the simulated one shown as the real one shows itself); one of its updates is one
rollout of ``--ppo-envs`` x ``--ppo-steps`` steps.

Arms, each with ``--seeds`` seeds and the same ``--updates`` policy updates of ``--batch``
episodes (only the capped arms stop early, by design):

``untrained``       the initial policy, never updated;
``sim``             ``AgentWorld/Floor-v0`` (or ``MCP-v0``) with ``--world-model`` (the
                    embedded fine-tuned one by default) and the simulated reward;
``sim-garbage``     the same with the ``scripted`` placeholder (nothing readable is shown);
``sim-fixture``     a rule-based simulator that shows the true records (floor: the
                    fixture's; MCP: the server's, answered exactly as its twin would);
``sim-constant``    the same with one value of the decision field for every record (floor:
                    the status ``active``; MCP: the asked field, e.g. inventory's stock
                    count, as the first record holds it that is not the answer) (readable,
                    wrong);
``sim-inverted``    floor only: the same with the other status (readable, wrong);
``sim-shuffled``    MCP only: the same with the asked field's values permuted among the
                    records, so that no record shows its own (readable, wrong);
``real``            the real ``AgentFloor`` env (or the MCP twin) for every update;
``real-capped``     the real env for the first ``--real-updates`` updates only;
``real-capped+sim`` those real updates, then simulated ones up to ``--updates``;
``real-blind``      the real env, every tool result hidden from the policy
                    (it sees the prompt in their place): the most a policy that never reads
                    scores on the held-out items, the bound the controls are held to.

A simulated episode touches nothing real (``real_counterpart=False``): no real env is built,
and its reward, submissions included, is the simulated episode's alone. A floor submission
is accepted when it makes the decision the scenario's records call for (``--decided-by
scenario``, the default; :func:`agentworld_envs.domains.floor.verdict.decided_observation`),
after the simulator has shown the status: so a simulator that shows the status inverted pays
the branch its shown status does not call for, and its policy learns the inverted rule. With
``--decided-by shown`` (the sixth run's design) the task's rule over the status the simulator
showed decides instead: the inverted simulator then pays the true rule on relabelled records,
and no readable simulator can fail. An MCP control answers every call as
the server's twin would on its records as the control shows them
(:mod:`trainers.experiments.sim_to_real.mcp_record_controls`); the simulated reward, as for
every MCP arm, checks the scenario's true answer, shown in some observation. So an MCP
simulator cannot pay a wrong answer: it teaches only where it shows the true one, which
``results.json`` measures per call (:mod:`.shown_answers`); on a floor task it measures what
each simulator's lookup of the asked record shows against the fixture (:mod:`.shown_statuses`).
The real env is played only by the real arms and by scoring.

Every arm is scored on the real env (the task's own step budget) on held-out variants greedily:
on C1, 40 generated records and names never trained on (``--floor-records``,
:mod:`floor_tasks.generated`: 20 training records, four to a task as in C1, each record one
item in one of the five wordings; ``--floor-records ''`` keeps the fixture's own split,
``--train-variants`` and ``--eval-variants``, which is not held out: training episodes'
candidate actions name its scored records CMP-35 and CMP-36, and a training lookup of either
returns its true record, in the real env and in every simulator), every ``--eval-every``
updates, as balanced
success: the mean over decisions of the success rate on the variants that need it. A policy
blind to observations scores 0.5 at most on a floor task. An MCP family is scored on ``--mcp-
eval`` held-out servers that share no record id or name with the training ones (plain success;
blind, one answer in three is right: the candidates leak nothing). Every seed is scored on
the same held-out items, so intervals are 95% t intervals of that crossed design, the seeds'
variance plus the items' (within each decision). ``--summarize PATH`` rebuilds a results
file's summaries from the runs it holds, training nothing. Training episodes have
``--train-steps`` steps. The world model's greedy answers are cached in
``<out>/world_model_calls.jsonl``, so a prompt is generated once across arms and seeds. Writes
``<out>/results.json`` (per arm: balanced success, interval, per-seed values, held-out items,
real-env episodes for training and for scoring, simulated episodes, seconds) and
``<out>/curves.png``. Each run (an arm and seed) goes into ``<out>/runs.jsonl`` as soon as it
ends (:mod:`.resume`): ``--resume`` keeps those runs and makes only the others (the same
settings only), and writes the results an uninterrupted run writes.

Run (CPU; the first run generates the world model's answers: 10.5 minutes on 2 cores)::

    python examples/sim_to_real.py --out runs/sim_to_real

Quick check (seconds, placeholder world model for both sim arms):
``python examples/sim_to_real.py --out s2r --seeds 1 --updates 2 --batch 4
--world-model scripted``; with ``--agent ppo --ppo-envs 2 --ppo-steps 8 --ppo-epochs 1`` for
the PPO agent. The PPO run (11 minutes on 2 shared cores once the linear run's recorded
world-model answers are copied into its ``--out``; see ``docs/sim_to_real.md``)::

    python examples/sim_to_real.py --agent ppo --out runs/sim_to_real_ppo

The MCP run (linear agent; the twin is the real env)::

    python examples/sim_to_real.py --task mcp:inventory --out runs/sim_to_real_mcp

Its record controls alone (no world model; minutes): the same with
``--arms sim-fixture,sim-constant,sim-shuffled``.

Modules: :mod:`.args` (the flags), :mod:`.tasks` (floor task or MCP family),
:mod:`.features` and :mod:`.linear` (the linear agent), :mod:`.wrappers` and :mod:`.ppo` (the
PPO agent), :mod:`.arms` (the simulator each arm trains in), :mod:`.mcp_record_controls` (an
MCP family's record controls), :mod:`.shown_answers` (what each simulator shows on each of
an MCP server's calls, measured before training), :mod:`.shown_statuses` (what each
simulator's lookup shows on a floor task), :mod:`.scoring`, :mod:`.resume` (the journal of
finished runs) and :mod:`.run` (:func:`main`).
"""

from trainers.experiments.sim_to_real.args import Args
from trainers.experiments.sim_to_real.arms import (
    ARMS,
    CONTROLS,
    failed_calls,
    record_path,
    record_simulator,
    sim_backend,
    task_arms,
)
from trainers.experiments.sim_to_real.features import is_id, result_values, words
from trainers.experiments.sim_to_real.linear import (
    LinearAgent,
    LinearPolicy,
    SimTrainer,
    play_real,
    real_batch,
)
from trainers.experiments.sim_to_real.ppo import PPOAgent
from trainers.experiments.sim_to_real.run import AGENTS, main, plot, run_arm, world_model_spec
from trainers.experiments.sim_to_real.scoring import (
    balanced,
    call_names,
    evaluate,
    final_calls,
    interval,
)
from trainers.experiments.sim_to_real.shown_answers import OUTCOMES, shown_answers
from trainers.experiments.sim_to_real.shown_statuses import STATUS_OUTCOMES, shown_statuses
from trainers.experiments.sim_to_real.tasks import (
    IDENTITY_FIELDS,
    FloorTask,
    McpTask,
    identities,
    make_task,
)
from trainers.experiments.sim_to_real.wrappers import InstructionFirst

__all__ = ["AGENTS", "ARMS", "CONTROLS", "IDENTITY_FIELDS", "OUTCOMES", "Args", "FloorTask",
           "InstructionFirst", "LinearAgent", "LinearPolicy", "McpTask", "PPOAgent",
           "SimTrainer", "balanced", "call_names", "evaluate", "failed_calls",
           "final_calls", "identities",
           "interval", "is_id", "main", "make_task", "play_real", "plot", "real_batch",
           "record_path", "record_simulator", "result_values", "run_arm", "shown_answers",
           "shown_statuses", "STATUS_OUTCOMES", "sim_backend", "task_arms", "words",
           "world_model_spec"]
