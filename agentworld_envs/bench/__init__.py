"""World-model benchmarks.

* :mod:`.items`: the AgentWorldBench JSONL format (load, validate, write, the chat);
* :mod:`.run`: run any backend over items; the AgentWorldBench-compatible bench and the
  judge-free fidelity score;
* :mod:`.judge`: the judge's messages (release layout, any prompt set) and batched judging;
  :mod:`.judge_parser`: the release's verdict parser (the release's prediction parser and marker
  cut are the env's own, in :mod:`agentworld_envs.world.parsing`);
* :mod:`.diagnostics`: the opt-in rule diagnostics and caps; :mod:`.report`: per-domain
  reports with both Overall figures and the failure reasons;
* :mod:`.transitions`: transition datasets from run corpora and simulated rollouts;
* :mod:`.sample`: the shipped sample; :mod:`.journal`: what a run has so far, for
  ``--resume``; :mod:`.cli`: ``agentworld wm``.

Per-step fidelity lives in :mod:`agentworld_envs.world.fidelity`: ``bench`` uses ``sim``, never
the reverse.
"""
