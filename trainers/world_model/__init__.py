"""World-model training: next-observation SFT and RL (GSPO/GRPO) with hybrid rewards.

Modules: :mod:`.examples` (bench items to training pairs), :mod:`.scratch` (a tokenizer and a
small Qwen2 built from scratch), :mod:`.sft`, :mod:`.rewards` (rule + rubric reward), :mod:`.rl`
and :mod:`.args` (dataclass args as CLI flags). torch and transformers load only inside the
functions that train.
"""
