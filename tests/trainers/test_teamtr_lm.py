"""Causal-LM policies on text teams, with a tiny random LM: masking, sampling, and training."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pettingzoo
import pytest
import torch

from team_envs.core import SharedContextEnv, wrap
from team_envs.text.base import Problem, ReasoningTask
from tests.helpers.histories import untimed
from trainers import happo, joint, single_agent_grpo, stale_sequential, teamtr
from trainers.common.rollouts import TextRollouts
from trainers.policies.lm import CausalLMPolicy, TextMessages


class ShortAnswerTask(ReasoningTask):
    """A test task a random LM sometimes solves: the answer must be short."""

    family = "short_answer"

    def generate(self, rng: np.random.Generator) -> Problem:
        return Problem(f"Say something short about {int(rng.integers(100))}.",
                       ("",) * self.n_agents, None)

    def check(self, problem: Problem, answer: str) -> tuple[float, dict]:
        return float(len(answer) < 12), {}


class ShortAnswerEnv(SharedContextEnv):
    task_type = ShortAnswerTask


pettingzoo.register("aec", "tests/short_answer-v0", lambda **kw: wrap(ShortAnswerEnv(**kw)))


@pytest.fixture(scope="module")
def policies(tiny_lm_dir: Path) -> list[CausalLMPolicy]:
    return [CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=10, seed=i) for i in range(2)]


@pytest.fixture(scope="module")
def batch(policies: list[CausalLMPolicy]):
    rollouts = TextRollouts("team_envs/arithmetic_chain-v0", {"n_agents": 2})
    return rollouts, rollouts.collect(policies, 2, 2, np.random.default_rng(0),
                                      torch.Generator().manual_seed(0))


def test_log_probs_cover_only_the_agents_own_message_tokens(policies, batch) -> None:
    rollouts, batch = batch
    policy, samples = policies[1], batch.samples[1]
    messages = samples.payload
    assert samples.mask.sum(dim=1).tolist() == [len(r) for r in messages.response_ids]
    logp = policy.token_logprobs(samples)
    assert torch.equal(logp * (1 - samples.mask), torch.zeros_like(logp))
    assert messages.logprobs is not None  # the old log-probs are the sampling pass's own
    assert torch.allclose(logp, samples.old_logp, atol=1e-5)
    for row, (prompt, response) in enumerate(zip(messages.prompt_ids, messages.response_ids,
                                                 strict=True)):
        # The prompt holds agent_0's message of the same episode; it is not scored.
        episode = rollouts._envs[samples.episode[row]].unwrapped.episode
        said = episode.transcript[0]["content"]
        assert said.strip()[:5] in policy.tokenizer.decode(prompt)
        assert episode.transcript[1]["content"] == messages.texts[row]
        ids = torch.tensor([prompt + response])
        with torch.no_grad():
            logits = policy.module(input_ids=ids).logits[0, len(prompt) - 1:-1].float()
        direct = torch.log_softmax(logits, -1).gather(-1, ids[0, len(prompt):, None]).sum()
        assert float(logp[row].sum().detach()) == pytest.approx(float(direct), abs=1e-4)


def test_sampling_is_seeded(policies) -> None:
    import pettingzoo

    env = pettingzoo.make("aec", "team_envs/countdown-v0")
    env.reset(seed=1)
    observation = env.observe("agent_0")
    texts = [policies[0].generate([observation] * 3, torch.Generator().manual_seed(s)).texts
             for s in (4, 4, 5)]
    assert texts[0] == texts[1] and texts[0] != texts[2]


def test_teamtr_trains_a_tiny_lm_team_with_lora(tiny_lm_dir: Path) -> None:
    pytest.importorskip("peft")
    args = teamtr.Args(env_id="tests/short_answer-v0", n_agents=2,
                       model=str(tiny_lm_dir), lora_rank=4, max_new_tokens=4,
                       prompts_per_rollout=2, group_size=4, total_episodes=2 * 2 * 8,
                       eval_episodes=2, log_dir="", delta=1e3, learning_rate=1e-2,
                       update_epochs=2)
    team = teamtr.build_team(args)
    base = {n: p.detach().clone() for n, p in team.policies[0].module.named_parameters()}
    result = teamtr.train(args, team=team)
    record = result.history[1]
    assert team.collections == 4 and team.episodes == 32
    assert 0 < np.mean([r["charts/team_reward"] for r in result.history[1:3]]) < 1
    for agent in range(2):
        assert record[f"trust_region/agent_{agent}/accepted"] == 1.0
        assert record[f"trust_region/agent_{agent}/kl_q99"] > 0
    changed = {n for n, p in team.policies[0].module.named_parameters()
               if not torch.equal(p, base[n])}
    assert changed and all("lora_" in n for n in changed)


def test_single_agent_grpo_shares_one_lm(tiny_lm_dir: Path) -> None:
    args = single_agent_grpo.Args(env_id="team_envs/countdown-v0", n_agents=2,
                                  model=str(tiny_lm_dir), max_new_tokens=6,
                                  prompts_per_rollout=2, group_size=2, total_episodes=4,
                                  eval_episodes=2, log_dir="")
    result = single_agent_grpo.train(args)
    assert result.team.shared and result.team.collections == 1


def _route_to_the_answerer(policy: CausalLMPolicy) -> None:
    """Make ``policy`` (agent_0 of a router team) hand every message over to agent_2, the
    answerer, as a model may: agent_1 then writes nothing in the whole batch. The message's
    tokens are the policy's own vocabulary, so it is scored as any other."""
    sample = policy.generate
    handover = policy.tokenizer("NEXT: agent_2", add_special_tokens=False)["input_ids"]

    def generate(observations: list[dict], generator: torch.Generator,
                 greedy: bool = False) -> TextMessages:
        messages = sample(observations, generator, greedy)
        return TextMessages(messages.prompt_ids, [handover] * len(observations),
                            [policy.tokenizer.decode(handover)] * len(observations),
                            messages.source)

    policy.generate = generate


@pytest.mark.parametrize("trainer", [teamtr, stale_sequential, joint, happo])
def test_an_agent_without_a_message_breaks_no_monitor(trainer, tiny_lm_dir: Path) -> None:
    """The router crash: scoring an agent with no message took max() of an empty list, from
    measure_kl (trust region, joint and HAPPO monitors) and TeamTR's stale-gap probe."""
    extra = {"gain_eval_episodes": 2} if trainer is teamtr else {}
    args = trainer.Args(env_id="team_envs/countdown-v0", n_agents=3,
                        env_kwargs={"handoff": "router"}, model=str(tiny_lm_dir),
                        max_new_tokens=4, prompts_per_rollout=2, group_size=2,
                        total_episodes=16, eval_episodes=2, log_dir="", **extra)
    team = trainer.build_team(args)
    _route_to_the_answerer(team.policies[0])
    result = trainer.train(args, team=team)
    record = next(r for r in result.history if "charts/team_reward" in r)
    silent = [key for key in record if "/agent_1/" in key]
    assert silent and not any(key.startswith("losses/agent_1/") for key in silent)
    assert all(np.isfinite(v) for v in record.values() if isinstance(v, float))


def test_greedy_messages_ignore_the_generator_and_take_the_top_token(policies) -> None:
    env = pettingzoo.make("aec", "team_envs/countdown-v0")
    env.reset(seed=2)
    observation = env.observe("agent_0")
    policy = policies[0]
    first, second = (policy.generate([observation] * 2, torch.Generator().manual_seed(s),
                                     greedy=True) for s in (1, 2))
    assert first.response_ids == second.response_ids and len(set(map(tuple,
                                                                     first.response_ids))) == 1
    prompt = torch.tensor([policy.encode_prompt(observation)])
    with torch.no_grad():
        top = int(policy.module(input_ids=prompt).logits[0, -1].argmax())
    assert first.response_ids[0][0] == top


def test_a_reasoning_team_is_evaluated_greedy_and_pass_at_k_on_held_out_items(
        tiny_lm_dir: Path) -> None:
    pytest.importorskip("reasoning_gym")
    args = teamtr.Args(env_id="team_envs/reasoning-v0", n_agents=2,
                       env_kwargs={"task": "basic_arithmetic", "held_out": 3},
                       model=str(tiny_lm_dir), max_new_tokens=4, prompts_per_rollout=2,
                       group_size=2, total_episodes=8, eval_episodes=2, pass_k=2, log_dir="")
    result = teamtr.train(args)
    stage = result.history[1]
    assert stage["charts/tokens_per_s"] > 0 and stage["time/scoring_s"] > 0
    assert "[agent_0" in stage["transcript"] and "Calculate" in stage["transcript"]
    keys = {"held_out/greedy_reward", "held_out/greedy_solved", "held_out/sampled_reward",
            "held_out/pass@2"}
    assert set(result.held_out) == keys and keys <= set(result.history[0])
    assert keys <= set(result.history[-1])
    assert all(0.0 <= value <= 1.0 for value in result.held_out.values())
    # the sampled pass just played: 3 held-out items, 2 samples each, nothing else
    played = [env.unwrapped.episode.problem.details for env in result.team.rollouts._envs[:6]]
    assert [(d["split"], d["index"]) for d in played] == [("test", i) for i in (0, 0, 1, 1, 2, 2)]


def test_lora_checkpoints_are_peft_adapters_and_an_lm_team_resumes(tiny_lm_dir: Path,
                                                                   tmp_path: Path) -> None:
    peft = pytest.importorskip("peft")
    import dataclasses

    from transformers import AutoModelForCausalLM


    def args(directory: str, **changes) -> teamtr.Args:
        return teamtr.Args(env_id="tests/short_answer-v0", n_agents=2, model=str(tiny_lm_dir),
                           lora_rank=4, max_new_tokens=4, prompts_per_rollout=2, group_size=2,
                           total_episodes=3 * 2 * 4, eval_episodes=2, log_dir="", delta=1e3,
                           learning_rate=1e-2, checkpoint_dir=directory, **changes)

    full = teamtr.train(args(str(tmp_path / "full")))

    def interrupt(stage: int, team, record: dict) -> None:
        if stage == 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        teamtr.train(args(str(tmp_path / "cut")), on_stage_end=interrupt)
    resumed = teamtr.train(dataclasses.replace(args(str(tmp_path / "cut")), resume=True))
    assert untimed(resumed.history) == untimed(full.history)
    stage_dir = next((tmp_path / "full").glob("stage_*"))
    for agent, policy in enumerate(full.team.policies):
        folder = stage_dir / f"agent_{agent}"
        assert (folder / "adapter_config.json").is_file()
        assert "params" not in torch.load(stage_dir / f"agent_{agent}.pt", weights_only=False)
        loaded = peft.PeftModel.from_pretrained(
            AutoModelForCausalLM.from_pretrained(str(tiny_lm_dir)), str(folder))
        ids = torch.tensor([[1, 2, 3, 4]])
        policy.activate()  # the agents share one base; each forward picks its adapter
        with torch.no_grad():
            assert torch.allclose(loaded(input_ids=ids).logits,
                                  policy.module(input_ids=ids).logits, atol=1e-5)
        mine = {n: p for n, p in policy.module.named_parameters() if "lora_" in n}
        again = dict(resumed.team.policies[agent].module.named_parameters())
        assert mine and all(torch.equal(p, again[n]) for n, p in mine.items())


@pytest.mark.parametrize(("env_id", "threads", "expected"), [
    ("team_envs/relay-v0", None, 1),  # symbolic: one thread, fastest for small MLPs
    ("tests/short_answer-v0", None, 2),      # a language-model team keeps every core
    ("tests/short_answer-v0", 1, 1),         # an explicit count wins
])
def test_torch_threads_default_to_every_core_for_a_language_model_team(
        tiny_lm_dir: Path, env_id: str, threads: int | None, expected: int) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        model = {} if env_id.startswith("team_envs/") else {"model": str(tiny_lm_dir)}
        teamtr.build_team(teamtr.Args(env_id=env_id, n_agents=2, log_dir="",
                                      torch_threads=threads, **model))
        assert torch.get_num_threads() == expected
    finally:
        torch.set_num_threads(before)


def test_evaluation_plays_without_scoring_old_log_probs(tiny_lm_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Evaluation needs rewards alone: it ran a scoring pass over every message (in float32
    for every greedy message, in bfloat16 for all), and counted it in the trainer's scoring time."""
    pytest.importorskip("reasoning_gym")
    from trainers.common.team import build_team

    args = teamtr.Args(env_id="team_envs/reasoning-v0", n_agents=2,
                       env_kwargs={"task": "basic_arithmetic", "held_out": 3},
                       model=str(tiny_lm_dir), max_new_tokens=4, prompts_per_rollout=2,
                       group_size=2, total_episodes=8, log_dir="")
    team = build_team(args)
    scored: list[int] = []
    token_logprobs = CausalLMPolicy.token_logprobs
    monkeypatch.setattr(CausalLMPolicy, "token_logprobs",
                        lambda self, samples: scored.append(1) or token_logprobs(self, samples))
    assert team.evaluate_held_out(2, seed=0) and 0 <= team.evaluate(2, seed=0) <= 1
    assert not scored
    team.sample(2, 2, seed=0, greedy=True)  # a probe's rollout is scored
    assert scored
