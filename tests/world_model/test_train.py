"""World-model training on TRL: the hybrid reward as reward functions, ``agentworld wm sft`` and
``agentworld wm rl`` on a tiny model, the GSPO/GRPO configurations, checkpoints."""

from __future__ import annotations

import argparse
import ast
import functools
import itertools
import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentworld_envs.backends import Backend, ChatRequest, Completion, register_backend
from agentworld_envs.backends.faults import FaultTally, TooManyFaultsError
from agentworld_envs.bench.items import write_items
from agentworld_envs.bench.sample import load_sample
from agentworld_envs.cli import main
from trainers.common.flags import add_dataclass_args, dataclass_from_args
from trainers.world_model.examples import target_text
from trainers.world_model.rewards import (
    UNCLOSED_CAP,
    capped_rule_score,
    make_judge_reward,
    rule_checks,
    rule_reward,
)
from trainers.world_model.scratch import chat_template

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

TRUTH = '{"tool_name": "lookup_record", "status": "ok", "result": {"id": "P1", "n": 3}}'
ROOT = Path(__file__).resolve().parents[2]


def tagged(text: str) -> str:
    return f"<predicted_observation>\n{text}\n</predicted_observation>"


def verdict(score: int) -> str:
    scores = dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), score)
    return f"<final_evaluation>{json.dumps({'scores': scores})}</final_evaluation>"


class CyclingJudge(Backend):
    """A judge whose verdicts give every dimension ``scores[k % len(scores)]`` for request k;
    it counts the requests it gets, and (in ``built`` and ``closed``) its instances."""

    name = "cycling_judge"
    built = closed = 0

    def __init__(self, scores: Sequence[int] = (5,)) -> None:
        self.scores = itertools.cycle(scores)
        self.requests = 0
        CyclingJudge.built += 1

    def complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.requests += len(requests)
        return [Completion(text=verdict(next(self.scores))) for _ in requests]

    def close(self) -> None:
        CyclingJudge.closed += 1


register_backend("wm_test_split_judge", functools.partial(CyclingJudge, (1, 2)))


@pytest.fixture(scope="module")
def train_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    floor = [i for i in load_sample() if i.task == "floor"][:4]
    return write_items(floor, tmp_path_factory.mktemp("wm") / "train.jsonl")


def tensorboard_scalars(out: Path) -> dict[str, list[float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (run,) = (out / "runs").iterdir()
    events = EventAccumulator(str(run))
    events.Reload()
    return {tag: [e.value for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def generate_with_hf_backend(model_dir: Path) -> list[str | None]:
    from agentworld_envs.backends import SamplingParams, make_backend
    from agentworld_envs.bench.run import predict

    items = [i for i in load_sample() if i.task == "floor"][:2]
    with make_backend({"name": "hf", "model": str(model_dir)}) as backend:
        return predict(backend, items, SamplingParams(max_tokens=4, seed=0))


# --- reward ------------------------------------------------------------------------------

def test_rule_checks_of_a_perfect_output() -> None:
    checks = rule_checks(tagged(TRUTH), TRUTH)
    assert checks == {"format": 1.0, "closure": 1.0, "no_hedging": 1.0, "json": 1.0,
                      "facts": 1.0}
    assert capped_rule_score(tagged(TRUTH), TRUTH)[0] == 1.0


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
    unclosed = "<predicted_observation>\n" + TRUTH
    score, checks = capped_rule_score(unclosed, TRUTH)
    assert checks["closure"] == 0.0 and checks["facts"] == 1.0 and score == UNCLOSED_CAP == 0.25
    items = [i for i in load_sample() if i.task == "floor"][:1]
    judged = make_judge_reward(CyclingJudge(), items)(
        completions=[unclosed], item_index=[0], ground_truth=[TRUTH])
    assert judged == [UNCLOSED_CAP]  # a perfect verdict, capped by the bench's rule


def test_rule_reward_is_a_trl_reward_function_that_logs_each_check() -> None:
    logged: dict[str, float] = {}
    rewards = rule_reward(completions=[tagged(TRUTH), tagged("{broken")],
                          ground_truth=[TRUTH, TRUTH], log_metric=logged.__setitem__,
                          trainer_state=None)
    assert rewards[0] == 1.0 and 0.0 < rewards[1] < 1.0
    assert logged["rule/facts"] == 0.5 and logged["rule/json"] == 0.5
    assert logged["rule/format"] == 1.0


def test_judge_reward_scores_verdicts_and_falls_back_to_the_rule_score() -> None:
    items = [i for i in load_sample() if i.task == "floor"][:2]
    outputs = [tagged(TRUTH), tagged(TRUTH.replace('"n": 3', '"n": 4'))]
    for scores, expected, failed in (
            ([3], [0.5, 0.5], 0.0),
            ([0], [capped_rule_score(o, TRUTH)[0] for o in outputs], 1.0)):  # no verdict
        logged: dict[str, float] = {}
        judge = make_judge_reward(CyclingJudge(scores), items)
        assert judge(completions=outputs, item_index=[0, 1], ground_truth=[TRUTH, TRUTH],
                     log_metric=logged.__setitem__) == pytest.approx(expected)
        assert logged["judge/failed"] == failed
    assert expected[1] < 1.0


def test_judge_reward_counts_samples_without_a_verdict_against_the_fault_budget() -> None:
    items = [i for i in load_sample() if i.task == "floor"][:2]
    outputs = [tagged(TRUTH)] * 2
    tally = FaultTally(max_faults=2, what="judge verdicts")
    judge = make_judge_reward(CyclingJudge([0]), items, tally)
    judge(completions=outputs, item_index=[0, 1], ground_truth=[TRUTH, TRUTH])
    assert (tally.calls, tally.failed) == (2, 2)  # within the budget: scored by the rule
    with pytest.raises(TooManyFaultsError, match="4 of 4 judge verdicts failed"):
        judge(completions=outputs, item_index=[0, 1], ground_truth=[TRUTH, TRUTH])
    verdicts = FaultTally(max_faults=0, what="judge verdicts")
    make_judge_reward(CyclingJudge([3]), items, verdicts)(
        completions=outputs, item_index=[0, 1], ground_truth=[TRUTH, TRUTH])
    verdicts.check()  # every sample judged: nothing to report


def test_empty_completions_score_by_rule_unjudged_and_are_no_judge_fault() -> None:
    items = [i for i in load_sample() if i.task == "floor"][:2]
    judge, tally, logged = CyclingJudge([4]), FaultTally(0, "judge verdicts"), {}
    reward = make_judge_reward(judge, items, tally)
    empty = capped_rule_score("", TRUTH)[0]
    for _ in range(5):  # a policy that ends at once, step after step
        assert reward(completions=["", ""], item_index=[0, 1], ground_truth=[TRUTH, TRUTH],
                      log_metric=logged.__setitem__) == [empty, empty]
    assert reward(completions=["", tagged(TRUTH)], item_index=[0, 1],
                  ground_truth=[TRUTH, TRUTH], log_metric=logged.__setitem__) == \
        pytest.approx([empty, 0.75])
    assert judge.requests == 1 and (tally.calls, tally.failed) == (1, 0)
    assert logged["judge/empty"] == 0.5 and logged["judge/failed"] == 0.0


# --- the commands ------------------------------------------------------------------------

def test_wm_group_lists_bench_and_training_commands_and_bench_never_imports_trainers(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["wm", "--help"])
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == ["bench", "fidelity", "export", "sft", "rl"]
    for path in (ROOT / "agentworld_envs" / "bench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "trainers" for n in names), path


# --- SFT ---------------------------------------------------------------------------------

def test_wm_sft_loss_falls_logs_to_tensorboard_and_checkpoints(tiny_lm_dir: Path,
                                                               train_file: Path,
                                                               tmp_path: Path) -> None:
    out = tmp_path / "sft"
    assert main(["wm", "sft", "--train", str(train_file), "--model", str(tiny_lm_dir),
                 "--threads", "1", "--output_dir", str(out), "--max_steps", "12",
                 "--per_device_train_batch_size", "4", "--learning-rate", "1e-2",
                 "--warmup_steps", "2", "--max_length", "384", "--logging_steps", "1",
                 "--save_strategy", "steps", "--save_steps", "6"]) == 0
    saved = json.loads((out / "training_args.json").read_text())
    losses = [loss for _, loss in saved["losses"]]
    assert saved["steps_done"] == 12 and len(losses) == 12
    assert all(math.isfinite(x) for x in losses)
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3
    assert tensorboard_scalars(out)["train/loss"] == pytest.approx(losses, rel=1e-5)
    assert {p.name for p in out.glob("checkpoint-*")} == {"checkpoint-6", "checkpoint-12"}
    assert all(isinstance(o, str) for o in generate_with_hf_backend(out / "checkpoint-6"))


def test_sft_loss_is_taken_on_the_target_tokens_only(tiny_lm_dir: Path, tmp_path: Path) -> None:
    from trl import SFTTrainer

    from trainers.world_model.sft import SFTArgs, encode, load_model, sft_config, sft_dataset

    items = [i for i in load_sample() if i.task == "floor"][:3]
    args = SFTArgs(train="", model=str(tiny_lm_dir))
    model, tokenizer = load_model(args.model)
    config = sft_config(output_dir=str(tmp_path / "o"), max_length=300)
    trainer = SFTTrainer(model=model, args=config, processing_class=tokenizer,
                         train_dataset=sft_dataset(tokenizer, items, args, config.max_length))
    rows = trainer.train_dataset
    assert len(rows) == 3 and max(len(ids) for ids in rows["input_ids"]) == 300  # one was cut
    for item, ids, labels in zip(items, rows["input_ids"], rows["labels"], strict=True):
        learned = [t for t, label in zip(ids, labels, strict=True) if label != -100]
        prompt, target = encode(tokenizer, item, False, 300)
        assert learned == target and ids == prompt + target  # the prompt's end is kept
        assert tokenizer.decode(learned).startswith("<predicted_observation>\n")
    full = encode(tokenizer, items[0], False, 10**6)[1]
    assert tokenizer.decode(full) == target_text(items[0], False) + "<|im_end|>"


def test_budget_schedules_the_learning_rate_and_stops_when_time_runs_out() -> None:
    from trainers.world_model.budget import TrainingBudget

    budget = TrainingBudget(steps=10, minutes=0.0, warmup=2)
    assert [budget.lr_factor(s) for s in (0, 1)] == [0.5, 1.0]
    assert budget.lr_factor(10) == pytest.approx(0.1) and budget.lr_factor(6) > 0.1
    control = SimpleNamespace(should_training_stop=False)
    budget.on_step_end(None, SimpleNamespace(global_step=9), control)
    assert not control.should_training_stop
    budget.on_step_end(None, SimpleNamespace(global_step=10), control)
    assert control.should_training_stop
    timed = TrainingBudget(steps=10**6, minutes=1e-9, warmup=0)
    timed.on_train_begin(None, None, None)
    assert timed.progress(1) >= 1.0 and timed.lr_factor(1) == pytest.approx(0.1)


def test_sft_from_scratch_builds_a_sectioned_chat(train_file: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from trainers.world_model.sft import encode

    assert main(["wm", "sft", "--train", str(train_file), "--vocab-size", "400",
                 "--hidden-size", "32", "--layers", "1", "--heads", "2", "--intermediate-size",
                 "64", "--threads", "1", "--output_dir", str(tmp_path / "scratch"),
                 "--max_steps", "2", "--per_device_train_batch_size", "2", "--max_length", "512",
                 "--seed", "3"]) == 0
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

def test_grpo_config_starts_as_gspo_and_takes_trl_flags() -> None:
    from trl import GRPOConfig

    from trainers.common.flags import parse_config
    from trainers.world_model.rl import GRPO_DEFAULTS, RLArgs, grpo_config

    config = grpo_config()
    assert (config.importance_sampling_level, config.loss_type) == ("sequence", "grpo")
    assert config.scale_rewards == "group" and config.beta == 0.0 and not config.bf16
    assert (config.num_generations, config.per_device_train_batch_size) == (4, 16)
    assert config.report_to == ["tensorboard"] and config.reward_weights is None
    grpo = parse_config(GRPOConfig, ["--importance_sampling_level", "token", "--epsilon", "0.1",
                                     "--num-generations", "3", "--per_device_train_batch_size",
                                     "12"], {**GRPO_DEFAULTS, "bf16": False})
    assert (grpo.importance_sampling_level, grpo.epsilon, grpo.num_generations) == (
        "token", 0.1, 3)
    assert (grpo.per_device_train_batch_size, grpo.num_iterations, grpo.max_steps) == (12, 2, 20)
    assert RLArgs(train="t", model="m", judge='{"name": "x"}',
                  judge_weight=0.4).reward_weights() == pytest.approx([0.6, 0.4])
    assert RLArgs(train="t", model="m", judge="x").reward_weights() == pytest.approx([0.7, 0.3])
    assert RLArgs(train="t", model="m").reward_weights() == [1.0]


def test_wm_rl_rewards_with_rule_and_judge_logs_them_and_checkpoints(
        tiny_lm_dir: Path, train_file: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import AutoModelForCausalLM

    out = tmp_path / "rl"
    monkeypatch.setattr(CyclingJudge, "built", 0)
    monkeypatch.setattr(CyclingJudge, "closed", 0)
    assert main(["wm", "rl", "--train", str(train_file), "--model", str(tiny_lm_dir),
                 "--max-prompt-length", "256", "--judge", "wm_test_split_judge",  # a bare name
                 "--judge-weight", "0.5",
                 "--threads", "1", "--output_dir", str(out), "--importance_sampling_level",
                 "token", "--max_steps", "2", "--per_device_train_batch_size", "4",
                 "--num_generations", "2", "--num_iterations", "1",
                 "--max_completion_length", "8", "--learning_rate", "1e-2",
                 "--save_strategy", "steps", "--save_steps", "1"]) == 0
    history = json.loads((out / "rl_args.json").read_text())["history"]
    assert len(history) == 2
    assert (CyclingJudge.built, CyclingJudge.closed) == (1, 1)  # one judge for every step
    for step in history:
        rule, judged = step["rewards/rule_reward/mean"], step["rewards/judge_reward/mean"]
        assert step["reward"] == pytest.approx(0.5 * rule + 0.5 * judged)
        assert 0.0 <= rule <= 1.0 and step["judge/failed"] == 0.0 and "rule/format" in step
        assert step["frac_reward_zero_std"] < 1.0  # the judge split every group
    scalars = tensorboard_scalars(out)
    assert scalars["train/reward"] == pytest.approx([s["reward"] for s in history])
    assert "train/rule/facts" in scalars
    before = AutoModelForCausalLM.from_pretrained(tiny_lm_dir).state_dict()
    after = AutoModelForCausalLM.from_pretrained(out).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert all(isinstance(o, str) for o in generate_with_hf_backend(out / "checkpoint-1"))


EMPTY, SPLIT = "EMPTY", "SPLIT"  # stand-ins for an empty items file and an exported folder
REFUSED = {  # argv (after --train and --model); what the one error line says
    "rl: judge config": (["rl", "--judge", '{"name": "scripted", "bogus": 1}'],
                         "backend 'scripted': unknown key 'bogus'"),
    "rl: judge weight over 1": (["rl", "--judge", "scripted", "--judge-weight", "1.5"],
                                "judge_weight: must be in [0, 1], not 1.5"),
    "rl: judge weight, no judge": (["rl", "--judge-weight", "0.5"],
                                   "judge_weight: weighs the judge's reward: give --judge"),
    "rl: prompt length": (["rl", "--max-prompt-length", "0"], "max_prompt_length: must be at"),
    "rl: no checkpoint": (["rl", "--resume_from_checkpoint", "last"],
                          "resume_from_checkpoint: last: "),
    "rl: empty data": (["rl", "--train", EMPTY], "holds no items to train on"),
    "rl: validation split": (["rl", "--train", SPLIT], "holds val.jsonl, a validation split"),
    "sft: empty data": (["sft", "--train", EMPTY], "holds no items to train on"),
    "sft: validation split": (["sft", "--train", SPLIT], "--train SPLIT/train.jsonl"),
    "sft: not a checkpoint": (["sft", "--resume_from_checkpoint", "SPLIT"],
                              "SPLIT is not a checkpoint folder"),
    "sft: every pair too long": (["sft", "--drop-overlong", "--max_length", "64"],
                                 "drop_overlong: all 4 sequences are longer than max_length 64"),
    "sft: all turns, too": (["sft", "--drop-overlong", "--all-turns", "--max_length", "64"],
                            "drop_overlong: all 4 sequences"),
    "sft: all turns in a view": (["sft", "--all-turns", "--view", "compact"],
                                 "all_turns: learns the whole chat"),
    "sft: time budget": (["sft", "--max-minutes", "-1"], "max_minutes: must be at least 0"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_bad_training_input_is_one_line_before_any_model_loads(
        case: str, tiny_lm_dir: Path, train_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers

    def no_model(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_model)
    split = tmp_path / "SPLIT"
    split.mkdir()
    for name in ("train.jsonl", "val.jsonl"):
        shutil.copy(train_file, split / name)
    (tmp_path / "EMPTY").write_text("")
    (command, *flags), message = REFUSED[case]
    if "--train" not in flags:
        flags += ["--train", str(train_file)]
    flags = [str(tmp_path / f) if f in (EMPTY, SPLIT) else f for f in flags]
    out = tmp_path / "out"
    assert main(["wm", command, "--model", str(tiny_lm_dir), *flags, "--output_dir", str(out),
                 "--threads", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.replace("SPLIT", str(split)) in err, err
    assert not out.exists()


def test_drop_overlong_drops_whole_trajectories_with_all_turns(tiny_lm_dir: Path) -> None:
    from transformers import AutoTokenizer

    from trainers.world_model.sft import SFTArgs, final_turns, sft_dataset, sft_example

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    items = [i for i in load_sample() if i.source.get("kind") == "corpus"]
    args = SFTArgs(train="", all_turns=True, drop_overlong=True)
    lengths = sorted(len(sft_example(tokenizer, i, args, 10**9)[0]) for i in final_turns(items))
    limit = lengths[len(lengths) // 2]
    rows = sft_dataset(tokenizer, items, args, limit)
    assert len(rows) == sum(n <= limit for n in lengths) < len(lengths)
    assert sorted(len(ids) for ids in rows["input_ids"]) == [n for n in lengths if n <= limit]


def test_our_flags_round_trip_beside_trl_flags() -> None:
    from trainers.world_model.rl import RLArgs

    parser = argparse.ArgumentParser()
    add_dataclass_args(parser, RLArgs)
    args, rest = parser.parse_known_args(["--train", "t", "--model", "m", "--max_steps", "3",
                                          "--max_prompt_length", "64"])
    built = dataclass_from_args(RLArgs, args)
    assert (built.max_prompt_length, built.judge, built.judge_weight) == (64, "", None)
    assert rest == ["--max_steps", "3"]  # TRL's, for parse_config
    with pytest.raises(SystemExit):
        parser.parse_args(["--model", "m"])


def test_trl_config_flags_start_from_our_defaults_and_fail_in_one_line() -> None:
    from trl import SFTConfig

    from trainers.common.args import ConfigError
    from trainers.common.flags import config_help, parse_config
    from trainers.world_model.sft import SFT_DEFAULTS

    defaults = {**SFT_DEFAULTS, "bf16": False}
    config = parse_config(SFTConfig, ["--max-steps", "7", "--learning_rate=0.5"], defaults)
    assert (config.max_steps, config.learning_rate, config.max_length) == (7, 0.5, 2048)
    # A default the flag's own parser could not read back ("non_padding" is not a boolean).
    assert config.include_num_input_tokens_seen == "non_padding"
    assert parse_config(SFTConfig, [], defaults).to_dict() == SFTConfig(**defaults).to_dict()
    for argv, message in ((["--learnig_rate", "1"], "did you mean --learning_rate"),
                          (["--max_steps", "x"], "invalid int value: 'x'"),
                          (["--bf16", "true"], "use_cpu")):
        with pytest.raises(ConfigError, match=message) as error:
            parse_config(SFTConfig, argv, defaults)
        assert "\n" not in str(error.value) and str(error.value).startswith("SFTConfig: ")
    listed = config_help(SFTConfig, defaults)
    assert "--learning_rate" in listed and "(default: 0.002)" in listed


def test_wm_sft_help_lists_trl_flags_and_other_commands_refuse_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["wm", "sft", "--help"])
    text = capsys.readouterr().out
    assert "--lora-rank" in text and "SFTConfig flags" in text and "--max_steps" in text
    assert main(["floor", "list", "--max_steps", "3"]) == 2
    assert "unrecognized arguments: --max_steps 3" in capsys.readouterr().err


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
    ids, labels = sft_example(tokenizer, last, SFTArgs(train="", all_turns=True), 10**6)
    learned = tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label >= 0])
    for _, observation in last.history():
        assert observation.split("\n", 1)[1].strip() in learned
    assert "**Environment Observation:**" not in learned
    assert learned.endswith(target_text(last, False) + "<|im_end|>")
    assert "### Turn" not in learned and last.system_str[:40] not in learned
    ids, labels = sft_example(tokenizer, last, SFTArgs(train="", all_turns=False), 10**6)
    assert tokenizer.decode([t for t, lab in zip(ids, labels, strict=True) if lab >= 0]) == \
        target_text(last, False) + "<|im_end|>"

