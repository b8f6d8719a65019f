"""Small settings of the TeamTR reasoning experiment (``examples/teamtr_reasoning.py``) on the
tiny test model: seconds a run."""

from __future__ import annotations

from pathlib import Path


def small_experiment(model: Path, *, seeds: int, total_episodes: int, methods: str = "teamtr",
                     held_out: int = 2, max_new_tokens: int = 3) -> list[str]:
    """The experiment's flags for a 2-agent team of ``model`` with rank-2 adapters."""
    return ["--model", str(model), "--n-agents", "2", "--held-out", str(held_out),
            "--seeds", str(seeds), "--methods", methods, "--total-episodes", str(total_episodes),
            "--prompts-per-rollout", "2", "--group-size", "2",
            "--max-new-tokens", str(max_new_tokens), "--lora-rank", "2", "--update-epochs", "1",
            "--torch-threads", "1"]
