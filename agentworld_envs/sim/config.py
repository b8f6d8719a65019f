"""The settings of a simulated env: the keyword arguments of ``gym.make`` and ``gym.make_vec``.

Everything is plain data (names, dicts, numbers), so registered kwargs stay serialisable. Only
at the call site may ``backend`` or ``judge_backend`` be a live backend object.
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic

from agentworld_envs.backends import Backend, SamplingParams
from agentworld_envs.protocol.text_space import OBSERVATION_MAX_LENGTH
from agentworld_envs.sim.scenario import Control, DomainKey, Scenario

__all__ = ["DEFAULT_BACKEND", "SimConfig"]

DEFAULT_BACKEND = "scripted"
"""The default backend: deterministic placeholders, not a world model (see ``sim.scripted``)."""
WORLD_MODEL_SAMPLING = {"temperature": 0.6, "top_p": 0.95, "max_tokens": 8192}
JUDGE_SAMPLING = {"temperature": 0.0, "max_tokens": 2048}

BackendConfig = str | dict[str, Any] | Backend


class SimConfig(pydantic.BaseModel):
    """Settings shared by :class:`~agentworld_envs.sim.env.AgentWorldEnv` and the vector env.

    Attributes:
        domain: The domain key (``mcp``, ``search``, ``terminal``, ``swe``, ``android``, ``web``,
            ``os`` or ``floor``).
        backend: The world model: a backend name or config for ``make_backend`` (``openai``,
            ``hf``, ``vllm``, ``replay``, ``scripted``), or a live backend at the call site.
        sampling: World-model ``SamplingParams`` fields over the defaults (temperature 0.6,
            top_p 0.95, max_tokens 8192). The seed is always drawn from the env's ``np_random``.
        judge_backend: The rubric judge's backend; None uses the world model's.
        judge_sampling: Judge ``SamplingParams`` fields (defaults: temperature 0,
            max_tokens 2048).
        reward: Overrides the kind of every scenario's reward spec (``rule``, ``judge``,
            ``hybrid``).
        scenarios: ``builtin`` (the hand-written ones), ``generated`` (the domain's procedural
            generator, seeded from ``np_random``), or a list of scenario ids or dicts.
        controls: Control instructions added to every scenario's own.
        fictional: Forces fictional-world mode on or off; None follows each scenario.
        record_path: Records every model call to this JSONL request cache (and serves repeats
            from it), so a run can be replayed with ``{"name": "replay", "path": ...}``.
        timeout_s: Longest wait for one batched model call; None waits forever.
        max_observation_chars: World-model observations are cut to this length (flagged).
        max_action_chars: Longer actions are rejected as invalid without a model call.
        mode: ``simulated`` or ``hybrid``, for domains with a real counterpart (``floor``): in
            hybrid mode the agent sees the real observation when the prediction is unusable or
            when the action calls one of ``real_tools``.
        real_tools: Tools served by the real environment in hybrid mode.
        decided_tools: Tools whose outcome the real environment decides in every mode (the
            floor domain's ``submit_decision``): the agent sees the real answer, so acceptance
            never rests on the world model, which is not told the acceptance rule.
        reveal_reference: Put what only the evaluator should know into ``info``: the
            scenario's hidden fields in the reset info as ``info["reference"]`` (``solution``,
            ``reference_answer``, ``world``), the real observation of every step of a domain
            with a real counterpart as ``info["real_observation"]`` (without the flag it is
            there only when it is the observation the agent got), and the expected values in
            the labels of ``info["reward_breakdown"]``. Off by default: an agent must not be
            able to read the answer, or bypass the world model, through ``info``.
    """

    model_config = pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    domain: DomainKey
    backend: BackendConfig = DEFAULT_BACKEND
    sampling: dict[str, Any] = {}
    judge_backend: BackendConfig | None = None
    judge_sampling: dict[str, Any] = {}
    reward: Literal["rule", "judge", "hybrid"] | None = None
    scenarios: Literal["builtin", "generated"] | list[str | dict[str, Any] | Scenario] = "builtin"
    controls: list[Control] = []
    fictional: bool | None = None
    record_path: str | None = None
    timeout_s: float | None = pydantic.Field(600.0, gt=0)
    max_observation_chars: int = pydantic.Field(65536, ge=64, le=OBSERVATION_MAX_LENGTH // 2)
    max_action_chars: int = pydantic.Field(65536, ge=1)
    mode: Literal["simulated", "hybrid"] = "simulated"
    real_tools: list[str] = ["submit_decision"]
    decided_tools: list[str] = ["submit_decision"]
    reveal_reference: bool = False

    @pydantic.field_validator("sampling", "judge_sampling")
    @classmethod
    def _known_sampling_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = (set(value) - set(SamplingParams.__dataclass_fields__)) | ({"seed"} & set(value))
        if unknown:
            raise ValueError(f"unsupported sampling fields {sorted(unknown)} (the seed always "
                             "comes from the env's np_random)")
        return value

    def world_model_params(self) -> SamplingParams:
        """World-model sampling parameters, without a seed."""
        return _sampling({**WORLD_MODEL_SAMPLING, **self.sampling})

    def judge_params(self) -> SamplingParams:
        """Judge sampling parameters, without a seed."""
        return _sampling({**JUDGE_SAMPLING, **self.judge_sampling})


def _sampling(fields: dict[str, Any]) -> SamplingParams:
    if "stop" in fields:
        fields = {**fields, "stop": tuple(fields["stop"])}
    return SamplingParams(**fields)
