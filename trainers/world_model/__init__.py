"""World-model training on TRL: next-observation SFT and RL (GSPO/GRPO) with hybrid rewards.

Modules: :mod:`.examples` (bench items to training targets), :mod:`.scratch` (a tokenizer and a
small Qwen2 built from scratch), :mod:`.sft` (TRL ``SFTTrainer``), :mod:`.budget` (its step-or-
time schedule), :mod:`.rewards` (rule + rubric reward functions), :mod:`.rl` (TRL
``GRPOTrainer``) and :mod:`.cli` (``agentworld wm sft`` / ``rl``, flags from
:mod:`trainers.common.flags`). torch, transformers and TRL load only inside the functions
that train.
"""
