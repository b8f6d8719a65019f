"""Stage-0 replacement of an agent that wrote nothing in the team's rollout (a router skipped
it): there is nothing to distil on, and training goes on."""

from __future__ import annotations

from pathlib import Path

from tests.trainers.test_teamtr_lm import _route_to_the_answerer
from trainers import teamtr


def test_replacing_an_agent_the_router_skipped_aligns_on_nothing_and_trains_on(
        tiny_lm_dir: Path) -> None:
    """Before: ``KeyError: 'kl'`` from Stage-0 (``ValueError`` from ``range`` for a policy
    without ``score_batch_size``), stopping the run."""
    args = teamtr.Args(env_id="team_envs/countdown-v0", n_agents=3,
                       env_kwargs={"handoff": "router"}, model=str(tiny_lm_dir),
                       max_new_tokens=4, prompts_per_rollout=2, group_size=2, total_episodes=16,
                       eval_episodes=2, log_dir="", replace_agent=1, replace_at_stage=0)
    team = teamtr.build_team(args)
    _route_to_the_answerer(team.policies[0])  # agent_1 never speaks
    incumbent = team.policies[1]
    record = teamtr.train(args, team=team).history[1]
    assert team.policies[1] is not incumbent
    assert {key: record[key] for key in record if key.startswith("stage0/")} == {
        "stage0/kl": 0.0, "stage0/steps": 0, "stage0/within_bound": 1.0, "stage0/agent": 1,
        "stage0/incumbent_team_reward": record["stage0/incumbent_team_reward"]}
    assert "trust_region/agent_1/accepted" in record
