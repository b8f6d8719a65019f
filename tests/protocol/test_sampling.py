"""Sampling settings: a stop given as one string is refused, not split into one stop per
character; a seed is an integer."""

from __future__ import annotations

import numpy as np
import pytest

from agentworld_envs.protocol.chat import SamplingParams
from agentworld_envs.sim.config import SimConfig


@pytest.mark.parametrize("stop", ["</tool_call>", ["a", 1], None, 3])
def test_a_stop_that_is_not_a_list_of_strings_is_refused(stop: object) -> None:
    with pytest.raises(ValueError, match=r"^stop must be a list of strings, not "):
        SamplingParams(stop=stop)  # type: ignore[arg-type]


def test_a_sim_config_stop_string_is_refused_not_split_into_characters() -> None:
    with pytest.raises(ValueError, match="stop must be a list of strings"):
        SimConfig(domain="mcp", sampling={"stop": "</tool_call>"})
    config = SimConfig(domain="mcp", sampling={"stop": ["</tool_call>"]})
    assert config.world_model_params().stop == ("</tool_call>",)


def test_a_list_of_stops_is_kept_as_a_tuple() -> None:
    params = SamplingParams(stop=["END", "STOP"])  # type: ignore[arg-type]
    assert params.stop == ("END", "STOP")
    assert params == SamplingParams(stop=("END", "STOP"))
    assert params.to_dict()["stop"] == ["END", "STOP"]


def test_a_seed_must_be_an_integer() -> None:
    for seed in ("7", 1.5, True):
        with pytest.raises(ValueError, match=r"^seed must be an integer or None, not "):
            SamplingParams(seed=seed)  # type: ignore[arg-type]
    assert SamplingParams(seed=np.int64(3)).seed == 3
    assert SamplingParams().with_seed(5).seed == 5
