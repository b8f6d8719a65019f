"""``agentworld serve --kw max_episode_steps=...`` is checked by the server itself, so a bad value
is a one-line usage error (exit 2) on every allowed gymnasium: gymnasium < 1.4's ``TimeLimit``
only asserts it (a bare ``AssertionError``, and none at all under ``python -O``)."""

from __future__ import annotations

import pytest

pytest.importorskip("openenv")

from agentworld_envs.cli import main  # noqa: E402
from agentworld_envs.serve.settings import ServeSettings  # noqa: E402


@pytest.mark.parametrize("steps", ["abc", 0, -2, 2.5, True, [3]])
def test_a_bad_max_episode_steps_is_refused_before_gym_make(steps, capsys, monkeypatch):
    import gymnasium as gym

    def never(*args, **kwargs):
        raise AssertionError("gym.make reached with a bad max_episode_steps")

    monkeypatch.setattr(gym, "make", never)
    with pytest.raises(ValueError, match=r"max_episode_steps must be a whole number > 0"):
        ServeSettings(env_id="AgentFloor/A1-v0", env_kwargs={"max_episode_steps": steps})
    assert main(["serve", "AgentFloor/A1-v0", "--kw", f"max_episode_steps={steps!r}"
                 .replace("'", '"').replace("True", "true")]) == 2
    err = capsys.readouterr().err.strip()
    assert "max_episode_steps must be a whole number > 0" in err and "\n" not in err


@pytest.mark.parametrize("steps", [None, -1, 1, 20])
def test_gym_makes_own_max_episode_steps_values_are_served(steps):
    """None: the registered budget; -1: no TimeLimit (as gym.make reads them)."""
    import gymnasium as gym

    from agentworld_envs.serve.served_env import ServedEnv

    served = ServedEnv(ServeSettings(env_id="AgentFloor/A1-v0",
                                     env_kwargs={"max_episode_steps": steps}))
    env = served.make("AgentFloor/A1-v0")
    registered = gym.spec("AgentFloor/A1-v0").max_episode_steps
    assert env.spec.max_episode_steps == {None: registered, -1: None}.get(steps, steps)
    env.close()
    served.close()
