"""CausalLMPolicy on a tiny random LM: batched generate (seeding, stop strings, token and context
budgets, the scored distribution), micro-batched scoring, bf16 and gradient checkpointing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pettingzoo
import pytest
import torch

from trainers import teamtr
from trainers.common.args import ConfigError
from trainers.common.batch import Samples
from trainers.common.objectives import message_kl
from trainers.common.rollouts import TextRollouts
from trainers.common.updates import UpdateSettings, policy_update
from trainers.policies.lm import CausalLMPolicy, fit_context

pytest.importorskip("transformers")


def _observation(seed: int = 1) -> dict:
    env = pettingzoo.make("aec", "team_envs/countdown-v0")
    env.reset(seed=seed)
    return env.observe("agent_0")


def _samples(policy: CausalLMPolicy, observations: list[dict], seed: int) -> Samples:
    messages = policy.generate(observations, torch.Generator().manual_seed(seed))
    mask = policy.response_mask(messages)
    samples = Samples(0, np.arange(len(messages)), messages, mask, torch.zeros_like(mask))
    with torch.no_grad():
        samples.old_logp = policy.token_logprobs(samples)
    return samples


def test_the_same_seed_gives_the_same_messages_and_leaves_the_global_rng_alone(
        tiny_lm_dir: Path) -> None:
    policy = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=12, top_p=0.9, top_k=50)
    observations = [_observation(s) for s in (1, 2, 3)]
    state = torch.random.get_rng_state()
    first, again, other = (policy.generate(observations, torch.Generator().manual_seed(s))
                           for s in (7, 7, 8))
    assert torch.equal(torch.random.get_rng_state(), state)
    assert first.response_ids == again.response_ids and first.texts == again.texts
    assert first.response_ids != other.response_ids
    assert all(1 <= len(r) <= 12 for r in first.response_ids)


def test_scoring_uses_the_distribution_the_sampler_drew_from(tiny_lm_dir: Path) -> None:
    """Without top-k/top-p, generate's processed scores (temperature applied) give exactly the
    log-probs that scoring returns, left padding and positions included."""
    policy = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=6, temperature=0.7)
    observations = [_observation(s) for s in (1, 5)]  # prompts of different lengths
    prompts = [policy.encode_prompt(o) for o in observations]
    assert len(set(map(len, prompts))) == 2
    width = max(map(len, prompts))
    ids, attention = policy._padded([(p, ()) for p in prompts], width, width)
    torch.manual_seed(0)
    with torch.no_grad():
        out = policy.module.generate(input_ids=ids, attention_mask=attention,
                                     generation_config=policy._generation_config(False),
                                     output_scores=True, return_dict_in_generate=True)
    tokens = out.sequences[:, width:]
    sampled = torch.stack([torch.log_softmax(s.float(), -1) for s in out.scores], 1)
    sampled = sampled.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    eos = policy.tokenizer.eos_token_id
    responses = [row[:next((i + 1 for i, t in enumerate(row) if t == eos), len(row))]
                 for row in tokens.tolist()]
    messages = type(policy.generate([observations[0]], torch.Generator()))(
        prompts, responses, [""] * 2, policy.source)
    mask = policy.response_mask(messages)
    with torch.no_grad():
        scored = policy.token_logprobs(Samples(0, np.arange(2), messages, mask, mask))
    assert torch.allclose(scored, sampled[:, :mask.shape[1]] * mask, atol=1e-4)


def test_a_stop_string_cuts_the_message_after_the_token_that_completes_it(
        tiny_lm_dir: Path) -> None:
    free = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=16)
    observations = [_observation(s) for s in (1, 2)]
    full = free.generate(observations, torch.Generator().manual_seed(3))
    text = full.texts[0]
    stop = text[len(text) // 2:len(text) // 2 + 2]
    assert len(text) > 6 and stop.strip()
    stopped = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=16, stop=[stop]).generate(
        observations, torch.Generator().manual_seed(3))
    decode = free.tokenizer.decode
    for row in range(2):
        ids, whole = stopped.response_ids[row], full.response_ids[row]
        assert ids == whole[:len(ids)]  # the same draw, cut
        if stop in full.texts[row]:
            assert stop in decode(ids, skip_special_tokens=True)
            assert stop not in decode(ids[:-1], skip_special_tokens=True)
            assert stopped.texts[row] == full.texts[row].split(stop, 1)[0]
        else:
            assert stopped.texts[row] == full.texts[row]


def test_a_stop_string_begun_in_the_prompt_does_not_end_the_message(tiny_lm_dir: Path) -> None:
    """A stop string made of the prompt's last character and a message's first is not in the
    message: the message runs on as if there were no stop string (transformers' own
    ``stop_strings`` ended it there, padded to the batch's longest)."""
    free = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=8)
    observations = [_observation(s) for s in (1, 2, 3, 4)]
    full = free.generate(observations, torch.Generator().manual_seed(3))
    end = free.tokenizer.decode(free.encode_prompt(observations[0]))[-1]
    stop = next(end + text[0] for text in full.texts if text and end + text[0] not in text)
    stopped = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=8, stop=[stop]).generate(
        observations, torch.Generator().manual_seed(3))
    kept = [row for row, text in enumerate(full.texts) if stop not in text]
    assert any(full.texts[row].startswith(stop[1:]) for row in kept)
    for row in kept:
        assert stopped.response_ids[row] == full.response_ids[row]
        assert stopped.logprobs[row] == pytest.approx(full.logprobs[row], abs=1e-5)


def _model_copy(tiny_lm_dir: Path, folder: Path, file: str, **changes) -> Path:
    """A copy of the tiny model with ``changes`` made to one of its JSON files."""
    import json
    import shutil

    shutil.copytree(tiny_lm_dir, folder)
    settings = json.loads((folder / file).read_text())
    (folder / file).write_text(json.dumps({**settings, **changes}))
    return folder


def test_the_models_generation_defaults_do_not_change_the_draw_but_its_end_tokens_end_it(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    """A ``repetition_penalty`` in the model's generation defaults would draw from another
    distribution than the one scored; an end token named only there still ends a message."""
    observation = _observation()
    plain = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=16)
    greedy = plain.generate([observation], torch.Generator(), greedy=True).response_ids[0]
    assert len(set(greedy)) < len(greedy)  # a repeated token, which a penalty would change
    penalised = _model_copy(tiny_lm_dir, tmp_path / "penalised", "generation_config.json",
                            repetition_penalty=1e6)
    policy = CausalLMPolicy(str(penalised), max_new_tokens=16)
    assert policy.generate([observation], torch.Generator(), greedy=True).response_ids == [greedy]
    sampled = [p.generate([observation], torch.Generator().manual_seed(1)).response_ids
               for p in (plain, policy)]
    assert sampled[0] == sampled[1]
    end = next(i for i, token in enumerate(greedy) if i and token not in greedy[:i])
    ended = _model_copy(tiny_lm_dir, tmp_path / "ended", "generation_config.json",
                        eos_token_id=[plain.tokenizer.eos_token_id, greedy[end]])
    policy = CausalLMPolicy(str(ended), max_new_tokens=16)
    assert policy.generate([observation], torch.Generator(), greedy=True).response_ids == [
        greedy[:end + 1]]


def test_a_policy_has_no_dropout_when_checkpointing_scores_in_training_mode(
        tiny_lm_dir: Path, tmp_path: Path) -> None:
    noisy = _model_copy(tiny_lm_dir, tmp_path / "dropout", "config.json", attention_dropout=0.5)
    policy = CausalLMPolicy(str(noisy), max_new_tokens=6, gradient_checkpointing=True)
    samples = _samples(policy, [_observation(s) for s in (1, 2)], seed=0)
    with torch.enable_grad():
        trained = [policy.token_logprobs(samples).detach() for _ in range(2)]
    assert torch.allclose(trained[0], samples.old_logp, atol=1e-5)
    assert torch.allclose(trained[1], samples.old_logp, atol=1e-5)
    assert not policy.module.training


def test_the_context_budget_cuts_the_prompt_in_the_middle(tiny_lm_dir: Path) -> None:
    assert fit_context(list(range(10)), 4) == [0, 1, 8, 9]
    assert fit_context(list(range(10)), 5) == [0, 1, 7, 8, 9]
    assert fit_context([1, 2], 5) == [1, 2]
    whole = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=8)
    cut = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=8, context_tokens=48)
    observation = _observation()
    full, short = whole.encode_prompt(observation), cut.encode_prompt(observation)
    assert len(full) > 40 and len(short) == 40
    assert short[:20] == full[:20] and short[20:] == full[-20:]
    messages = cut.generate([observation], torch.Generator().manual_seed(0))
    assert len(messages.prompt_ids[0]) + len(messages.response_ids[0]) <= 48
    with pytest.raises(ValueError, match="context_tokens"):
        CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=8, context_tokens=8)


def _gradients(policy: CausalLMPolicy, samples: Samples) -> list[torch.Tensor]:
    """The gradient of one PPO step (learning rate 0, so nothing moves)."""
    params = policy.trainable_parameters()
    optimizer = torch.optim.SGD(params, lr=0.0)
    advantages = torch.linspace(-1.0, 1.0, len(samples))
    policy_update(policy, optimizer, samples, advantages, UpdateSettings(1, 1, 0.2, 1e9),
                  torch.Generator().manual_seed(0), beta=0.5)
    return [p.grad.clone() for p in params]


def test_micro_batched_scoring_and_accumulation_match_one_batch(tiny_lm_dir: Path) -> None:
    pytest.importorskip("peft")
    policy = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, max_new_tokens=8)
    with torch.no_grad():  # LoRA B starts at 0: move it so that every weight gets a gradient
        for p in policy.trainable_parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    samples = _samples(policy, [_observation(s) for s in range(1, 6)], seed=2)
    samples.old_logp = samples.old_logp - 0.05 * samples.mask  # a ratio away from 1
    grads = {}
    for size in (0, 1, 2):
        policy.score_batch_size = size
        with torch.no_grad():
            logp = policy.token_logprobs(samples)
        assert torch.allclose(logp, samples.old_logp + 0.05 * samples.mask, atol=1e-5)
        grads[size] = _gradients(policy, samples)
    for size in (1, 2):
        assert all(torch.allclose(a, b, atol=1e-4, rtol=1e-4)
                   for a, b in zip(grads[0], grads[size], strict=True))
    assert any(float(g.abs().max()) > 0 for g in grads[0])


def test_gradient_checkpointing_gives_the_same_gradient(tiny_lm_dir: Path) -> None:
    pytest.importorskip("peft")
    plain, checkpointed = (CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, max_new_tokens=8,
                                          gradient_checkpointing=flag) for flag in (False, True))
    with torch.no_grad():
        for a, b in zip(plain.trainable_parameters(), checkpointed.trainable_parameters(),
                        strict=True):
            a.add_(0.05 * torch.randn(a.shape, generator=torch.Generator().manual_seed(1)))
            b.copy_(a)
    samples = _samples(plain, [_observation(s) for s in (1, 2, 3)], seed=4)
    samples.old_logp = samples.old_logp - 0.05 * samples.mask
    saved, grads = {}, {}
    for name, policy in (("plain", plain), ("checkpointed", checkpointed)):
        count = saved.setdefault(name, [0])

        def pack(tensor: torch.Tensor, count: list[int] = count) -> torch.Tensor:
            count[0] += 1
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            grads[name] = _gradients(policy, samples)
    assert all(torch.allclose(a, b, atol=1e-4, rtol=1e-4) for a, b in zip(
        grads["plain"], grads["checkpointed"], strict=True))
    # the checkpointed layers keep their inputs only, not their activations
    assert saved["checkpointed"][0] < saved["plain"][0] / 2
    assert not checkpointed.module.training


def test_a_bfloat16_lora_team_trains_a_stage(tiny_lm_dir: Path) -> None:
    pytest.importorskip("peft")
    args = teamtr.Args(env_id="team_envs/countdown-v0", n_agents=2, model=str(tiny_lm_dir),
                       lora_rank=4, dtype="bfloat16", max_new_tokens=4, score_batch_size=2,
                       prompts_per_rollout=2, group_size=2, total_episodes=8, eval_episodes=2,
                       log_dir="", delta=1e3)
    result = teamtr.train(args)
    weights = dict(result.team.policies[0].module.named_parameters())
    assert {p.dtype for n, p in weights.items() if "lora_" not in n} == {torch.bfloat16}
    # peft keeps the adapters in float32 on a bf16 base, for stable updates
    assert {p.dtype for n, p in weights.items() if "lora_" in n} == {torch.float32}
    record = result.history[1]
    assert all(np.isfinite(v) for v in record.values() if isinstance(v, float))
    assert result.team.collections == 2


def test_bfloat16_rollouts_take_the_old_log_probs_from_a_scoring_pass(tiny_lm_dir: Path) -> None:
    """In bf16 the cached sampling pass rounds otherwise than a scoring pass, so its log-probs
    would start every update off its own old policy; float32 keeps the sampling pass's."""
    pytest.importorskip("peft")
    for dtype in ("float32", "bfloat16"):
        policy = CausalLMPolicy(str(tiny_lm_dir), lora_rank=4, dtype=dtype, max_new_tokens=16,
                                score_batch_size=2)
        messages = policy.generate([_observation(s) for s in (1, 2, 3)],
                                   torch.Generator().manual_seed(0))
        assert (messages.logprobs is None) == (dtype == "bfloat16")
        batch = TextRollouts("team_envs/countdown-v0", {"n_agents": 2}).collect(
            [policy, policy], 2, 2, np.random.default_rng(0), torch.Generator().manual_seed(0))
        for samples in batch.samples:
            with torch.no_grad():
                new = policy.token_logprobs(samples)
            assert float(message_kl(new, samples.old_logp, samples.mask).max()) < 1e-6


def test_an_update_reports_the_losses_of_its_last_pass(tiny_lm_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """5 messages in 4 minibatches are 3 chunks (torch's ``chunk``): the statistics are the
    last epoch's 3, not 4 reaching back into the epoch before."""
    import trainers.common.updates as updates

    policy = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=4)
    samples = _samples(policy, [_observation(s) for s in range(1, 6)], seed=0)
    chunks = iter(range(100))
    monkeypatch.setattr(updates, "accumulate", lambda *_: {"loss": float(next(chunks))})
    losses = policy_update(policy, torch.optim.SGD(policy.module.parameters(), lr=0.0), samples,
                           torch.ones(5), UpdateSettings(2, 4, 0.2, 1.0),
                           torch.Generator().manual_seed(0))
    assert next(chunks) == 6 and losses == {"loss": 4.0}  # chunks 3, 4, 5 of 0..5


def test_a_team_update_reports_the_losses_of_its_last_pass(tiny_lm_dir: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for every agent's update at once: 6 episodes in 4 minibatches, 2 epochs."""
    import trainers.common.updates as updates

    policy = CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=4)
    batch = TextRollouts("team_envs/countdown-v0", {"n_agents": 2}).collect(
        [policy, policy], 3, 2, np.random.default_rng(0), torch.Generator().manual_seed(0))
    assert batch.episodes == 6
    chunks = iter(range(100))
    monkeypatch.setattr(updates, "accumulate", lambda *_: {"policy_loss": float(next(chunks))})
    optimizer = torch.optim.SGD(policy.module.parameters(), lr=0.0)
    losses = updates.simultaneous_update([policy, policy], [optimizer, optimizer], batch, 1.0, 1,
                                         UpdateSettings(2, 4, 0.2, 1.0),
                                         torch.Generator().manual_seed(0))
    # 6 episodes in 4 minibatches are 3 chunks of 2; each sums its 2 agents' losses
    assert next(chunks) == 12
    assert losses == {"policy_loss": np.mean([6 + 7, 8 + 9, 10 + 11])}


def test_bfloat16_weights_train_only_as_lora_adapters(tiny_lm_dir: Path) -> None:
    settings = dict(env_id="team_envs/countdown-v0", model=str(tiny_lm_dir), dtype="bfloat16")
    with pytest.raises(ConfigError, match="dtype: bfloat16 weights train only as LoRA"):
        teamtr.Args(**settings)
    assert teamtr.Args(**settings, lora_rank=4).dtype == "bfloat16"


def test_text_rollouts_score_in_micro_batches_like_one_batch(tiny_lm_dir: Path) -> None:
    policies = [CausalLMPolicy(str(tiny_lm_dir), max_new_tokens=6, score_batch_size=size)
                for size in (0, 1)]
    batches = [TextRollouts("team_envs/countdown-v0", {"n_agents": 2}).collect(
        [p, p], 2, 2, np.random.default_rng(0), torch.Generator().manual_seed(0))
        for p in policies]
    for one, many in zip(batches[0].samples, batches[1].samples, strict=True):
        assert one.payload.response_ids == many.payload.response_ids
        assert torch.allclose(one.old_logp, many.old_logp, atol=1e-5)
