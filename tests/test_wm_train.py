"""World-model training: SFT on a tiny model, the hybrid reward, the GSPO/GRPO loss, RL."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample
from trainers.world_model.args import add_dataclass_args, dataclass_from_args
from trainers.world_model.examples import target_text
from trainers.world_model.rewards import UNCLOSED_CAP, hybrid_reward, rule_checks
from trainers.world_model.scratch import chat_template

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

TRUTH = '{"tool_name": "lookup_record", "status": "ok", "result": {"id": "P1", "n": 3}}'


def tagged(text: str) -> str:
    return f"<predicted_observation>\n{text}\n</predicted_observation>"


@pytest.fixture(scope="module")
def train_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    floor = [i for i in load_sample() if i.task == "floor"][:4]
    return write_items(floor, tmp_path_factory.mktemp("wm") / "train.jsonl")


# --- reward ------------------------------------------------------------------------------

def test_rule_checks_of_a_perfect_output() -> None:
    checks = rule_checks(tagged(TRUTH), TRUTH)
    assert checks == {"format": 1.0, "closure": 1.0, "no_hedging": 1.0, "json": 1.0,
                      "facts": 1.0}
    assert hybrid_reward(tagged(TRUTH), TRUTH)[0] == 1.0


def test_rule_checks_catch_each_fault() -> None:
    wrong_value = TRUTH.replace('"n": 3', '"n": 4')
    checks = rule_checks(tagged(wrong_value), TRUTH)
    assert checks["json"] == 1.0 and checks["facts"] == pytest.approx(3 / 4)
    assert rule_checks(tagged("{broken"), TRUTH)["json"] == 0.0
    assert rule_checks(tagged("it might fail or could pass"), None)["no_hedging"] == 0.0
    two_blocks = tagged(TRUTH) + tagged(TRUTH)
    assert rule_checks(two_blocks, TRUTH)["format"] == 0.0
    no_truth = rule_checks(tagged(TRUTH), None)
    assert math.isnan(no_truth["json"]) and math.isnan(no_truth["facts"])
    assert rule_checks(tagged("screen"), "screen")["facts"] == 1.0
    assert math.isnan(rule_checks(tagged("screen"), "other")["json"])


def test_unclosed_output_is_capped_whatever_the_judge_says() -> None:
    reward, parts = hybrid_reward("<predicted_observation>\n" + TRUTH, TRUTH, judge_total=5.0,
                                  judge_weight=0.5)
    assert parts["closure"] == 0.0 and parts["judge"] == 1.0 and reward == UNCLOSED_CAP == 0.25


def test_rubric_and_rule_are_mixed_by_weight() -> None:
    reward, parts = hybrid_reward(tagged(TRUTH), TRUTH, judge_total=3.0, judge_weight=0.3)
    assert parts["rule"] == 1.0 and parts["judge"] == 0.5
    assert reward == pytest.approx(0.7 * 1.0 + 0.3 * 0.5)
    assert hybrid_reward(tagged(TRUTH), TRUTH, judge_total=float("nan"), judge_weight=0.3)[0] \
        == 1.0


# --- loss --------------------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ["gspo", "grpo"])
def test_surrogate_loss_is_clipped_and_pushes_towards_advantage(algorithm: str) -> None:
    from trainers.world_model.rl import surrogate_loss

    old = torch.zeros(2, 3)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    advantages = torch.tensor([1.0, -1.0])
    assert surrogate_loss(torch, old, old, mask, advantages, algorithm, 0.2).item() == \
        pytest.approx(0.0)
    far = surrogate_loss(torch, old + 5.0, old, mask, advantages, algorithm, 0.2)
    assert far.item() == pytest.approx((math.e ** 5 - 1.2) / 2, rel=1e-4)  # clipped for A > 0
    new = old.clone().requires_grad_(True)
    surrogate_loss(torch, new, old, mask, advantages, algorithm, 0.2).backward()
    assert (new.grad[0, :2] < 0).all() and (new.grad[1] > 0).all() and new.grad[0, 2] == 0
    with pytest.raises(ValueError, match="unknown algorithm"):
        surrogate_loss(torch, old, old, mask, advantages, "ppo", 0.2)


# --- SFT ---------------------------------------------------------------------------------

def test_sft_loss_decreases_on_the_tiny_model(tiny_lm_dir: Path, train_file: Path,
                                              tmp_path: Path) -> None:
    from trainers.world_model.sft import SFTArgs, train_sft

    args = SFTArgs(train=str(train_file), out=str(tmp_path / "sft"), model=str(tiny_lm_dir),
                   steps=12, batch_size=4, lr=1e-2, warmup=2, max_length=384, log_every=1,
                   threads=1)
    result = train_sft(args)
    losses = [loss for _, loss in result.losses]
    assert len(losses) == 12 and all(math.isfinite(x) for x in losses)
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3
    saved = json.loads((tmp_path / "sft" / "training_args.json").read_text())
    assert saved["steps_done"] == 12 and saved["sft"]["model"] == str(tiny_lm_dir)
    assert (tmp_path / "sft" / "config.json").exists()


def test_sft_from_scratch_builds_a_sectioned_chat(train_file: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from trainers.world_model.sft import SFTArgs, encode, train_sft

    args = SFTArgs(train=str(train_file), out=str(tmp_path / "scratch"), steps=2,
                   batch_size=2, vocab_size=400, hidden_size=32, layers=1, heads=2,
                   intermediate_size=64, max_length=512, threads=1, seed=3)
    train_sft(args)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "scratch")
    item = load_sample()[0]
    prompt = tokenizer.apply_chat_template(item.messages(), add_generation_prompt=True,
                                           tokenize=False)
    assert prompt.startswith("<|im_start|>system\nWhat this world holds")
    assert "## Output" not in prompt and "You simulate" not in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    prompt_ids, target_ids = encode(tokenizer, item, False, 512)
    assert tokenizer.decode(target_ids) == target_text(item, False) + "<|im_end|>"
    assert len(prompt_ids) + len(target_ids) <= 512


def test_chat_template_without_the_marker_shows_the_whole_system_prompt() -> None:
    from jinja2 import Template

    rendered = Template(chat_template("Start here", "End")).render(
        messages=[{"role": "system", "content": "plain prompt"}], add_generation_prompt=False)
    assert rendered == "<|im_start|>system\nplain prompt<|im_end|>\n"
    with pytest.raises(ValueError):
        chat_template("bad'marker")


# --- RL ----------------------------------------------------------------------------------

def test_rl_step_runs_and_updates_the_model(tiny_lm_dir: Path, train_file: Path,
                                            tmp_path: Path, monkeypatch) -> None:
    from transformers import AutoModelForCausalLM

    from trainers.world_model import rl
    from trainers.world_model.rl import RLArgs, train_rl

    rewards = iter([0.0, 1.0, 0.5] * 2)  # a random model's outputs would all score the same
    monkeypatch.setattr(rl, "hybrid_reward",
                        lambda text, truth, total, weight: (next(rewards), {"rule": 0.0}))

    args = RLArgs(train=str(train_file), model=str(tiny_lm_dir), out=str(tmp_path / "rl"),
                  steps=1, prompts_per_step=2, group_size=3, epochs=1, max_new_tokens=8,
                  max_length=256, lr=1e-2, threads=1)
    history = train_rl(args).history
    assert len(history) == 1 and history[0]["reward"] == pytest.approx(0.5)
    assert history[0]["rule"] == 0.0 and "facts" not in history[0]
    before = AutoModelForCausalLM.from_pretrained(tiny_lm_dir).state_dict()
    after = AutoModelForCausalLM.from_pretrained(tmp_path / "rl").state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert json.loads((tmp_path / "rl" / "rl_args.json").read_text())["rl"]["steps"] == 1


def test_dataclass_flags_round_trip() -> None:
    from trainers.world_model.rl import RLArgs

    parser = argparse.ArgumentParser()
    add_dataclass_args(parser, RLArgs)
    args = parser.parse_args(["--train", "t", "--model", "m", "--out", "o", "--steps", "3",
                              "--algorithm", "grpo"])
    built = dataclass_from_args(RLArgs, args)
    assert (built.steps, built.algorithm, built.clip, built.judge) == (3, "grpo", 0.2, "")
    with pytest.raises(SystemExit):
        parser.parse_args(["--model", "m", "--out", "o"])


def test_hf_backend_serves_as_world_model_and_judge(tiny_lm_dir: Path) -> None:
    from agentworld_envs.backends import SamplingParams, make_backend
    from agentworld_envs.bench.run import predict, run_bench, score_fidelity

    items = [i for i in load_sample() if i.task == "floor"][:3]
    with make_backend({"name": "hf", "model": str(tiny_lm_dir)}) as backend:
        outputs = predict(backend, items, SamplingParams(max_tokens=8, seed=0))
        judged = run_bench(items, outputs, backend, SamplingParams(max_tokens=8), retries=1)
    assert all(isinstance(o, str) for o in outputs)
    assert score_fidelity(items, outputs).report.weighted["structural"] == 0.0
    # A random model never writes a verdict: every sample fails after its retry, none scored.
    assert judged.report.failed == {"floor": 3} and judged.report.counts == {"floor": 0}
    assert math.isnan(judged.report.macro["total"]) and "| floor | 0 | 3 | n/a" in \
        judged.report.markdown()
    assert all(r["error"] for r in judged.records)


def test_all_turns_labels_every_observation_once_per_trajectory(tiny_lm_dir: Path) -> None:
    from transformers import AutoTokenizer

    from trainers.world_model.sft import SFTArgs, final_turns, sft_example

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    items = [i for i in load_sample() if i.source.get("kind") == "corpus"]
    finals = final_turns(items)
    assert len({(i.source["run_id"]) for i in items}) == len(finals)
    last = max(finals, key=lambda i: i.turn_idx)
    ids, labels = sft_example(tokenizer, last,
                              SFTArgs(train="", out="", all_turns=True, max_length=10**6))
    learned = tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label >= 0])
    for _, observation in last.history():
        assert observation.split("\n", 1)[1].strip() in learned
    assert "**Environment Observation:**" not in learned
    assert learned.endswith(target_text(last, False) + "<|im_end|>")
    assert "### Turn" not in learned and last.system_str[:40] not in learned
    only = SFTArgs(train="", out="", all_turns=False, max_length=10**6)
    ids, labels = sft_example(tokenizer, last, only)
    assert tokenizer.decode([t for t, lab in zip(ids, labels, strict=True) if lab >= 0]) == \
        target_text(last, False) + "<|im_end|>"


def test_shipped_floor_model_answers_in_the_envelope_format() -> None:
    from agentworld_envs.backends import SamplingParams
    from agentworld_envs.bench.diagnostics import diagnose
    from agentworld_envs.bench.run import predict, score_fidelity
    from agentworld_envs.models import FLOOR_WORLD_MODEL_SAMPLING, floor_world_model

    items = [i for i in load_sample() if i.task == "floor"][:4]
    with floor_world_model() as backend:
        outputs = predict(backend, items, SamplingParams(**FLOOR_WORLD_MODEL_SAMPLING, seed=0))
    assert all(diagnose(o).tags_closed for o in outputs)
    assert score_fidelity(items, outputs).report.weighted["structural"] > 0.0
