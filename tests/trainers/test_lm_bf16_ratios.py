"""In bfloat16 a message's log-probs depend on the shape of the forward pass that scores it (the
rows beside it and their padding), so an update whose micro-batches differ from the scoring
pass's saw ratios far from 1 before any step: on SmolLM2-135M, sequence log-ratios of up to 0.59
at zero update, beyond PPO's clip of 0.2. An update with one minibatch now scores its messages in
the scoring pass's own micro-batches, whatever order its pass draws.

The shared tiny LM (hidden size 64) rounds alike in every shape; one of hidden size 128 shows
the effect, so these tests fail on the old code. ``python -m tests.bench.lm_bf16_ratios``
measures it on SmolLM2-135M."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from trainers import teamtr
from trainers.common.objectives import message_log_ratio
from trainers.common.team import build_team
from trainers.common.updates import UpdateSettings, accumulate, policy_update


@pytest.fixture(scope="module")
def wider_lm_dir(tiny_lm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny LM's tokenizer on a random model of hidden size 128."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(tiny_lm_dir)
    config.hidden_size, config.intermediate_size, config.initializer_range = 128, 256, 0.02
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config)
    folder = tmp_path_factory.mktemp("wider_lm")
    model.save_pretrained(folder)
    for path in tiny_lm_dir.iterdir():
        if path.name != "model.safetensors" and not (folder / path.name).exists():
            shutil.copy(path, folder / path.name)
    return folder


def _bf16_samples(model_dir: Path, score_batch_size: int):
    pytest.importorskip("peft")
    args = teamtr.Args(env_id="team_envs/arithmetic_chain-v0", n_agents=2, lora_rank=4,
                       model=str(model_dir), max_new_tokens=12, dtype="bfloat16",
                       score_batch_size=score_batch_size, prompts_per_rollout=6, group_size=2,
                       total_episodes=24, log_dir="")
    team = build_team(args)
    batch = team.collect(6, 2)
    return team.policies[1], team.optimizers[1], batch.samples[1]


def _log_ratios_seen(policy, samples, rows: np.ndarray) -> torch.Tensor:
    """The update's log-ratios at zero update, micro-batch by micro-batch, rows in pass order."""
    seen: list[torch.Tensor] = []

    def loss_of(part, _):
        logp = policy.token_logprobs(part)
        seen.append(message_log_ratio(logp, part.old_logp, part.mask).detach())
        return (logp * part.mask).sum() * 0.0, {}

    accumulate(policy, samples, rows, loss_of)
    return torch.cat(seen)


def test_micro_batched_ratios_are_exactly_one_at_zero_update_in_bfloat16(
        wider_lm_dir: Path) -> None:
    policy, _, samples = _bf16_samples(wider_lm_dir, score_batch_size=4)
    assert len(samples) == 12 and len({len(p) for p in samples.payload.prompt_ids}) > 1
    generator = torch.Generator().manual_seed(0)
    for _ in range(4):  # several pass orders, as an update's epochs draw them
        rows = torch.randperm(len(samples), generator=generator).numpy()
        assert torch.equal(_log_ratios_seen(policy, samples, rows), torch.zeros(len(rows)))


def test_a_bfloat16_update_measures_no_change_before_its_first_step(wider_lm_dir: Path) -> None:
    policy, optimizer, samples = _bf16_samples(wider_lm_dir, score_batch_size=4)
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    settings = UpdateSettings(epochs=3, minibatches=1, clip=0.2, max_grad_norm=1.0)
    advantages = torch.linspace(-1.0, 1.0, len(samples))
    losses = policy_update(policy, optimizer, samples, advantages, settings,
                           torch.Generator().manual_seed(1), beta=0.1)
    assert losses["clipfrac"] == 0.0 and losses["kl_loss"] == 0.0


def test_bfloat16_with_several_minibatches_warns_that_its_ratios_are_off() -> None:
    noisy = dict(model="smollm2", lora_rank=8, dtype="bfloat16", minibatches=2)
    with pytest.warns(UserWarning, match="minibatches > 1 in bfloat16"):
        teamtr.Args(**noisy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        teamtr.Args(**{**noisy, "minibatches": 1})
        teamtr.Args(**{**noisy, "dtype": "float32"})
