"""The thin vLLM generation path, through its interface only (vLLM is not installed here):
the install hint, the adapter folders and LoRA ids it hands to vLLM, and the requests it makes
(recorded by a stand-in for vLLM's ``LLM`` and its request classes)."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pettingzoo
import pytest
import torch

from trainers import teamtr
from trainers.common.args import ConfigError
from trainers.common.team import build_team
from trainers.policies.lm import CausalLMPolicy
from trainers.policies.vllm_generation import VLLMGeneration

pytest.importorskip("peft")
no_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                             reason="vLLM is installed: the hint is not reached")


@no_vllm
def test_without_vllm_generation_says_how_to_install_it(tiny_lm_dir: Path, tmp_path: Path) -> None:
    engine = VLLMGeneration(str(tiny_lm_dir), tmp_path, max_lora_rank=4, max_loras=2)
    with pytest.raises(ImportError, match="pip install vllm"):
        _ = engine.engine
    policy = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, engine=engine)
    env = pettingzoo.make("aec", "team_envs/countdown-v0")
    env.reset(seed=0)
    with pytest.raises(ImportError, match="pip install vllm"):  # no silent fallback
        policy.generate([env.observe("agent_0")], torch.Generator().manual_seed(0))


def test_an_adapter_is_saved_again_under_a_new_id_only_after_it_changed(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    engine = VLLMGeneration(str(tiny_lm_dir), tmp_path, max_lora_rank=4, max_loras=2)
    first = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, adapter="agent_0")
    second = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, adapter="agent_1", base=first)
    one, folder = engine.adapter(first)
    assert (folder / "adapter_config.json").is_file() and engine.adapter(first) == (one, folder)
    other, _ = engine.adapter(second)
    assert other != one
    with torch.no_grad():  # an update of agent_0
        for param in first.trainable_parameters():
            param.add_(0.5)
    again, new_folder = engine.adapter(first)
    assert again not in (one, other) and new_folder != folder and not folder.exists()
    saved = load_file(new_folder / "adapter_model.safetensors")
    assert saved and all(float(t.abs().min()) > 0 for t in saved.values())  # B moved off 0
    assert engine.adapter(second)[0] == other  # agent_1 unchanged: not saved again


def test_a_vllm_team_shares_one_engine_per_base(tiny_lm_dir: Path, tmp_path: Path) -> None:
    settings = dict(env_id="team_envs/countdown-v0", n_agents=2, max_new_tokens=4,
                    prompts_per_rollout=2, group_size=2, total_episodes=8, log_dir="",
                    generation="vllm")
    with pytest.raises(ConfigError, match="generation: vllm serves the agents as LoRA"):
        teamtr.Args(model=str(tiny_lm_dir), **settings)
    team = build_team(teamtr.Args(model=str(tiny_lm_dir), lora_rank=4, **settings))
    first, second = team.policies
    assert isinstance(first.engine, VLLMGeneration) and first.engine is second.engine
    assert first.engine.options["max_lora_rank"] == 8  # rank 4, rounded up to one vLLM takes


def test_adapters_saved_in_a_temporary_folder_go_with_the_engine(tiny_lm_dir: Path) -> None:
    import gc

    engine = VLLMGeneration(str(tiny_lm_dir), max_lora_rank=4, max_loras=1)
    _, folder = engine.adapter(CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, adapter="agent_0"))
    workdir = engine.workdir
    assert (folder / "adapter_config.json").is_file() and folder.is_relative_to(workdir)
    del engine
    gc.collect()
    assert not workdir.exists()


def test_a_replacement_under_an_old_adapter_name_is_saved_afresh(tiny_lm_dir: Path,
                                                                 tmp_path: Path) -> None:
    engine = VLLMGeneration(str(tiny_lm_dir), tmp_path, max_lora_rank=4, max_loras=2)
    incumbent = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, adapter="agent_1", seed=0)
    newcomer = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, adapter="agent_1", seed=1)
    versions = [[p._version for p in q.trainable_parameters()] for q in (incumbent, newcomer)]
    assert versions[0] == versions[1]  # the version counters alone cannot tell them apart
    old, _ = engine.adapter(incumbent)
    new, folder = engine.adapter(newcomer)
    assert new != old and engine.adapter(newcomer) == (new, folder)


class _RecordingLLM:
    """Stands in for ``vllm.LLM``: records each ``generate`` call, answers two tokens a prompt."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def generate(self, prompts: list, params: list, lora_request: tuple) -> list:
        self.calls.append((prompts, params, lora_request))
        reply = types.SimpleNamespace(outputs=[types.SimpleNamespace(token_ids=[5, 6])])
        return [reply] * len(prompts)


@pytest.fixture
def vllm_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's request classes, recording their arguments."""
    modules = {name: types.ModuleType(name) for name in
               ("vllm", "vllm.inputs", "vllm.lora", "vllm.lora.request")}
    modules["vllm"].SamplingParams = lambda **settings: settings
    modules["vllm.inputs"].TokensPrompt = lambda **prompt: prompt
    modules["vllm.lora.request"].LoRARequest = lambda *request: request
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


def test_each_prompt_is_drawn_with_a_seed_of_its_own(tiny_lm_dir: Path, tmp_path: Path,
                                                     vllm_requests: None) -> None:
    engine = VLLMGeneration(str(tiny_lm_dir), tmp_path, max_lora_rank=4, max_loras=1)
    engine._engine = llm = _RecordingLLM()
    policy = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, max_new_tokens=2, top_k=5,
                            adapter="agent_0", engine=engine)
    env = pettingzoo.make("aec", "team_envs/countdown-v0")
    env.reset(seed=0)
    group = [env.observe("agent_0")] * 3  # a GRPO group: the same prompt three times
    messages = policy.generate(group, torch.Generator().manual_seed(0))
    assert messages.response_ids == [[5, 6]] * 3
    prompts, params, (name, lora_id, folder) = llm.calls[0]
    seeds = [p["seed"] for p in params]
    assert seeds == [seeds[0], seeds[0] + 1, seeds[0] + 2]  # equal prompts, other draws
    assert {p["top_k"] for p in params} == {5} and {p["max_tokens"] for p in params} == {2}
    assert len({tuple(p["prompt_token_ids"]) for p in prompts}) == 1
    assert (name, lora_id) == ("agent_0", engine.adapter(policy)[0])
    assert Path(folder, "adapter_config.json").is_file()
