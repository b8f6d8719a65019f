"""A faulted step's warning is new at every step (it holds the running count of failed calls),
so Python's default filter showed each, and kept each in the caller's module's
``__warningregistry__`` for good: a run whose world model fails now and then grew by one
entry (about 370 bytes) per faulted step, 2,011 entries after 2,000 episodes."""

from __future__ import annotations

import warnings

import gymnasium as gym

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.registration import env_id

BOOM = {"name": "scripted", "rules": [{"match": "BOOM", "error": "server down"}]}
SEARCH = '{"name": "web_search", "arguments": {"queries": ["BOOM"]}}'


def test_faulted_steps_each_warn_and_leave_the_callers_registry_as_it_was() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gym.make(env_id("search"), backend=BOOM)
    env.reset(seed=0, options={"scenario": "search-lighthouse-keeper"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own: once per message and place
        env.step(SEARCH)  # a filter change empties the registry at the next warning
        kept = len(globals().get("__warningregistry__", {}))
        for _ in range(8):
            env.step(SEARCH)
        assert len(globals().get("__warningregistry__", {})) == kept
    faults = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(faults) == 9
    assert {w.filename for w in faults} == {__file__}
    env.close()
