"""Bad team env settings through the Python API: one ValueError naming the setting, never a
truth test that reads any value as on or off, never a bare TypeError."""

from __future__ import annotations

import numpy as np
import pettingzoo
import pytest

import team_envs  # noqa: F401

SPLIT_FAMILIES = ["arithmetic_chain", "logic_grid", "countdown"]


@pytest.mark.parametrize("family", SPLIT_FAMILIES)
@pytest.mark.parametrize("split", ["false", "no", 0, 1, None, [True]])
def test_split_must_be_true_or_false(family: str, split: object) -> None:
    """``split="false"`` dealt the information out privately: any value was read as a bool."""
    with pytest.raises(ValueError, match=r"^split must be True or False, got "):
        pettingzoo.make("aec", f"team_envs/{family}-v0", split=split)


@pytest.mark.parametrize("family", SPLIT_FAMILIES)
def test_a_numpy_bool_is_a_split_setting(family: str) -> None:
    env = pettingzoo.make("aec", f"team_envs/{family}-v0", split=np.bool_(False))
    assert env.unwrapped.task.split is False


@pytest.mark.parametrize("family", ["arithmetic_chain", "compositional"])
@pytest.mark.parametrize("roles", [3, 2.5, True])
def test_roles_that_are_no_list_are_refused_by_name(family: str, roles: object) -> None:
    """``'int' object is not iterable``."""
    with pytest.raises(ValueError, match=r"^roles must be a list of role names, got "):
        pettingzoo.make("aec", f"team_envs/{family}-v0", roles=roles)


@pytest.mark.parametrize(("env_id", "setting", "message"), [
    ("team_envs/floor_team-v0", "max_cycles",
     r"^floor_team_v0 takes no setting 'max_cycles'; its settings: executor_turns, "),
    ("team_envs/arithmetic_chain-v0", "n_agent",
     r"^arithmetic_chain_v0 takes no setting 'n_agent' \(did you mean 'n_agents'\?\); its "
     r"settings: .*max_cycles"),
])
def test_an_unknown_setting_is_refused_naming_the_envs_settings(env_id: str, setting: str,
                                                                 message: str) -> None:
    """Before: ``FloorTeamTask.__init__() got an unexpected keyword argument 'max_cycles'``,
    naming a class the user never wrote and none of the settings."""
    for form in ("aec", "parallel"):
        with pytest.raises(TypeError, match=message):
            pettingzoo.make(form, env_id, **{setting: 3})
