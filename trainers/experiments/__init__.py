"""Experiments: the evidence behind the README's claims, each runnable from ``examples/``.

* :mod:`~trainers.experiments.sim_to_real`: does training in simulation help in the real env?
* :mod:`~trainers.experiments.teamtr_evidence`: TeamTR's compounding shift and its ablations.
* :mod:`~trainers.experiments.teamtr_reasoning`: TeamTR and its baselines on LM teams.
* :mod:`~trainers.experiments.world_model_evidence`: how faithful the embedded world model is.
"""
