"""Under ``on_fault="report"`` every step with a failed world-model call warns, at the caller's
own ``step`` line: Python's default filter shows a warning once per message and place, so the
same fault, warned from inside the package, showed once and was silent after."""

from __future__ import annotations

import warnings

import gymnasium as gym

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.registration import env_id

BOOM = {"name": "scripted", "rules": [{"match": "BOOM", "error": "server down"}]}
SEARCH = '{"name": "web_search", "arguments": {"queries": ["BOOM"]}}'


def _fault_warnings(env: gym.Env | gym.vector.VectorEnv, action) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own: once per message and place
        for _ in range(3):
            env.step(action)
    return [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_each_faulted_step_warns_at_the_callers_line() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gym.make(env_id("search"), backend=BOOM)
        envs = gym.make_vec(env_id("search"), num_envs=2, backend=BOOM)
    env.reset(seed=0)
    envs.reset(seed=0)
    for caught in (_fault_warnings(env, SEARCH), _fault_warnings(envs, [SEARCH, SEARCH])):
        assert len(caught) == 3
        assert {w.filename for w in caught} == {__file__}
        assert "failed so far" in str(caught[-1].message)
