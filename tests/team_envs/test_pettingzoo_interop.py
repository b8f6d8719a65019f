"""PettingZoo conventions the team envs keep beyond what PettingZoo's own tests check.

- ``pettingzoo.make(kind, id, max_cycles=N)`` passes PettingZoo's cycle cap to the env: a text
  team in rotation (``rounds`` cycles long) refuses a cap below ``rounds`` instead of ignoring
  it; a cap it can honour is honoured.
- ``render()`` without a ``render_mode`` warns, as PettingZoo's and Gymnasium's envs do.
"""

from __future__ import annotations

import pettingzoo
import pytest

import team_envs  # noqa: F401  (registers the team envs)

ROTATING = [("team_envs/arithmetic_chain-v0", {}), ("team_envs/logic_grid-v0", {}),
            ("team_envs/countdown-v0", {}),
            ("team_envs/reasoning-v0", {"task": "chain_sum"})]


def _messages_played(env) -> tuple[int, bool]:
    env.reset(seed=0)
    messages, truncated = 0, False
    for _ in env.agent_iter():
        *_, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        env.step("hello")
        messages += 1
    return messages, truncated


@pytest.mark.parametrize(("env_id", "kwargs"), ROTATING, ids=[e for e, _ in ROTATING])
@pytest.mark.parametrize("kind", ["aec", "parallel"])
def test_a_cycle_cap_below_the_rotation_rounds_is_refused(env_id: str, kwargs: dict,
                                                          kind: str) -> None:
    with pytest.raises(ValueError, match=r"max_cycles=1 is below rounds=3"):
        pettingzoo.make(kind, env_id, rounds=3, max_cycles=1, **kwargs)


@pytest.mark.parametrize(("env_id", "kwargs"), ROTATING, ids=[e for e, _ in ROTATING])
def test_a_cycle_cap_the_team_can_keep_is_kept(env_id: str, kwargs: dict) -> None:
    env = pettingzoo.make("aec", env_id, rounds=2, max_cycles=2, **kwargs)
    assert _messages_played(env) == (2 * 3, False)
    # router, no cap given: 3 cycles, then truncated (agent_0 routes to itself, so agent_1
    # follows, and agent_1 routes back: the answerer never speaks)
    env = pettingzoo.make("aec", env_id, handoff="router", **kwargs)
    env.reset(seed=0)
    for _ in env.agent_iter():
        *_, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else "NEXT: agent_0")
    transcript = env.unwrapped.episode.transcript
    assert truncated and len(transcript) == 3 * 3
    assert {entry["agent"] for entry in transcript} == {0, 1}


@pytest.mark.parametrize("env_id", ["team_envs/relay-v0", "team_envs/countdown-v0"])
@pytest.mark.parametrize("kind", ["aec", "parallel"])
def test_render_without_a_render_mode_warns(env_id: str, kind: str) -> None:
    env = pettingzoo.make(kind, env_id)
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="without specifying any render mode"):
        assert env.render() is None
