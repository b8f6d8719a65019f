"""World-model benchmarks: the judge-free fidelity metric (:mod:`.fidelity`)."""
