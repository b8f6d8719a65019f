"""The embedded world models: the compact view, LoRA training and loading, the shipped
adapters as the registered defaults, and a default's prediction on a held-out call."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the envs
from agentworld_envs.backends.embedded import DOMAIN_ADAPTERS, EMBEDDED_SAMPLING, embedded_backend
from agentworld_envs.bench.sample import load_sample
from agentworld_envs.domains.floor.domain import DOMAIN as FLOOR
from agentworld_envs.domains.mcp.domain import DOMAIN as MCP
from agentworld_envs.models import ADAPTERS, adapter_dir
from agentworld_envs.models.compact_view import compact_messages, tool_signatures
from agentworld_envs.sim.config import SimConfig
from agentworld_envs.world.fidelity import step_fidelity

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


def _floor_chat(task: str, *actions: str) -> list[dict[str, str]]:
    scenario = FLOOR.resolve(task)
    chat = [{"role": "system", "content": FLOOR.system_prompt(scenario, False)}]
    for turn, action in enumerate(actions, start=1):
        if turn > 1:
            chat.append({"role": "assistant", "content": "**Environment Observation:**\n"
                         f'{{"tool_name": "x", "call_id": "{task[:2]}_x_{turn - 1}"}}'})
        chat.append({"role": "user", "content": FLOOR.user_message(
            scenario, turn, action, "json", None, False)})
    return chat


# --- the compact view ---------------------------------------------------------------------

def test_compact_view_shows_the_named_records_whole_and_the_others_by_id() -> None:
    view = compact_messages(_floor_chat("C3/v0", json.dumps(
        {"name": "lookup_record", "arguments": {"record_id": "APP-55"}})))
    world = view[0]["content"]
    assert world.startswith("What this world holds") and "## Tools" not in world
    assert 'APP-55: {"name": "Maya Chen"' in world and "APP-56: {" not in world
    assert "(not shown: APP-56)" in world


def test_compact_view_shows_the_records_a_quoted_search_key_indexes() -> None:
    view = compact_messages(_floor_chat("E4/v0", json.dumps(
        {"name": "search_records", "arguments": {"query": "edge rollout"}})))
    world = view[0]["content"]
    shown = {line.split(":")[0] for line in world.splitlines() if line.startswith("EP-")}
    assert shown == {"EP-1", "EP-3", "EP-6"}


def test_compact_view_keeps_the_last_exchange_as_its_call_id_and_one_line_actions() -> None:
    call = {"name": "lookup_record", "arguments": {"record_id": "APP-56"}}
    view = compact_messages(_floor_chat("C3/v0", "{}", "{}", json.dumps(call, indent=2)))
    assert [m["role"] for m in view] == ["system", "user", "assistant", "user"]
    assert view[2]["content"] == "Last call id: C3_x_2"
    assert view[1]["content"].startswith("### Turn 2")
    assert json.dumps(call) in view[3]["content"]


def test_compact_view_moves_mcp_world_notes_and_lists_tools_as_signatures() -> None:
    scenario = MCP.generate(3)
    chat = [{"role": "system", "content": MCP.system_prompt(scenario, True)},
            {"role": "user", "content": MCP.user_message(scenario, 1, "{}", "json", None, True)}]
    system, user = (m["content"] for m in compact_messages(chat))
    assert "World Notes" in system and "Fictional World" not in system
    assert "get_vehicle(vehicle_id: string*) - Get one vehicle by id." in system
    assert "World Notes" not in user and user.rstrip().endswith("{}\n```")


def test_tool_signatures_mark_required_arguments_and_refuse_non_schemas() -> None:
    tools = [{"name": "f", "description": "Do.", "parameters": {
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]}}]
    assert tool_signatures(tools) == "f(a: string*, b: integer) - Do."
    assert tool_signatures({"not": "a list"}) is None and tool_signatures([3]) is None


# --- fidelity: calls ----------------------------------------------------------------------

def test_calls_measure_the_tool_status_and_error_kind_of_each_result() -> None:
    ok = '{"tool_name": "lookup_record", "status": "ok", "error": null, "result": 1}'
    missing = ('{"tool_name": "lookup_record", "status": "not_found", '
               '"error": {"type": "record_not_found"}}')
    assert step_fidelity(ok.replace("1}", "2}"), ok).calls == 1.0
    assert step_fidelity(missing, ok).calls == 0.0
    assert step_fidelity(ok, f"{ok}\n{missing}").calls == 0.5
    assert step_fidelity("prose", ok).calls == 0.0


# --- defaults -----------------------------------------------------------------------------

@pytest.mark.parametrize("domain", ["floor", "mcp"])
def test_the_domains_with_an_adapter_default_to_the_embedded_model(domain: str) -> None:
    config = SimConfig(domain=domain)
    assert DOMAIN_ADAPTERS.get(domain) == "tools"
    assert config.world_model_backend() == {"name": "embedded", "adapter": "tools"}
    params = config.world_model_params()
    assert (params.temperature, params.max_tokens) == (0.0, EMBEDDED_SAMPLING["max_tokens"])
    assert "backend" not in gym.spec("AgentWorld/Floor-v0").kwargs


@pytest.mark.parametrize("name", ADAPTERS)
def test_the_shipped_adapters_are_small_lora_adapters_with_a_model_card(name: str) -> None:
    folder = adapter_dir(name)
    config = json.loads((folder / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["base_model_name_or_path"] == "smollm2"
    weights = folder / "adapter_model.safetensors"
    assert weights.stat().st_size < 10 * 2**20
    assert "held-out" in (folder / "README.md").read_text().lower()


def test_the_floor_default_predicts_a_well_formed_envelope_on_a_held_out_task() -> None:
    env = gym.make("AgentWorld/Floor-v0", scenarios=["C1/v0"])  # C1 was held out
    env.reset(seed=0)
    call = {"name": "lookup_record", "arguments": {"record_id": "CMP-33"}}
    _, _, _, _, info = env.step(json.dumps(call))
    assert info["world_model"]["adapter"] == "tools" and info["world_model"]["called"]
    assert info["observation_source"] == "world_model"
    envelope = json.loads(env.unwrapped.episode.log.observations[-1].splitlines()[0])
    assert {"tool_name", "call_id", "status", "result", "error"} <= set(envelope)
    assert envelope["tool_name"] == "lookup_record"
    env.close()


@pytest.mark.parametrize("env_id", ["AgentWorld/Floor-v0", "AgentWorld/MCP-v0"])
def test_check_env_passes_on_the_defaults(env_id: str) -> None:
    from gymnasium.utils.env_checker import check_env

    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


# --- LoRA training and loading ------------------------------------------------------------

def test_wm_sft_trains_a_lora_adapter_through_the_view_and_hf_loads_it_merged(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    from agentworld_envs.backends import ChatRequest, SamplingParams, make_backend
    from agentworld_envs.bench.items import write_items
    from agentworld_envs.cli import main

    items = [i for i in load_sample() if i.task == "floor"][:4]
    train = write_items(items, tmp_path / "train.jsonl")
    out = tmp_path / "adapter"
    assert main(["wm", "sft", "--train", str(train), "--model", str(tiny_lm_dir),
                 "--lora-rank", "4", "--lora-layers", "1", "--view", "compact", "--threads",
                 "1", "--output_dir", str(out), "--max_steps", "2",
                 "--per_device_train_batch_size", "2", "--max_length", "256",
                 "--logging_steps", "1"]) == 0
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["r"] == 4 and config["layers_to_transform"] == [1]
    assert not (out / "model.safetensors").exists()  # the adapter only, not the base
    backend = make_backend({"name": "hf", "model": str(tiny_lm_dir), "adapter": str(out),
                            "view": "compact"})
    assert backend.describe()["adapter"] == str(out)
    assert not any("lora" in name for name, _ in backend._model.named_parameters())
    reply = backend.complete([ChatRequest(items[0].messages(),
                                          sampling=SamplingParams(max_tokens=4))])
    assert isinstance(reply[0].text, str)


def test_embedded_backend_names_the_base_adapter_view_and_draft_corpus() -> None:
    assert embedded_backend("tools") == {
        "name": "hf", "model": "smollm2", "adapter": str(adapter_dir("tools")),
        "view": "compact", "draft_corpus": str(adapter_dir("tools") / "draft_corpus.jsonl"),
        "device": "cpu", "batch_size": 16, "greedy_memo": 4096, "prefix_cache": 16_384}
    assert embedded_backend()["draft_corpus"] is None
    with pytest.raises(ValueError, match="no shipped adapter"):
        embedded_backend("floor")


def test_the_shipped_draft_corpus_holds_training_answers_only() -> None:
    from agentworld_envs.backends.drafting import read_corpus

    answers = read_corpus(adapter_dir("tools") / "draft_corpus.jsonl")
    assert len(answers) > 1000 and len(set(answers)) == len(answers)
    assert all(a.startswith("<predicted_observation>\n") for a in answers)
    floor_tasks = {m.group(1) for a in answers
                   for m in re.finditer(r'"call_id": "([A-E]\d)_', a)}
    assert floor_tasks and not floor_tasks & {"A5", "C1", "C2", "D5", "E5"}  # held out


def test_identical_greedy_requests_are_generated_once(tiny_lm_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld_envs.backends import ChatRequest, SamplingParams
    from agentworld_envs.backends.hf import HFBackend

    backend = HFBackend(str(tiny_lm_dir), batch_size=8)
    sizes: list[int] = []
    generate = backend._generate
    monkeypatch.setattr(backend, "_generate", lambda batch, *rest: sizes.append(len(batch))
                        or generate(batch, *rest))
    chat = [{"role": "user", "content": "lookup P1"}]
    greedy = [SamplingParams(max_tokens=3, seed=s) for s in (1, 2)]
    requests = [ChatRequest(chat, sampling=greedy[0]), ChatRequest(chat, sampling=greedy[1]),
                ChatRequest([{"role": "user", "content": "lookup P2"}], sampling=greedy[0]),
                ChatRequest(chat, sampling=SamplingParams(max_tokens=3, temperature=1.0,
                                                          seed=3))]
    replies = backend.complete(requests)
    assert sizes == [2, 1]  # the repeat is not generated; the sampled request is
    assert replies[0] == replies[1] and replies[0] is not replies[1]
