"""``wm rl`` takes ``wm sft``'s ``--view``; both train what ``check_model`` admits: a base by its
name and a LoRA adapter's folder (its adapter, trainable)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentworld_envs.backends import Backend, ChatRequest, Completion, register_backend
from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample
from agentworld_envs.cli import main
from agentworld_envs.models import pretrained
from agentworld_envs.models.compact_view import VIEWS

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")

TINY_BASE = "wm4_tiny_base"


class SplitJudge(Backend):
    """A judge scoring requests 1, 5, 1, 5, ... on every dimension, so each group's samples
    differ and GRPO has something to learn."""

    def __init__(self) -> None:
        self.count = 0

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        verdicts = []
        for _ in requests:
            score = (1, 5)[self.count % 2]
            self.count += 1
            scores = dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"),
                                   score)
            verdicts.append(Completion(text="<final_evaluation>"
                                       f"{json.dumps({'scores': scores})}</final_evaluation>"))
        return verdicts


register_backend("wm4_split_judge", SplitJudge)


@pytest.fixture(scope="module")
def items() -> list:
    return [i for i in load_sample() if i.task == "floor"][:4]


@pytest.fixture(scope="module")
def train_file(items: list, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_items(items, tmp_path_factory.mktemp("wm4") / "train.jsonl")


@pytest.fixture(scope="module")
def adapter(tiny_lm_dir: Path, train_file: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> Path:
    """What ``wm sft --lora-rank`` saves: the adapter, its config and the tokenizer."""
    out = tmp_path_factory.mktemp("wm4_adapter") / "adapter"
    assert main(["wm", "sft", "--train", str(train_file), "--model", str(tiny_lm_dir),
                 "--lora-rank", "4", "--threads", "1", "--max_steps", "1", "--warmup_steps", "0",
                 "--max_length", "256", "--output_dir", str(out)]) == 0
    return out


@pytest.fixture
def tiny_base(tiny_lm_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The tiny model as a base known by name (as ``smollm2`` is)."""
    real = pretrained.base_model_dir
    monkeypatch.setitem(pretrained.BASES, TINY_BASE, pretrained.BASES["smollm2"])
    monkeypatch.setattr(pretrained, "base_model_dir",
                        lambda name="smollm2": tiny_lm_dir if name == TINY_BASE else real(name))
    return TINY_BASE


def adapter_weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(folder / "adapter_model.safetensors")


def test_wm_rl_refuses_an_unknown_view_in_one_line_as_wm_sft_does(
        tiny_lm_dir: Path, train_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("sft", "rl"):
        out = tmp_path / command
        assert main(["wm", command, "--train", str(train_file), "--model", str(tiny_lm_dir),
                     "--view", "bogus", "--output_dir", str(out)]) == 2
        assert capsys.readouterr().err == ("agentworld: error: view: unknown view 'bogus' "
                                           "(known: compact; empty shows the chat whole)\n")
        assert not out.exists()


def test_wm_rl_prompts_go_through_the_view(tiny_lm_dir: Path, items: list) -> None:
    from transformers import AutoTokenizer

    from trainers.world_model.rl import rl_dataset

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    viewed = rl_dataset(tokenizer, items, 10**6, "compact")["prompt"]
    assert viewed == [tokenizer.apply_chat_template(VIEWS["compact"](i.messages()),
                                                    add_generation_prompt=True, tokenize=False)
                      for i in items]
    assert all(len(v) < len(w) for v, w in
               zip(viewed, rl_dataset(tokenizer, items, 10**6)["prompt"], strict=True))


def test_a_base_loads_by_its_name_to_train(tiny_base: str) -> None:
    from trainers.world_model.sft import load_model

    model, tokenizer = load_model(tiny_base)
    assert model.config.num_hidden_layers == 2 and tokenizer.chat_template


def test_an_adapter_saved_with_its_base_by_name_and_no_tokenizer_loads_trainable(
        adapter: Path, tiny_base: str, tmp_path: Path) -> None:
    from trainers.world_model.sft import load_model

    shipped = tmp_path / "shipped"  # as agentworld_envs/models/adapters/tools is saved
    shipped.mkdir()
    config = json.loads((adapter / "adapter_config.json").read_text())
    (shipped / "adapter_config.json").write_text(json.dumps(
        {**config, "base_model_name_or_path": tiny_base}))
    (shipped / "adapter_model.safetensors").write_bytes(
        (adapter / "adapter_model.safetensors").read_bytes())
    model, tokenizer = load_model(str(shipped))
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in name for name in trainable)
    assert tokenizer.chat_template


def test_wm_rl_trains_the_adapter_wm_sft_saved(adapter: Path, train_file: Path,
                                               tmp_path: Path) -> None:
    out = tmp_path / "rl"
    assert main(["wm", "rl", "--train", str(train_file), "--model", str(adapter),
                 "--judge", "wm4_split_judge", "--judge-weight", "1", "--threads", "1",
                 "--max-prompt-length", "128", "--output_dir", str(out), "--max_steps", "1",
                 "--per_device_train_batch_size", "4", "--num_generations", "2",
                 "--num_iterations", "1", "--max_completion_length", "8",
                 "--learning_rate", "1e-2"]) == 0
    before, after = adapter_weights(adapter), adapter_weights(out)
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_wm_sft_trains_an_adapter_further_and_refuses_a_second_one(
        adapter: Path, train_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    common = ["wm", "sft", "--train", str(train_file), "--model", str(adapter), "--threads", "1",
              "--max_steps", "1", "--warmup_steps", "0", "--max_length", "256"]
    assert main([*common, "--lora-rank", "4", "--output_dir", str(tmp_path / "second")]) == 2
    assert capsys.readouterr().err == (f"agentworld: error: lora_rank: {adapter} is a LoRA "
                                       "adapter: leave --lora-rank out to train that adapter "
                                       "further\n")
    assert main([*common, "--output_dir", str(tmp_path / "further")]) == 0
    before, after = adapter_weights(adapter), adapter_weights(tmp_path / "further")
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[k], after[k]) for k in before)
