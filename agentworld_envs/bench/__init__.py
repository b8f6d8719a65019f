"""World-model benchmarks.

* :mod:`.items`: the AgentWorldBench JSONL format (load, validate, write, the chat);
* :mod:`.run`: run any backend over items; the rubric bench and the judge-free fidelity score;
* :mod:`.judge`, :mod:`.diagnostics`, :mod:`.report`: the judge, the rule diagnostics and
  caps, per-domain reports with both Overall figures;
* :mod:`.fidelity`: the judge-free per-step fidelity metric;
* :mod:`.transitions`: transition datasets from run corpora and simulated rollouts;
* :mod:`.sample`: the shipped sample; :mod:`.cli`: ``agentworld wm``.
"""
