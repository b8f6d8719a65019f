"""The reset options a served session reads are the env's own: the server asks the env (its
refusal names what it reads) instead of keeping a second list; and a refused reset leaves the
session's draws as they were, also when the env reseeded before it refused."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("openenv")

import agentworld_envs.sim.env as sim_env  # noqa: E402
from agentworld_envs.serve.served_env import ServedEnv  # noqa: E402
from agentworld_envs.serve.session import GymSession  # noqa: E402
from agentworld_envs.serve.settings import ServeSettings  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")


def _session(env_id: str, **settings) -> GymSession:
    return GymSession(ServedEnv(ServeSettings(env_id=env_id, **settings)))


def test_the_refusal_names_the_options_the_env_reads(monkeypatch):
    session = _session("AgentWorld/Search-v0", backend="scripted")
    monkeypatch.setattr(sim_env, "RESET_OPTIONS", ("scenario", "difficulty"))
    with pytest.raises(ValueError) as refused:
        session.reset(seed=0, options={"colour": "red"})
    assert str(refused.value) == ("unknown reset option(s) ['colour']; this env reads "
                                  "scenario, difficulty")
    # an option the env declares reaches it (the server no longer refuses it on its own)
    session.reset(seed=0, options={"difficulty": "hard"})
    floor = _session("AgentFloor/tier:B")
    for options, message in (
            ({"colour": 1}, "unknown reset option(s) ['colour']; this env reads variant, task"),
            ({"task": "B3", "scenario": "x"},
             "unknown reset option(s) ['scenario']; this env reads variant, task"),
            ({"task": 3}, "reset option 'task' must be a string (or null), not int")):
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            floor.reset(seed=0, options=options)
    with pytest.raises(ValueError, match=r"^unknown reset option\(s\) \['task'\]; this env "
                                         r"reads variant$"):
        _session("AgentFloor/B3-v0").reset(options={"task": "B3"})


@pytest.mark.parametrize("refused", [{"scenario": "no-such-scenario"}, {"scenario": 5},
                                     {"colour": 1}])
def test_a_refused_reset_leaves_an_agentworld_sessions_draws_as_they_were(refused):
    served = ServedEnv(ServeSettings(env_id="AgentWorld/Search-v0", backend="scripted"))

    def play(refused: dict | None) -> list[str]:
        session = GymSession(served)
        session.reset(seed=7)
        if refused is not None:
            with pytest.raises(ValueError):
                session.reset(seed=99, options=refused)
        return [session.reset().metadata["info"]["scenario_id"] for _ in range(4)]

    assert play(refused) == play(None)
