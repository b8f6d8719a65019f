"""The experiment's flags: :class:`Args`, one field a flag (``examples/sim_to_real.py --help``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentworld_envs.backends.faults import DEFAULT_MAX_FAULTS


@dataclass
class Args:
    """Sim-to-real on a branching AgentFloor task or an MCP family (lists are comma-separated)."""

    task: str = "C1"
    """A branching AgentFloor task, or ``mcp:<family>``: generated MCP servers of one family
    (inventory, calendar, tickets, crm, fleet), scored on their executable twin."""
    floor_records: list[int] = field(default_factory=lambda: [20, 40])
    """C1: train on this many generated records and score on this many others (two even
    counts; :mod:`floor_tasks.generated`), each record one variant in one of the five
    wordings. Empty (``--floor-records ''``): the fixture's own records, as the variants
    below name them (a split that is not held out: see ``eval_variants``)."""
    floor_records_seed: int = 0
    """C1: the seed of the generated records."""
    train_variants: list[str] = field(default_factory=lambda: [
        f"i{i}v{k}" for i in (0, 1) for k in range(5)])
    """Floor, with ``--floor-records ''``: variants trained on (both decisions must occur);
    ``i<M>v<N>`` is instance M with prompt N. C1: CMP-31 (active) and CMP-33 (inactive), each
    in the five wordings."""
    eval_variants: list[str] = field(default_factory=lambda: [
        f"i{i}v{k}" for i in (3, 4) for k in range(5)])
    """Floor, with ``--floor-records ''``: variants scored on the real env, whose records are
    never the prompt's record in training. C1: CMP-35 (active) and CMP-36 (inactive), each in
    the five wordings; CMP-34 "Coolant Loop B" is left out, as its name nearly repeats
    training's CMP-33 "Coolant Loop A". This split is not held out: C1's candidate actions
    offer every instance's steps, so training episodes' candidates name CMP-35 and CMP-36, and
    a training lookup of either gets its true record (from the real env, the rule-based
    record simulators, which serve every record of the fixture, and the world model, whose
    notes hold the fixture). The generated split (``--floor-records``) is held out."""
    decided_by: str = "scenario"
    """Floor: what a simulated submission's outcome follows (``SimConfig.decided_by``):
    ``scenario``, the decision the scenario's records call for, so that a simulator must show
    them right (one that shows a status inverted pays the branch that status does not call
    for, and its policy fails on the real records); or ``shown``, the task's rule over the
    status the simulator showed, under which no readable simulator can fail (the sixth run's
    design, ``runs/s2r9_c1``)."""
    mcp_train: int = 8
    """MCP: the family's first ``mcp_train`` generated servers are trained on."""
    mcp_eval: int = 24
    """MCP: the next ``mcp_eval`` servers (other records, items and questions) are held out."""
    seeds: int = 5
    """Seeds per arm (each fixes the policy's start, the variant draws and the envs)."""
    updates: int = 20
    """Policy updates per arm (batches of ``batch`` episodes)."""
    batch: int = 64
    """Episodes per update; also the simulated vector env's width."""
    real_updates: int = 2
    """Updates on the real env in the capped arms."""
    paired_real_updates: bool = False
    """Linear agent: draw the real episodes (variants and reset seeds) of every arm from the
    seed alone, so that ``real-capped`` and ``real-capped+sim`` (and ``real``'s first
    updates) play the same real episodes and the comparison is paired. Off, each arm's draws
    are seeded by the seed and the arm, and the capped arms play different real episodes
    (unpaired): C1's committed run (the seventh) was made with it, every other committed run
    without it."""
    train_steps: int = 2
    """Step budget of a training episode."""
    learning_rate: float = 0.1
    """REINFORCE step size."""
    entropy_coef: float = 0.05
    """Weight of the entropy bonus."""
    eval_every: int = 4
    """Updates between scores on the held-out real variants."""
    arms: list[str] = field(default_factory=list)
    """The arms to run (default: every arm of the task: the floor record controls on a floor
    task, the MCP ones on an MCP family)."""
    agent: str = "linear"
    """``linear`` (hashed features, REINFORCE) or ``ppo`` (SB3 PPO over token ids)."""
    ppo_envs: int = 8
    """PPO: parallel envs of a rollout."""
    ppo_steps: int = 16
    """PPO: rollout steps per env, so an update sees ``ppo_envs * ppo_steps`` steps."""
    ppo_epochs: int = 10
    """PPO: optimisation epochs per update."""
    ppo_minibatch: int = 64
    """PPO: minibatch size."""
    ppo_learning_rate: float = 3e-3
    """PPO: Adam step size."""
    ppo_entropy_coef: float = 0.01
    """PPO: weight of the entropy bonus."""
    ppo_gamma: float = 0.9
    """PPO: discount."""
    ppo_normalize_advantage: bool = False
    """PPO: normalise advantages per minibatch."""
    ppo_overlap_ngram: int = 0
    """PPO: 0 encodes token ids by position (``CandidateFeatures``); n > 0 adds, per candidate
    token, whether its n-gram occurs in the prompt and in the observation
    (``CandidateOverlapFeatures``)."""
    ppo_max_length: int = 256
    """PPO: byte-level token ids kept of the prompt and of the latest observation."""
    ppo_candidate_length: int = 96
    """PPO: token ids kept per candidate action (C1's longest is 94 bytes)."""
    world_model: str = "embedded"
    """The world model of the ``sim`` and ``real-capped+sim`` arms: ``embedded`` (the
    fine-tuned default), any backend name registered with
    ``agentworld_envs.backends.register_backend`` (``scripted``: the placeholder, for quick
    checks), or a JSON backend spec such as ``{"name": "openai", "base_url": ...}``.
    ``sim-garbage`` always uses the placeholder, the record controls their own rules."""
    out: Path = Path("runs/sim_to_real")
    """Where results, curves and the world model's recorded answers go; each finished run (an
    arm and seed) also goes at once into its journal there (``runs.jsonl``). Without
    ``--resume`` a run starts afresh: the journal is begun anew and the results rewritten (the
    recorded answers are served again)."""
    resume: bool = False
    """Keep the finished runs in ``--out``'s journal and run only the others (the same
    settings only: ``--arms`` and ``--seeds`` may differ); the results are rewritten from all
    of them, as an uninterrupted run writes them."""
    max_faults: int = DEFAULT_MAX_FAULTS
    """Failed world-model calls a simulated env goes on after (linear: the vector of one arm
    and seed; PPO: each of its envs), their observations being fallbacks; one more stops the
    run, and a run with any ends non-zero before its table. -1: never stop, and count them
    in ``results.json`` (``failed_world_model_calls``)."""
    summarize: Path | None = None
    """Train and score nothing: rebuild the summaries (intervals, with the point estimates
    checked against the runs) of the results file at this path from the per-seed, per-item
    runs it holds, and print each one's table. The file is a run's ``results.json`` or a
    compilation of several, one entry per task (``docs/sim_to_real_results.json``); every
    other flag is ignored."""
